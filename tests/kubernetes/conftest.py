"""Fixtures of the Kubernetes tests: the chart, and the operator running under `kopf run`.

The operator runs as a real `kopf run` subprocess against kmock's Kubernetes emulator on 127.0.0.1;
its admission webhook listens on another loopback port with the certificate it made itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from typing import Any

import helm_python as helm
import kmock
import pytest
from k8s_helpers import (
    AGENTGATEWAY_PARAMETERS,
    CHART,
    MUTATING_WEBHOOKS,
    SIDECAR_DEFAULTS,
    WEBHOOK_CONFIGURATION,
    RunningOperator,
    eventually,
    operator_environment,
)


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


@pytest.fixture(scope="module")
async def operator(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningOperator]:
    directory = tmp_path_factory.mktemp("operator")
    async with kmock.KubernetesEmulator() as cluster, kmock.Server(cluster):
        cluster.resources.load_bundled()
        cluster.resources[AGENTGATEWAY_PARAMETERS] = {
            "namespaced": True,
            "kind": "AgentgatewayParameters",
            "singular": "agentgatewayparameters",
            "verbs": {"get", "list", "watch", "create", "patch", "update", "delete"},
        }
        cluster.objects[MUTATING_WEBHOOKS, None, WEBHOOK_CONFIGURATION] = _webhook_configuration()
        kubeconfig = directory / "kubeconfig"
        kubeconfig.write_text(_kubeconfig(str(cluster.url)))
        port = _free_port()
        environment = operator_environment(
            KUBECONFIG=str(kubeconfig),
            TOOLSEARCH_OPERATOR_WEBHOOK_ADDRESS="127.0.0.1",
            TOOLSEARCH_OPERATOR_WEBHOOK_PORT=str(port),
            TOOLSEARCH_OPERATOR_WEBHOOK_HOSTNAMES="127.0.0.1",
            TOOLSEARCH_OPERATOR_WEBHOOK_CONFIGURATION=WEBHOOK_CONFIGURATION,
            TOOLSEARCH_OPERATOR_CERT_DIR=str(directory / "tls"),
            TOOLSEARCH_OPERATOR_SIDECAR_DEFAULTS=json.dumps(SIDECAR_DEFAULTS),
        )
        log = directory / "operator.log"
        command = ["-m", "kopf", "run", "--standalone", "--all-namespaces", "--verbose"]
        with log.open("wb") as output:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                *command,
                "-m",
                "toolsearch_operator.handlers",
                env=environment,
                stdout=output,
                stderr=asyncio.subprocess.STDOUT,
            )
            running = RunningOperator(cluster=cluster, webhook_url=f"https://127.0.0.1:{port}", log=log)
            try:
                await eventually(lambda: running.ca_bundle() is not None, "publishing the CA bundle", running)
                await _until_listening(port, running)
                yield running
            finally:
                await _stop(process)


def _webhook_configuration() -> dict[str, Any]:
    service = {"name": "toolsearch-webhook", "namespace": "toolsearch", "path": "/inject-sidecar"}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_CONFIGURATION, "uid": "uid-webhooks", "resourceVersion": "1"},
        "webhooks": [{"name": "sidecar.toolsearch.dev", "clientConfig": {"service": service}}],
    }


def _kubeconfig(server: str) -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: v1
        kind: Config
        current-context: kmock
        clusters: [{{name: kmock, cluster: {{server: "{server}"}}}}]
        users: [{{name: kmock, user: {{}}}}]
        contexts: [{{name: kmock, context: {{cluster: kmock, user: kmock}}}}]
        """
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _until_listening(port: int, operator: RunningOperator) -> None:
    async def connects() -> bool:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return False
        writer.close()
        await writer.wait_closed()
        return True

    for _ in range(300):
        if await connects():
            return
        await asyncio.sleep(0.1)
    pytest.fail(f"the admission webhook never listened; operator log:\n{operator.log.read_text()[-4000:]}")


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    process.terminate()
    try:
        await asyncio.wait_for(process.wait(), timeout=30)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
