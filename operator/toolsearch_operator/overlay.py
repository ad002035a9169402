"""The `AgentgatewayParameters` overlay for gateways managed by agentgateway's controller (pure functions).

That controller applies its Deployments with forced server-side apply, so patching them would fight it.
Its documented extension point is the overlay in `AgentgatewayParameters`: a strategic-merge patch over
the generated workload and Service. The operator writes the proxy's container there and points the
Service port of the gateway's listener at the proxy, keeping whatever else the overlay holds.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from toolsearch_operator.annotations import sidecar_spec
from toolsearch_operator.sidecar import init_containers, proxy_container, volumes


def parameters_patch(parameters: Mapping[str, Any], defaults: Mapping[str, str]) -> dict[str, Any]:
    """The merge patch that brings `parameters`' overlay up to date; empty when it already is.

    The proxy is configured by the object's own `toolsearch.dev/*` annotations over `defaults`;
    raises `AnnotationError` when they are unusable.
    """
    annotations = (parameters.get("metadata") or {}).get("annotations") or {}
    sidecar = sidecar_spec(annotations, defaults)
    current = parameters.get("spec") or {}
    workload_kind = (current.get("workload") or {}).get("kind") or "Deployment"
    workload_key = "daemonSet" if workload_kind == "DaemonSet" else "deployment"

    workload = copy.deepcopy(current.get(workload_key) or {})
    pod = workload.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})
    pod["containers"] = _upsert(pod.get("containers"), [proxy_container(sidecar)], key="name")
    if init := init_containers(sidecar):
        pod["initContainers"] = _upsert(pod.get("initContainers"), init, key="name")
    pod["volumes"] = _upsert(pod.get("volumes"), volumes(sidecar), key="name")

    # Service ports merge on `port`: the listener's port keeps its number and now targets the proxy.
    service = copy.deepcopy(current.get("service") or {})
    service_spec = service.setdefault("spec", {})
    redirect = {"port": sidecar.upstream_port, "targetPort": sidecar.port}
    service_spec["ports"] = _upsert(service_spec.get("ports"), [redirect], key="port")

    wanted = {workload_key: workload, "service": service}
    if all(current.get(name) == value for name, value in wanted.items()):
        return {}
    return {"spec": wanted}


def _upsert(
    existing: Sequence[Mapping[str, Any]] | None, items: Sequence[Mapping[str, Any]], *, key: str
) -> list[dict[str, Any]]:
    """`existing` with each of `items` replacing the entry of the same `key`, or appended."""
    merged = [dict(entry) for entry in existing or []]
    for item in items:
        position = next((i for i, entry in enumerate(merged) if entry.get(key) == item[key]), None)
        if position is None:
            merged.append(dict(item))
        else:
            merged[position] = {**merged[position], **item}
    return merged
