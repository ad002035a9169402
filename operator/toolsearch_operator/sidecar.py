"""The proxy's container, init container and volumes, built from a `SidecarSpec` (pure functions).

The same pieces go into a pod by the admission webhook (`patch`) and into an agentgateway Deployment
overlay (`overlay`), so both paths run an identical proxy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

CONTAINER_NAME = "toolsearch"
PORT_NAME = "toolsearch"
MODEL_VOLUME = "toolsearch-model"
TMP_VOLUME = "toolsearch-tmp"
MODEL_MOUNT = "/var/lib/toolsearch/model"

ModelKind = Literal["builtin", "image-volume", "init-container"]


@dataclass(frozen=True)
class ModelSource:
    """Where the embedding model comes from.

    `builtin`: baked into the proxy image at `path`. `image-volume`: a Kubernetes image volume of
    `image`, holding the model at `path`. `init-container`: `image` copies `path` into a shared
    emptyDir before the proxy starts.
    """

    kind: ModelKind
    path: str
    image: str = ""


@dataclass(frozen=True)
class RedisSource:
    """The shared catalog cache: a plain URL, or a key of a Secret in the pod's namespace."""

    url: str = ""
    secret_name: str = ""
    secret_key: str = ""


@dataclass(frozen=True)
class SidecarSpec:
    image: str
    image_pull_policy: str
    port: int
    upstream_port: int
    upstream_path: str
    requests: Mapping[str, str] = field(default_factory=dict)
    limits: Mapping[str, str] = field(default_factory=dict)
    redis: RedisSource | None = None
    model: ModelSource = ModelSource(kind="builtin", path="/models/default")

    @property
    def upstream_url(self) -> str:
        """The gateway's MCP route, reached over the pod's loopback interface."""
        return f"http://127.0.0.1:{self.upstream_port}{self.upstream_path}"


# Restricted Pod Security Standard: the image runs as a non-root user and writes only to /tmp.
_SECURITY_CONTEXT: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def proxy_container(spec: SidecarSpec) -> dict[str, Any]:
    """The `toolsearch serve` container, configured through `TOOLSEARCH_*` variables."""
    env: list[dict[str, Any]] = [
        {"name": "TOOLSEARCH_UPSTREAM", "value": spec.upstream_url},
        {"name": "TOOLSEARCH_HOST", "value": "0.0.0.0"},
        {"name": "TOOLSEARCH_PORT", "value": str(spec.port)},
        {"name": "TOOLSEARCH_LOG_FORMAT", "value": "json"},
        {"name": "TOOLSEARCH_MODEL_DIR", "value": _model_dir(spec.model)},
    ]
    if spec.redis is not None:
        env.append(_redis_env(spec.redis))
    mounts: list[dict[str, Any]] = [{"name": TMP_VOLUME, "mountPath": "/tmp"}]
    if spec.model.kind != "builtin":
        mounts.append({"name": MODEL_VOLUME, "mountPath": MODEL_MOUNT, "readOnly": True})
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        "ports": [{"name": PORT_NAME, "containerPort": spec.port, "protocol": "TCP"}],
        "env": env,
        # Loading the model can take a while on a cold node; liveness waits for the first success.
        "startupProbe": _probe("/healthz", period=2, failures=90),
        "livenessProbe": _probe("/healthz", period=10, failures=3),
        "readinessProbe": _probe("/readyz", period=5, failures=3),
        "securityContext": dict(_SECURITY_CONTEXT),
        "volumeMounts": mounts,
    }
    resources = _resources(spec)
    if resources:
        container["resources"] = resources
    return container


def init_containers(spec: SidecarSpec) -> list[dict[str, Any]]:
    """The container that copies the model into the shared volume (init-container models only)."""
    if spec.model.kind != "init-container":
        return []
    return [
        {
            "name": f"{CONTAINER_NAME}-model",
            "image": spec.model.image,
            "imagePullPolicy": spec.image_pull_policy,
            "command": ["cp", "-R", f"{spec.model.path.rstrip('/')}/.", MODEL_MOUNT],
            "securityContext": dict(_SECURITY_CONTEXT),
            "volumeMounts": [{"name": MODEL_VOLUME, "mountPath": MODEL_MOUNT}],
        }
    ]


def volumes(spec: SidecarSpec) -> list[dict[str, Any]]:
    """The proxy's scratch space and, unless the model is in its image, the model volume."""
    scratch: list[dict[str, Any]] = [{"name": TMP_VOLUME, "emptyDir": {"sizeLimit": "64Mi"}}]
    if spec.model.kind == "image-volume":
        image = {"reference": spec.model.image, "pullPolicy": spec.image_pull_policy}
        return [*scratch, {"name": MODEL_VOLUME, "image": image}]
    if spec.model.kind == "init-container":
        return [*scratch, {"name": MODEL_VOLUME, "emptyDir": {}}]
    return scratch


def _model_dir(model: ModelSource) -> str:
    if model.kind == "builtin":
        return model.path
    if model.kind == "image-volume":
        # An image volume shows the whole image filesystem; the model sits at its path inside.
        return MODEL_MOUNT + model.path.rstrip("/")
    return MODEL_MOUNT


def _redis_env(redis: RedisSource) -> dict[str, Any]:
    if redis.secret_name:
        reference = {"name": redis.secret_name, "key": redis.secret_key}
        return {"name": "TOOLSEARCH_REDIS_URL", "valueFrom": {"secretKeyRef": reference}}
    return {"name": "TOOLSEARCH_REDIS_URL", "value": redis.url}


def _probe(path: str, *, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": PORT_NAME},
        "periodSeconds": period,
        "timeoutSeconds": 3,
        "failureThreshold": failures,
    }


def _resources(spec: SidecarSpec) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if spec.requests:
        resources["requests"] = dict(spec.requests)
    if spec.limits:
        resources["limits"] = dict(spec.limits)
    return resources
