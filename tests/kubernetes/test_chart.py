"""The Helm chart: linted and rendered by Helm v4 (helm-python-sdk), each manifest checked by schema."""

from __future__ import annotations

import json
from typing import Any

import helm_python as helm
import pytest
import yaml
from k8s_helpers import CHART, KUBERNETES_VERSIONS, validate

from toolsearch_operator.annotations import sidecar_spec
from toolsearch_operator.handlers import INJECT_WEBHOOK

RELEASE, NAMESPACE = "ts", "toolsearch-system"

VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "standalone with autoscaling, disruption budget and in-chart redis": {
        "standalone": {
            "enabled": True,
            "upstream": "http://agentgateway-proxy.agentgateway-system.svc/mcp",
            "autoscaling": {"enabled": True},
            "podDisruptionBudget": {"enabled": True},
            "extraEnv": [{"name": "TOOLSEARCH_CATALOG_TTL", "value": "300"}],
        },
        "redis": {"internal": {"enabled": True}},
    },
    "cert-manager with two operator replicas and a cluster issuer": {
        "operator": {"replicas": 2},
        "webhook": {
            "tls": {
                "mode": "certManager",
                "certManager": {"issuerRef": {"name": "ca", "kind": "ClusterIssuer"}},
            }
        },
    },
    "cert-manager with its own self-signed issuer": {"webhook": {"tls": {"mode": "certManager"}}},
    "standalone only, redis url from a secret": {
        "operator": {"enabled": False},
        "standalone": {"enabled": True, "upstream": "http://gateway:3000/mcp", "replicas": 1},
        "redis": {"existingSecret": {"name": "toolsearch-redis", "key": "url"}},
    },
    "label-only selectors and an init-container model": {
        "webhook": {
            "namespaceSelector": {"matchLabels": {"toolsearch.dev/injection": "enabled"}},
            "objectSelector": {"matchLabels": {"toolsearch.dev/inject": "true"}},
        },
        "sidecar": {"model": {"source": "init-container", "image": "registry.example/e5:1"}, "port": 9000},
        "redis": {"url": "redis://cache.shared.svc:6379/0"},
        "image": {"repository": "registry.example/toolsearch", "tag": "1.2.3"},
    },
    "standalone with monitoring: dashboard, service monitor and alerts": {
        "standalone": {"enabled": True, "upstream": "http://gateway:3000/mcp"},
        "monitoring": {
            "dashboard": {"enabled": True, "annotations": {"grafana_folder": "toolsearch"}},
            "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
            "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        },
    },
}


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML that refuses duplicate keys, which the API server would drop with a warning."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(key, deep=deep) for key, _ in node.value]
        duplicates = {key for key in keys if keys.count(key) > 1}
        if duplicates:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate keys {duplicates}", node.start_mark
            )
        return super().construct_mapping(node, deep=deep)


# cert-manager's and the Prometheus Operator's kinds are CRDs: kubernetes-validate ships schemas for
# built-in kinds only (test_chart_monitoring checks the monitoring ones).
CRD_KINDS = {
    ("cert-manager.io/v1", "Certificate"),
    ("cert-manager.io/v1", "Issuer"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
}


def render(chart: helm.Chart, values: dict[str, Any]) -> list[dict[str, Any]]:
    chart.validate_schema(values)
    manifests = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return [
        document
        for path, text in sorted(manifests.items())
        if path.endswith(".yaml")
        for document in yaml.load_all(text, Loader=_UniqueKeyLoader)
        if document
    ]


def one(documents: list[dict[str, Any]], kind: str, component: str | None = None) -> dict[str, Any]:
    (found,) = [
        document
        for document in documents
        if document["kind"] == kind
        and (
            component is None
            or document["metadata"]["labels"].get("app.kubernetes.io/component") == component
        )
    ]
    return found


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {entry["name"]: entry.get("value", entry.get("valueFrom")) for entry in container["env"]}


@pytest.mark.parametrize("kube_version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_the_chart_lints_strictly(values: dict[str, Any], kube_version: str) -> None:
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE, kube_version=f"v{kube_version}")

    assert report["errors"] == []
    assert [message for message in report["messages"] if message["severity"] >= 2] == []


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_every_rendered_manifest_is_valid_kubernetes(chart: helm.Chart, values: dict[str, Any]) -> None:
    documents = render(chart, values)

    assert documents
    for document in documents:
        if (document["apiVersion"], document["kind"]) in CRD_KINDS:
            assert document["metadata"]["namespace"] == NAMESPACE
            continue
        validate(document, KUBERNETES_VERSIONS)


def test_the_webhook_is_ignored_on_failure_with_a_short_timeout(chart: helm.Chart) -> None:
    (webhook,) = one(render(chart, {}), "MutatingWebhookConfiguration")["webhooks"]

    assert webhook["failurePolicy"] == "Ignore"
    assert webhook["timeoutSeconds"] <= 10
    assert webhook["rules"] == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["pods"],
            "operations": ["CREATE"],
            "scope": "Namespaced",
        }
    ]
    assert webhook["clientConfig"]["service"]["path"] == f"/{INJECT_WEBHOOK}"


def test_the_webhook_skips_system_namespaces_and_opted_out_pods(chart: helm.Chart) -> None:
    (webhook,) = one(render(chart, {}), "MutatingWebhookConfiguration")["webhooks"]

    (excluded,) = webhook["namespaceSelector"]["matchExpressions"]
    assert excluded["key"] == "kubernetes.io/metadata.name"
    assert excluded["operator"] == "NotIn"
    assert {"kube-system", "kube-node-lease", NAMESPACE} <= set(excluded["values"])
    assert webhook["objectSelector"] == {
        "matchExpressions": [{"key": "toolsearch.dev/inject", "operator": "NotIn", "values": ["false"]}]
    }


def test_user_selectors_are_kept_next_to_the_system_namespace_exclusion(chart: helm.Chart) -> None:
    values = VALUE_SETS["label-only selectors and an init-container model"]
    (webhook,) = one(render(chart, values), "MutatingWebhookConfiguration")["webhooks"]

    assert webhook["namespaceSelector"]["matchLabels"] == {"toolsearch.dev/injection": "enabled"}
    assert webhook["namespaceSelector"]["matchExpressions"][0]["key"] == "kubernetes.io/metadata.name"
    assert webhook["objectSelector"]["matchLabels"] == {"toolsearch.dev/inject": "true"}


def test_cert_manager_injects_the_ca_of_the_served_certificate(chart: helm.Chart) -> None:
    documents = render(chart, VALUE_SETS["cert-manager with its own self-signed issuer"])

    certificate = one(documents, "Certificate")
    configuration = one(documents, "MutatingWebhookConfiguration")
    operator = one(documents, "Deployment", "operator")
    annotation = configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    assert annotation == f"{NAMESPACE}/{certificate['metadata']['name']}"
    assert one(documents, "Issuer")["spec"] == {"selfSigned": {}}
    (secret,) = [volume for volume in operator["spec"]["template"]["spec"]["volumes"] if "secret" in volume]
    assert secret["secret"]["secretName"] == certificate["spec"]["secretName"]
    assert (
        env_of(operator["spec"]["template"]["spec"]["containers"][0])["TOOLSEARCH_OPERATOR_TLS"] == "mounted"
    )


def test_self_signed_mode_runs_one_operator_that_publishes_its_ca(chart: helm.Chart) -> None:
    documents = render(chart, {})
    operator = one(documents, "Deployment", "operator")
    env = env_of(operator["spec"]["template"]["spec"]["containers"][0])

    assert operator["spec"]["replicas"] == 1
    assert operator["spec"]["strategy"] == {"type": "Recreate"}
    assert env["TOOLSEARCH_OPERATOR_TLS"] == "self-signed"
    assert (
        env["TOOLSEARCH_OPERATOR_WEBHOOK_CONFIGURATION"]
        == one(documents, "MutatingWebhookConfiguration")["metadata"]["name"]
    )
    assert f"ts-toolsearch-webhook.{NAMESPACE}.svc" in env["TOOLSEARCH_OPERATOR_WEBHOOK_HOSTNAMES"].split(",")


def test_self_signed_mode_refuses_several_operator_replicas(chart: helm.Chart) -> None:
    with pytest.raises(helm.HelmRenderError, match="certManager"):
        chart.render({"operator": {"replicas": 2}}, name=RELEASE, namespace=NAMESPACE)


def test_the_operator_accepts_the_sidecar_defaults_the_chart_gives_it(chart: helm.Chart) -> None:
    values = VALUE_SETS["label-only selectors and an init-container model"]
    operator = one(render(chart, values), "Deployment", "operator")
    defaults = json.loads(
        env_of(operator["spec"]["template"]["spec"]["containers"][0])["TOOLSEARCH_OPERATOR_SIDECAR_DEFAULTS"]
    )

    spec = sidecar_spec({}, defaults)

    assert spec.image == "registry.example/toolsearch:1.2.3"
    assert spec.port == 9000
    assert spec.model.kind == "init-container"
    assert spec.redis is not None and spec.redis.url == "redis://cache.shared.svc:6379/0"


def test_injected_proxies_use_the_in_chart_redis(chart: helm.Chart) -> None:
    values = VALUE_SETS["standalone with autoscaling, disruption budget and in-chart redis"]
    documents = render(chart, values)
    operator = one(documents, "Deployment", "operator")
    defaults = json.loads(
        env_of(operator["spec"]["template"]["spec"]["containers"][0])["TOOLSEARCH_OPERATOR_SIDECAR_DEFAULTS"]
    )
    redis_service = one(documents, "Service", "redis")["metadata"]["name"]

    assert defaults["toolsearch.dev/redis-url"] == f"redis://{redis_service}.{NAMESPACE}.svc:6379/0"


def test_the_operators_permissions_are_least_privilege(chart: helm.Chart) -> None:
    documents = render(chart, {})
    rules = one(documents, "ClusterRole")["rules"]
    configuration = one(documents, "MutatingWebhookConfiguration")["metadata"]["name"]

    granted = {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert not any("*" in grant for grant in granted)
    assert not any(resource in {"pods", "secrets", "configmaps", "deployments"} for _, resource, _ in granted)
    (patching,) = [
        rule
        for rule in rules
        if "patch" in rule["verbs"] and rule["resources"] == ["mutatingwebhookconfigurations"]
    ]
    assert patching["resourceNames"] == [configuration]
    assert not [document for document in documents if document["kind"] in {"Role", "RoleBinding"}]


def test_the_standalone_proxy_is_configured_through_toolsearch_variables(chart: helm.Chart) -> None:
    values = VALUE_SETS["standalone only, redis url from a secret"]
    proxy = one(render(chart, values), "Deployment", "proxy")
    (container,) = proxy["spec"]["template"]["spec"]["containers"]
    env = env_of(container)

    assert env["TOOLSEARCH_UPSTREAM"] == "http://gateway:3000/mcp"
    assert env["TOOLSEARCH_HOST"] == "0.0.0.0"
    assert env["TOOLSEARCH_REDIS_URL"] == {"secretKeyRef": {"name": "toolsearch-redis", "key": "url"}}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_standalone_proxy_serves_the_models_of_its_image(chart: helm.Chart) -> None:
    values = VALUE_SETS["standalone only, redis url from a secret"]
    (container,) = one(render(chart, values), "Deployment", "proxy")["spec"]["template"]["spec"]["containers"]
    # The image's TOOLSEARCH_MODEL_DIR: both built-in models, or none in an image built without them.
    assert "TOOLSEARCH_MODEL_DIR" not in env_of(container)


@pytest.mark.parametrize(
    ("value", "variable"),
    [
        ("readInferred", "TOOLSEARCH_READ_INFERRED"),  # call_read_tool(s) take inferred reads
        ("learning", "TOOLSEARCH_LEARNING"),  # search learns from use
    ],
)
def test_a_standalone_switch_turns_its_setting_on(chart: helm.Chart, value: str, variable: str) -> None:
    values = VALUE_SETS["standalone only, redis url from a secret"]
    (default,) = one(render(chart, values), "Deployment", "proxy")["spec"]["template"]["spec"]["containers"]
    values = {**values, "standalone": {**values["standalone"], value: True}}
    (container,) = one(render(chart, values), "Deployment", "proxy")["spec"]["template"]["spec"]["containers"]
    assert variable not in env_of(default)
    assert env_of(container)[variable] == "true"


def test_extra_env_gives_the_standalone_proxy_another_model_profile(chart: helm.Chart) -> None:
    values = VALUE_SETS["standalone only, redis url from a secret"]
    extra = [{"name": "TOOLSEARCH_MODEL_DIR", "value": "/models/use"}]
    values = {**values, "standalone": {**values["standalone"], "extraEnv": extra}}
    (container,) = one(render(chart, values), "Deployment", "proxy")["spec"]["template"]["spec"]["containers"]
    assert [item for item in container["env"] if item["name"] == "TOOLSEARCH_MODEL_DIR"] == extra


def test_autoscaling_leaves_the_replica_count_to_the_autoscaler(chart: helm.Chart) -> None:
    documents = render(chart, VALUE_SETS["standalone with autoscaling, disruption budget and in-chart redis"])
    proxy = one(documents, "Deployment", "proxy")

    assert "replicas" not in proxy["spec"]
    assert (
        one(documents, "HorizontalPodAutoscaler")["spec"]["scaleTargetRef"]["name"]
        == proxy["metadata"]["name"]
    )
    assert one(documents, "PodDisruptionBudget")["spec"]["selector"] == proxy["spec"]["selector"]


def test_the_helm_test_calls_readyz_of_the_proxy(chart: helm.Chart) -> None:
    documents = render(chart, VALUE_SETS["standalone with autoscaling, disruption budget and in-chart redis"])
    test = one(documents, "Pod", "test")

    assert test["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (container,) = test["spec"]["containers"]
    proxy_service = one(documents, "Service", "proxy")["metadata"]["name"]
    assert f"http://{proxy_service}.{NAMESPACE}.svc:8090/readyz" in container["command"]


def test_the_notes_tell_how_to_opt_in(chart: helm.Chart) -> None:
    notes = chart.render({}, name=RELEASE, namespace=NAMESPACE)["toolsearch/templates/NOTES.txt"]

    assert 'toolsearch.dev/inject: "true"' in notes
    assert f"helm test {RELEASE}" in notes


@pytest.mark.parametrize(
    "url",
    [
        "redis+cluster://cache-0.cache:6379,cache-1.cache:6379",
        "rediss+cluster://clustercfg.cache.example.com:6379",
        "rediss+sentinel://sentinel:26379/toolsearch",
    ],
)
def test_the_values_schema_accepts_cluster_and_sentinel_urls(chart: helm.Chart, url: str) -> None:
    chart.validate_schema({"redis": {"url": url}})


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"standalone": {"enabled": True}}, "upstream"),
        ({"webhook": {"timeoutSeconds": 60}}, "timeoutSeconds"),
        ({"webhook": {"tls": {"mode": "vault"}}}, "mode"),
        ({"sidecar": {"model": {"source": "image-volume"}}}, "image"),
        ({"sidecar": {"resources": {"memory": "lots"}}}, "memory"),
        ({"redis": {"url": "http://cache:6379"}}, "url"),
        ({"operator": {"replica": 2}}, "replica"),
    ],
)
def test_the_values_schema_refuses_unusable_values(
    chart: helm.Chart, values: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(helm.HelmValuesError, match=complaint):
        chart.validate_schema(values)
