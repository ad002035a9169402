"""The operator under `kopf run` against kmock's Kubernetes emulator: real watches, patches and webhook calls.

The admission webhook is kopf's own server on 127.0.0.1, reached over TLS that is verified with the CA
bundle the operator published into the (emulated) webhook configuration, as the API server would.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import sys
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import jsonpatch
from k8s_helpers import (
    AGENTGATEWAY_PARAMETERS,
    KUBERNETES_VERSIONS,
    SIDECAR_DEFAULTS,
    RunningOperator,
    eventually,
    gateway_pod,
    operator_environment,
    validate,
)

from toolsearch_operator.handlers import INJECT_WEBHOOK

OPT_IN = {"toolsearch.dev/inject": "true"}


async def review(operator: RunningOperator, pod: dict[str, Any]) -> dict[str, Any]:
    """POST an AdmissionReview for creating `pod`, as the API server does, and return its response."""
    request = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": pod["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": pod,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }
    trust = ssl.create_default_context(cadata=operator.ca_pem())
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{operator.webhook_url}/{INJECT_WEBHOOK}", json=request, ssl=trust) as answer,
    ):
        assert answer.status == 200
        body = await answer.json()
    assert body["response"]["uid"] == request["request"]["uid"]
    return body["response"]


def patched(pod: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    assert response["patchType"] == "JSONPatch"
    return jsonpatch.apply_patch(pod, json.loads(base64.b64decode(response["patch"])))


async def test_the_operator_publishes_its_certificate_as_the_webhook_ca_bundle(
    operator: RunningOperator,
) -> None:
    configuration = operator.webhook_configuration()

    assert operator.ca_pem().startswith("-----BEGIN CERTIFICATE-----")
    assert configuration["webhooks"][0]["clientConfig"]["service"]["name"] == "toolsearch-webhook"


async def test_an_opted_in_pod_is_answered_with_the_patch_that_injects_the_proxy(
    operator: RunningOperator,
) -> None:
    pod = gateway_pod(OPT_IN)

    response = await review(operator, pod)

    assert response["allowed"] is True
    injected = patched(pod, response)
    proxy = next(
        container for container in injected["spec"]["containers"] if container["name"] == "toolsearch"
    )
    assert proxy["image"] == SIDECAR_DEFAULTS["toolsearch.dev/image"]
    assert {"name": "TOOLSEARCH_UPSTREAM", "value": "http://127.0.0.1:80/mcp"} in proxy["env"]
    validate(injected, KUBERNETES_VERSIONS)


async def test_an_opted_out_pod_is_allowed_unchanged(operator: RunningOperator) -> None:
    response = await review(operator, gateway_pod({"toolsearch.dev/inject": "false"}))

    assert response["allowed"] is True
    assert "patch" not in response


async def test_a_pod_that_already_runs_the_proxy_is_allowed_unchanged(operator: RunningOperator) -> None:
    pod = gateway_pod(OPT_IN)
    injected = patched(pod, await review(operator, pod))

    response = await review(operator, injected)

    assert response["allowed"] is True
    assert "patch" not in response


async def test_an_unusable_annotation_is_refused_with_the_reason(operator: RunningOperator) -> None:
    response = await review(operator, gateway_pod({**OPT_IN, "toolsearch.dev/upstream-port": "eighty"}))

    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert "toolsearch.dev/upstream-port" in response["status"]["message"]


async def test_an_annotated_agentgateway_parameters_gets_the_proxy_overlay(operator: RunningOperator) -> None:
    await create_parameters(operator, "annotated", annotations=OPT_IN)

    def overlaid() -> bool:
        return (
            "deployment"
            in operator.cluster.objects[AGENTGATEWAY_PARAMETERS, "gateways", "annotated"].raw["spec"]
        )

    await eventually(overlaid, "writing the overlay", operator)
    spec = operator.cluster.objects[AGENTGATEWAY_PARAMETERS, "gateways", "annotated"].raw["spec"]
    assert spec["logging"] == {"format": "json"}
    (proxy,) = spec["deployment"]["spec"]["template"]["spec"]["containers"]
    assert proxy["name"] == "toolsearch"
    assert spec["service"]["spec"]["ports"] == [{"port": 80, "targetPort": 8090}]


async def test_an_agentgateway_parameters_without_the_annotation_is_left_alone(
    operator: RunningOperator,
) -> None:
    await create_parameters(operator, "plain", annotations={})
    await create_parameters(operator, "marker", annotations=OPT_IN)

    # Both arrive on one watch stream in order: once the later one is handled, the earlier one was seen.
    def marker_overlaid() -> bool:
        return (
            "deployment"
            in operator.cluster.objects[AGENTGATEWAY_PARAMETERS, "gateways", "marker"].raw["spec"]
        )

    await eventually(marker_overlaid, "writing the overlay", operator)
    assert operator.cluster.objects[AGENTGATEWAY_PARAMETERS, "gateways", "plain"].raw["spec"] == {
        "logging": {"format": "json"}
    }


async def create_parameters(operator: RunningOperator, name: str, annotations: dict[str, str]) -> None:
    body = {
        "apiVersion": "agentgateway.dev/v1alpha1",
        "kind": "AgentgatewayParameters",
        "metadata": {"name": name, "namespace": "gateways", "uid": f"uid-{name}", "annotations": annotations},
        "spec": {"logging": {"format": "json"}},
    }
    url = f"{operator.cluster.url}/apis/agentgateway.dev/v1alpha1/namespaces/gateways/agentgatewayparameters"
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as answer:
        assert answer.status in (200, 201)


async def test_the_operator_refuses_to_start_with_unusable_sidecar_defaults(tmp_path: Path) -> None:
    environment = operator_environment(
        TOOLSEARCH_OPERATOR_CERT_DIR=str(tmp_path / "tls"),
        TOOLSEARCH_OPERATOR_SIDECAR_DEFAULTS=json.dumps({**SIDECAR_DEFAULTS, "toolsearch.dev/port": "http"}),
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "kopf", "run", "--standalone", "--all-namespaces", "-m", "toolsearch_operator.handlers"),
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

    assert process.returncode != 0
    assert "sidecar defaults are unusable: toolsearch.dev/port" in output.decode()
