"""The webhook's JSON Patch: computed by the pure `injection_patch`, applied as the API server does."""

from __future__ import annotations

from typing import Any

import jsonpatch
import pytest
from k8s_helpers import IMAGE_VOLUME_VERSIONS, KUBERNETES_VERSIONS, gateway_pod, validate

from toolsearch_operator.annotations import AnnotationError
from toolsearch_operator.patch import has_proxy, injection_patch

DEFAULTS = {"toolsearch.dev/image": "registry.example/toolsearch:1.0"}
OPT_IN = {"toolsearch.dev/inject": "true"}


def injected(pod: dict[str, Any], defaults: dict[str, str] = DEFAULTS) -> dict[str, Any]:
    return jsonpatch.apply_patch(pod, injection_patch(pod, defaults))


def proxy_of(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == "toolsearch")


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {entry["name"]: entry.get("value", entry.get("valueFrom")) for entry in container["env"]}


def test_an_opted_in_pod_gets_the_proxy_next_to_the_gateway() -> None:
    pod = injected(gateway_pod(OPT_IN))

    assert [c["name"] for c in pod["spec"]["containers"]] == ["agentgateway", "toolsearch"]
    assert pod["metadata"]["annotations"]["toolsearch.dev/status"] == "injected"


def test_the_proxy_calls_the_gateway_on_loopback_and_listens_on_all_interfaces() -> None:
    env = env_of(proxy_of(injected(gateway_pod(OPT_IN))))

    assert env["TOOLSEARCH_UPSTREAM"] == "http://127.0.0.1:80/mcp"
    assert env["TOOLSEARCH_HOST"] == "0.0.0.0"
    assert env["TOOLSEARCH_PORT"] == "8090"
    assert env["TOOLSEARCH_MODEL_DIR"] == "/models/default"


def test_the_proxy_is_probed_on_healthz_and_readyz() -> None:
    proxy = proxy_of(injected(gateway_pod(OPT_IN)))

    assert proxy["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert proxy["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert proxy["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert proxy["ports"] == [{"name": "toolsearch", "containerPort": 8090, "protocol": "TCP"}]


def test_the_proxy_runs_with_a_restricted_security_context() -> None:
    context = proxy_of(injected(gateway_pod(OPT_IN)))["securityContext"]

    assert context["runAsNonRoot"] is True
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}


@pytest.mark.parametrize(
    ("annotations", "versions"),
    [
        ({}, KUBERNETES_VERSIONS),
        ({"toolsearch.dev/redis-secret": "cache:url", "toolsearch.dev/cpu-limit": "1"}, KUBERNETES_VERSIONS),
        (
            {"toolsearch.dev/model": "init-container", "toolsearch.dev/model-image": "registry.example/e5:1"},
            KUBERNETES_VERSIONS,
        ),
        (
            {"toolsearch.dev/model": "image-volume", "toolsearch.dev/model-image": "registry.example/e5:1"},
            IMAGE_VOLUME_VERSIONS,
        ),
    ],
    ids=["builtin-model", "redis-secret", "init-container-model", "image-volume-model"],
)
def test_the_patched_pod_is_valid_kubernetes(annotations: dict[str, str], versions: tuple[str, ...]) -> None:
    validate(injected(gateway_pod({**OPT_IN, **annotations})), versions)


def test_a_pod_that_did_not_opt_in_is_left_alone() -> None:
    assert injection_patch(gateway_pod(), DEFAULTS) == []


def test_a_pod_that_opted_out_is_left_alone() -> None:
    assert injection_patch(gateway_pod({"toolsearch.dev/inject": "false"}), DEFAULTS) == []


def test_injection_is_idempotent() -> None:
    pod = injected(gateway_pod(OPT_IN))

    assert has_proxy(pod)
    assert injection_patch(pod, DEFAULTS) == []


def test_a_label_opts_in_and_the_missing_annotations_map_is_created() -> None:
    pod = injected(gateway_pod(labels=OPT_IN))

    assert pod["metadata"]["annotations"] == {"toolsearch.dev/status": "injected"}
    assert proxy_of(pod)


def test_volumes_are_appended_to_the_pods_own() -> None:
    pod = gateway_pod(OPT_IN)
    pod["spec"]["volumes"] = [{"name": "config", "configMap": {"name": "agentgateway"}}]

    names = [volume["name"] for volume in injected(pod)["spec"]["volumes"]]

    assert names == ["config", "toolsearch-tmp"]


def test_a_redis_secret_becomes_a_secret_key_reference() -> None:
    pod = injected(gateway_pod({**OPT_IN, "toolsearch.dev/redis-secret": "gateway-cache:url"}))

    reference = env_of(proxy_of(pod))["TOOLSEARCH_REDIS_URL"]

    assert reference == {"secretKeyRef": {"name": "gateway-cache", "key": "url"}}


def test_an_init_container_copies_the_model_into_a_shared_volume() -> None:
    annotations = {
        **OPT_IN,
        "toolsearch.dev/model": "init-container",
        "toolsearch.dev/model-image": "registry.example/e5:1",
    }
    pod = injected(gateway_pod(annotations))

    (copier,) = pod["spec"]["initContainers"]
    assert copier["image"] == "registry.example/e5:1"
    assert copier["command"] == ["cp", "-R", "/models/default/.", "/var/lib/toolsearch/model"]
    assert env_of(proxy_of(pod))["TOOLSEARCH_MODEL_DIR"] == "/var/lib/toolsearch/model"
    assert {"name": "toolsearch-model", "emptyDir": {}} in pod["spec"]["volumes"]


def test_an_image_volume_mounts_the_model_image_read_only() -> None:
    annotations = {
        **OPT_IN,
        "toolsearch.dev/model": "image-volume",
        "toolsearch.dev/model-image": "registry.example/e5:1",
    }
    pod = injected(gateway_pod(annotations))

    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "toolsearch-model")
    assert volume["image"]["reference"] == "registry.example/e5:1"
    assert env_of(proxy_of(pod))["TOOLSEARCH_MODEL_DIR"] == "/var/lib/toolsearch/model/models/default"
    mount = next(m for m in proxy_of(pod)["volumeMounts"] if m["name"] == "toolsearch-model")
    assert mount["readOnly"] is True


def test_a_proxy_port_the_gateway_already_uses_is_refused() -> None:
    with pytest.raises(AnnotationError, match="already uses port 15020"):
        injection_patch(gateway_pod({**OPT_IN, "toolsearch.dev/port": "15020"}), DEFAULTS)


def test_a_volume_name_the_proxy_needs_is_refused_when_taken() -> None:
    pod = gateway_pod(OPT_IN)
    pod["spec"]["volumes"] = [{"name": "toolsearch-tmp", "emptyDir": {}}]

    with pytest.raises(AnnotationError, match="toolsearch-tmp"):
        injection_patch(pod, DEFAULTS)
