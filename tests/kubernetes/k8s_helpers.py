"""Helpers of the Kubernetes tests: schema validation, merge patches, sample pods, the running operator."""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kmock
import kubernetes_validate
import pytest

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "toolsearch"

# The oldest Kubernetes the chart declares (kubeVersion >=1.29) and the newest schemas bundled with
# kubernetes-validate.
KUBERNETES_VERSIONS = ("1.29.0", "1.37.0")
# Image volumes appear in the API in 1.31 (feature-gated; beta since 1.33).
IMAGE_VOLUME_VERSIONS = ("1.33.0", "1.37.0")

WEBHOOK_CONFIGURATION = "toolsearch-test"
MUTATING_WEBHOOKS = "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
AGENTGATEWAY_PARAMETERS = "agentgateway.dev/v1alpha1/agentgatewayparameters"
SIDECAR_DEFAULTS = {"toolsearch.dev/image": "toolsearch:test"}


def validate(manifest: Mapping[str, Any], versions: tuple[str, ...] = KUBERNETES_VERSIONS) -> None:
    """Fail unless `manifest` validates strictly (no unknown fields) against every version's schema."""
    for version in versions:
        try:
            kubernetes_validate.validate(dict(manifest), version, strict=True)
        except kubernetes_validate.ValidationError as error:
            where = ".".join(str(part) for part in error.path)
            kind, name = manifest.get("kind"), manifest.get("metadata", {}).get("name")
            pytest.fail(f"{kind}/{name} is invalid for Kubernetes {version} at {where}: {error.message}")


def operator_environment(**variables: str) -> dict[str, str]:
    """This process's environment plus `variables`, with the operator package importable."""
    path = [str(REPO / "operator"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(part for part in path if part), **variables}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the API server applies kopf's patches."""
    if not isinstance(patch, Mapping):
        return patch
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def gateway_pod(
    annotations: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A pod like the ones agentgateway's controller makes: one `agentgateway` container."""
    metadata: dict[str, Any] = {"name": "agentgateway-proxy-7d9f", "namespace": "gateways"}
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    if labels is not None:
        metadata["labels"] = dict(labels)
    container = {
        "name": "agentgateway",
        "image": "cr.agentgateway.dev/agentgateway:v1.4.1",
        "args": ["-f", "/config/config.yaml"],
        "ports": [{"name": "metrics", "containerPort": 15020, "protocol": "TCP"}],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"containers": [container]}}


@dataclass
class RunningOperator:
    cluster: kmock.KubernetesEmulator
    webhook_url: str
    log: Path

    def webhook_configuration(self) -> Mapping[str, Any]:
        return self.cluster.objects[MUTATING_WEBHOOKS, None, WEBHOOK_CONFIGURATION].raw

    def ca_bundle(self) -> str | None:
        webhooks = self.webhook_configuration().get("webhooks") or [{}]
        return (webhooks[0].get("clientConfig") or {}).get("caBundle")

    def ca_pem(self) -> str:
        bundle = self.ca_bundle()
        assert bundle, "the operator has not published its CA bundle"
        return base64.b64decode(bundle).decode("ascii")


async def eventually(condition: Callable[[], bool], what: str, operator: RunningOperator) -> None:
    """Wait until `condition()` holds (the operator reacts asynchronously); fail after a generous bound."""
    for _ in range(300):
        if condition():
            return
        await asyncio.sleep(0.1)
    pytest.fail(f"{what} did not happen; operator log:\n{operator.log.read_text()[-4000:]}")
