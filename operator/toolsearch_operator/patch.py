"""The JSON Patch (RFC 6902) that the admission webhook returns for a pod (pure functions)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolsearch_operator.annotations import STATUS, AnnotationError, injection_requested, sidecar_spec
from toolsearch_operator.sidecar import CONTAINER_NAME, SidecarSpec, init_containers, proxy_container, volumes

JSONPatch = list[dict[str, Any]]


def has_proxy(pod: Mapping[str, Any]) -> bool:
    """True when the pod already runs the proxy, injected by us or written into its template."""
    spec = pod.get("spec") or {}
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    return any(container.get("name") == CONTAINER_NAME for container in containers)


def injection_patch(pod: Mapping[str, Any], defaults: Mapping[str, str]) -> JSONPatch:
    """The operations that add the proxy to `pod`; none when it did not opt in or already has it.

    `defaults` are the operator's `toolsearch.dev/*` values, overridden by the pod's annotations.
    Raises `AnnotationError` when the pod asks for something the proxy cannot run with.
    """
    metadata = pod.get("metadata") or {}
    if not injection_requested(metadata) or has_proxy(pod):
        return []
    sidecar = sidecar_spec(metadata.get("annotations") or {}, defaults)
    pod_spec = pod.get("spec") or {}
    _check_no_clash(pod_spec, sidecar)
    return [
        *_append("/spec/initContainers", pod_spec.get("initContainers"), init_containers(sidecar)),
        *_append("/spec/containers", pod_spec.get("containers"), [proxy_container(sidecar)]),
        *_append("/spec/volumes", pod_spec.get("volumes"), volumes(sidecar)),
        _annotate(metadata, STATUS, "injected"),
    ]


def _check_no_clash(pod_spec: Mapping[str, Any], sidecar: SidecarSpec) -> None:
    for container in pod_spec.get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("containerPort") == sidecar.port:
                raise AnnotationError(
                    f"toolsearch.dev/port: container {container.get('name')!r} already uses port "
                    f"{sidecar.port}; choose a free port for the proxy"
                )
    taken = {volume.get("name") for volume in pod_spec.get("volumes") or []}
    for volume in volumes(sidecar):
        if volume["name"] in taken:
            raise AnnotationError(
                f"the pod already has a volume named {volume['name']!r}, which the proxy needs; rename it"
            )


def _append(path: str, existing: Sequence[Any] | None, items: Iterable[Mapping[str, Any]]) -> JSONPatch:
    values = list(items)
    if not values:
        return []
    if existing is None:
        return [{"op": "add", "path": path, "value": values}]
    return [{"op": "add", "path": f"{path}/-", "value": value} for value in values]


def _annotate(metadata: Mapping[str, Any], key: str, value: str) -> dict[str, Any]:
    if metadata.get("annotations") is None:
        return {"op": "add", "path": "/metadata/annotations", "value": {key: value}}
    escaped = key.replace("~", "~0").replace("/", "~1")
    return {"op": "add", "path": f"/metadata/annotations/{escaped}", "value": value}
