"""The `toolsearch.dev/*` annotations: which pods get the proxy and how it is configured.

The operator's own defaults (set by the Helm chart) use the same keys as the annotations, so one
parser validates both and every error names the annotation to fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar, get_args

from toolsearch_operator.sidecar import ModelKind, ModelSource, RedisSource, SidecarSpec

PREFIX = "toolsearch.dev/"
INJECT = PREFIX + "inject"
STATUS = PREFIX + "status"
IMAGE = PREFIX + "image"
IMAGE_PULL_POLICY = PREFIX + "image-pull-policy"
PORT = PREFIX + "port"
UPSTREAM_PORT = PREFIX + "upstream-port"
UPSTREAM_PATH = PREFIX + "upstream-path"
CPU = PREFIX + "cpu"
MEMORY = PREFIX + "memory"
CPU_LIMIT = PREFIX + "cpu-limit"
MEMORY_LIMIT = PREFIX + "memory-limit"
REDIS_URL = PREFIX + "redis-url"
REDIS_SECRET = PREFIX + "redis-secret"
MODEL = PREFIX + "model"
MODEL_IMAGE = PREFIX + "model-image"
MODEL_PATH = PREFIX + "model-path"

# agentgateway's Gateway listeners conventionally take port 80 and its MCP routes `/mcp`; the proxy
# itself listens where `toolsearch serve` does by default.
BUILTIN_DEFAULTS: Mapping[str, str] = {
    PORT: "8090",
    UPSTREAM_PORT: "80",
    UPSTREAM_PATH: "/mcp",
    IMAGE_PULL_POLICY: "IfNotPresent",
    CPU: "100m",
    MEMORY: "512Mi",
    MEMORY_LIMIT: "1Gi",
    MODEL: "builtin",
    MODEL_PATH: "/models/default",
}

_REDIS_KEYS = (REDIS_URL, REDIS_SECRET)
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_MODEL_KINDS: tuple[ModelKind, ...] = get_args(ModelKind)
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(\d+(\.\d*)?|\.\d+)))?$")
_SECRET_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_REDIS_SCHEMES = (
    "redis://",
    "rediss://",
    "unix://",
    "redis+sentinel://",
    "rediss+sentinel://",
    "redis+cluster://",
    "rediss+cluster://",
)


class AnnotationError(ValueError):
    """An annotation (or an operator default of the same name) holds a value the proxy cannot use."""


def injection_requested(metadata: Mapping[str, Any]) -> bool:
    """True when the object opted in with `toolsearch.dev/inject: "true"`.

    The annotation decides; a label of the same name counts when there is no annotation, so that
    webhook object selectors (which match labels only) can send just the opted-in pods.
    """
    annotations = metadata.get("annotations") or {}
    labels = metadata.get("labels") or {}
    value = annotations.get(INJECT, labels.get(INJECT, ""))
    return str(value).strip().lower() == "true"


def sidecar_spec(annotations: Mapping[str, str], defaults: Mapping[str, str]) -> SidecarSpec:
    """The proxy an object asks for: its `toolsearch.dev/*` annotations over the operator's defaults.

    Raises `AnnotationError` naming the first annotation whose value is unusable.
    """
    own = {key: str(value) for key, value in annotations.items() if key.startswith(PREFIX)}
    inherited = dict(defaults)
    if any(key in own for key in _REDIS_KEYS):
        # A pod that names its own Redis replaces the default one, whichever way either is given.
        for key in _REDIS_KEYS:
            inherited.pop(key, None)
    values = {**BUILTIN_DEFAULTS, **inherited, **own}

    port = _port(values, PORT)
    upstream_port = _port(values, UPSTREAM_PORT)
    if port == upstream_port:
        raise AnnotationError(
            f"{PORT} and {UPSTREAM_PORT} are both {port}: the proxy would call itself; "
            f"give the proxy a port the gateway does not listen on"
        )
    return SidecarSpec(
        image=_image(values, IMAGE, "the proxy image; set it or the chart's sidecar.image"),
        image_pull_policy=_choice(values, IMAGE_PULL_POLICY, _PULL_POLICIES),
        port=port,
        upstream_port=upstream_port,
        upstream_path=_path(values, UPSTREAM_PATH),
        requests=_quantities(values, {"cpu": CPU, "memory": MEMORY}),
        limits=_quantities(values, {"cpu": CPU_LIMIT, "memory": MEMORY_LIMIT}),
        redis=_redis(values),
        model=_model(values),
    )


def _port(values: Mapping[str, str], key: str) -> int:
    text = values[key].strip()
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise AnnotationError(f"{key}: expected a port number from 1 to 65535, got {values[key]!r}")
    return int(text)


def _image(values: Mapping[str, str], key: str, what: str) -> str:
    image = values.get(key, "").strip()
    if not image:
        raise AnnotationError(f"{key}: missing {what}")
    if any(character.isspace() for character in image):
        raise AnnotationError(f"{key}: an image reference has no spaces, got {image!r}")
    return image


_Choice = TypeVar("_Choice", bound=str)


def _choice(values: Mapping[str, str], key: str, allowed: tuple[_Choice, ...]) -> _Choice:
    value = values[key].strip()
    for choice in allowed:
        if choice == value:
            return choice
    raise AnnotationError(f"{key}: expected one of {', '.join(allowed)}, got {value!r}")


def _path(values: Mapping[str, str], key: str) -> str:
    path = values[key].strip()
    if not path.startswith("/") or any(character.isspace() for character in path):
        raise AnnotationError(f"{key}: expected an absolute path such as /mcp, got {values[key]!r}")
    return path


def _quantities(values: Mapping[str, str], keys: Mapping[str, str]) -> dict[str, str]:
    quantities: dict[str, str] = {}
    for resource, key in keys.items():
        quantity = values.get(key, "").strip()
        if not quantity:
            continue
        if not _QUANTITY.match(quantity):
            raise AnnotationError(
                f"{key}: expected a Kubernetes quantity such as 250m or 512Mi, got {quantity!r}"
            )
        quantities[resource] = quantity
    return quantities


def _redis(values: Mapping[str, str]) -> RedisSource | None:
    secret = values.get(REDIS_SECRET, "").strip()
    if secret:
        name, _, key = secret.partition(":")
        key = key or "redis-url"
        if not _SECRET_NAME.match(name) or not _SECRET_KEY.match(key):
            raise AnnotationError(
                f"{REDIS_SECRET}: expected <secret name> or <secret name>:<key> of a Secret in the "
                f"pod's namespace, got {secret!r}"
            )
        return RedisSource(secret_name=name, secret_key=key)
    url = values.get(REDIS_URL, "").strip()
    if not url:
        return None
    if not url.startswith(_REDIS_SCHEMES):
        raise AnnotationError(
            f"{REDIS_URL}: expected a redis://, rediss://, unix://, redis+sentinel:// or redis+cluster:// "
            "URL (rediss+ for TLS), got a "
            f"{url.split(':', 1)[0]!r} URL"
        )
    return RedisSource(url=url)


def _model(values: Mapping[str, str]) -> ModelSource:
    kind = _choice(values, MODEL, _MODEL_KINDS)
    path = _path(values, MODEL_PATH)
    if kind == "builtin":
        return ModelSource(kind=kind, path=path)
    image = _image(values, MODEL_IMAGE, f"the image that holds the model (required by {MODEL}: {kind})")
    return ModelSource(kind=kind, path=path, image=image)
