"""The `AgentgatewayParameters` overlay for gateways managed by agentgateway's controller."""

from __future__ import annotations

from typing import Any

from k8s_helpers import KUBERNETES_VERSIONS, merge_patch, validate

from toolsearch_operator.overlay import parameters_patch

DEFAULTS = {"toolsearch.dev/image": "registry.example/toolsearch:1.0"}


def parameters(spec: dict[str, Any] | None = None, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "agentgateway.dev/v1alpha1",
        "kind": "AgentgatewayParameters",
        "metadata": {
            "name": "agentgateway-proxy",
            "namespace": "gateways",
            "annotations": {"toolsearch.dev/inject": "true", **annotations},
        },
        "spec": spec or {},
    }


def test_the_overlay_adds_the_proxy_container_to_the_deployment() -> None:
    overlay = parameters_patch(parameters(), DEFAULTS)["spec"]

    pod = overlay["deployment"]["spec"]["template"]["spec"]
    assert [container["name"] for container in pod["containers"]] == ["toolsearch"]
    assert [volume["name"] for volume in pod["volumes"]] == ["toolsearch-tmp"]


def test_the_overlay_points_the_listeners_service_port_at_the_proxy() -> None:
    overlay = parameters_patch(parameters(**{"toolsearch.dev/upstream-port": "3030"}), DEFAULTS)["spec"]

    assert overlay["service"]["spec"]["ports"] == [{"port": 3030, "targetPort": 8090}]


def test_the_overlay_keeps_what_the_user_wrote_there() -> None:
    own = {
        "logging": {"format": "json"},
        "deployment": {"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "debug"}]}}}},
        "service": {"spec": {"ports": [{"port": 443, "targetPort": 8443}]}},
    }
    updated = merge_patch(parameters(own), parameters_patch(parameters(own), DEFAULTS))["spec"]

    assert updated["logging"] == {"format": "json"}
    assert updated["deployment"]["spec"]["replicas"] == 3
    containers = updated["deployment"]["spec"]["template"]["spec"]["containers"]
    assert [container["name"] for container in containers] == ["debug", "toolsearch"]
    assert updated["service"]["spec"]["ports"] == [
        {"port": 443, "targetPort": 8443},
        {"port": 80, "targetPort": 8090},
    ]


def test_an_up_to_date_overlay_needs_no_patch() -> None:
    once = merge_patch(parameters(), parameters_patch(parameters(), DEFAULTS))

    assert parameters_patch(once, DEFAULTS) == {}


def test_a_changed_annotation_updates_the_proxy_in_place() -> None:
    once = merge_patch(parameters(), parameters_patch(parameters(), DEFAULTS))
    once["metadata"]["annotations"]["toolsearch.dev/image"] = "registry.example/toolsearch:2.0"

    twice = merge_patch(once, parameters_patch(once, DEFAULTS))

    (proxy,) = twice["spec"]["deployment"]["spec"]["template"]["spec"]["containers"]
    assert proxy["image"] == "registry.example/toolsearch:2.0"


def test_a_daemonset_workload_gets_the_daemonset_overlay() -> None:
    overlay = parameters_patch(parameters({"workload": {"kind": "DaemonSet"}}), DEFAULTS)["spec"]

    assert "deployment" not in overlay
    assert overlay["daemonSet"]["spec"]["template"]["spec"]["containers"][0]["name"] == "toolsearch"


def test_the_overlayed_pod_template_is_valid_kubernetes() -> None:
    annotations = {
        "toolsearch.dev/model": "init-container",
        "toolsearch.dev/model-image": "registry.example/e5:1",
    }
    overlay = parameters_patch(parameters(**annotations), DEFAULTS)["spec"]["deployment"]["spec"]
    template = overlay["template"]
    template["spec"]["containers"].insert(
        0, {"name": "agentgateway", "image": "cr.agentgateway.dev/agentgateway"}
    )
    labels = {"app.kubernetes.io/name": "agentgateway-proxy"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "agentgateway-proxy", "namespace": "gateways"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, **template},
        },
    }

    validate(deployment, KUBERNETES_VERSIONS)
