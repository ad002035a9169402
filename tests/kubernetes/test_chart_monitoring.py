"""The chart's monitoring: the Grafana dashboard's ConfigMap, the ServiceMonitor and the PrometheusRule;
every expression parses (promtool) and names only metrics a running proxy exports."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import httpx
import pytest
import yaml
from k8s_helpers import CHART
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR
from test_chart import NAMESPACE, VALUE_SETS, one, render

from tests.conftest import call_json, call_text, connect, running_proxy, running_upstream
from tests.embedding.tiny_models import write_model
from toolsearch.testing import free_port, recorded_tools

MONITORING = VALUE_SETS["standalone with monitoring: dashboard, service monitor and alerts"]
DASHBOARD = json.loads((CHART / "dashboards" / "toolsearch.json").read_text())
# PromQL's own words, and the labels and functions the expressions use, are not metric names.
_NOT_METRICS = {
    "sum", "by", "rate", "histogram_quantile", "or", "and", "vector", "max", "offset", "le", "job",
    "gen_ai_tool_name", "toolsearch_outcome", "mcp_method_name", "error_type", "toolsearch_catalog_result",
}  # fmt: skip


def dashboard_expressions() -> list[str]:
    return [target["expr"] for panel in DASHBOARD["panels"] for target in panel.get("targets", [])]


def alert_rules(chart: helm.Chart) -> list[dict[str, Any]]:
    (group,) = one(render(chart, MONITORING), "PrometheusRule")["spec"]["groups"]
    return group["rules"]


def metric_names(expression: str) -> set[str]:
    without_strings = re.sub(r'"[^"]*"', "", expression)
    without_ranges = re.sub(r"\[[^\]]*\]", "", without_strings)
    return {word for word in re.findall(r"\b[a-z_][a-z0-9_]*", without_ranges) if word not in _NOT_METRICS}


def test_the_dashboard_ships_in_a_configmap_with_the_grafana_sidecar_label(chart: helm.Chart) -> None:
    configmap = one(render(chart, MONITORING), "ConfigMap", "monitoring")

    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"]["toolsearch.json"]) == DASHBOARD


def test_monitoring_is_off_by_default(chart: helm.Chart) -> None:
    kinds = {document["kind"] for document in render(chart, {})}

    assert not kinds & {"ServiceMonitor", "PrometheusRule", "ConfigMap"}


def test_the_service_monitor_scrapes_the_standalone_proxys_metrics(chart: helm.Chart) -> None:
    documents = render(chart, MONITORING)
    monitor = one(documents, "ServiceMonitor")
    service = one(documents, "Service", "proxy")

    selected = monitor["spec"]["selector"]["matchLabels"]
    assert selected.items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_a_service_monitor_needs_the_standalone_proxy(chart: helm.Chart) -> None:
    with pytest.raises(helm.HelmValuesError, match="standalone"):
        chart.validate_schema({"monitoring": {"serviceMonitor": {"enabled": True}}})


def test_the_alerts_cover_upstream_refreshes_redis_embedding_and_search_outcomes(chart: helm.Chart) -> None:
    assert [rule["alert"] for rule in alert_rules(chart)] == [
        "ToolsearchUpstreamDown",
        "ToolsearchCatalogRefreshErrors",
        "ToolsearchRedisOutage",
        "ToolsearchEmbeddingBacklog",
        "ToolsearchSearchFollowedRateFalling",
    ]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="no promtool: run scripts/system-packages.sh")
def test_every_alert_and_dashboard_expression_is_valid_promql(chart: helm.Chart, tmp_path: Path) -> None:
    # Grafana's variables stand for a range and a regular expression.
    panels = [
        {"record": f"panel:{index}", "expr": expr.replace("$__rate_interval", "5m").replace("$job", ".*")}
        for index, expr in enumerate(dashboard_expressions())
    ]
    groups = [{"name": "alerts", "rules": alert_rules(chart)}, {"name": "panels", "rules": panels}]
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": groups}))

    checked = subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True, text=True)

    assert checked.returncode == 0, checked.stdout + checked.stderr


_FOLLOWED = 'toolsearch_search_followed_count{job="a",toolsearch_outcome='
# Series for promtool's rule tests: samples every 15 minutes over eight days, or every minute.
_FALLING_SHARE = [
    # 90% of searches followed by a result for a week, then 40%: well below 0.8 of a week earlier.
    {"series": _FOLLOWED + '"followed"}', "values": "0+225x700 157500+50x100"},
    {"series": _FOLLOWED + '"not_in_results"}', "values": "0+25x700 17500+75x100"},
]
_REDIS_DOWN = [{"series": 'toolsearch_store_errors_total{job="a"}', "values": "0+10x40"}]
_UPSTREAM_DOWN = [
    {"series": 'toolsearch_upstream_errors_total{job="a"}', "values": "0+90x40"},
    {"series": 'mcp_client_operation_duration_seconds_count{job="a"}', "values": "0+100x40"},
]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="no promtool: run scripts/system-packages.sh")
@pytest.mark.parametrize(
    ("alert", "series", "interval", "at"),
    [
        ("ToolsearchSearchFollowedRateFalling", _FALLING_SHARE, "15m", "190h"),
        ("ToolsearchRedisOutage", _REDIS_DOWN, "1m", "20m"),
        ("ToolsearchUpstreamDown", _UPSTREAM_DOWN, "1m", "20m"),
    ],
)
def test_an_alert_fires_on_its_condition_and_not_before(
    chart: helm.Chart, tmp_path: Path, alert: str, series: list[dict[str, str]], interval: str, at: str
) -> None:
    # promtool compares annotations too, and these quote the computed value: left out here.
    rules = [
        {key: value for key, value in rule.items() if key != "annotations"} for rule in alert_rules(chart)
    ]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": "toolsearch", "rules": rules}]}))
    fired = {
        "alertname": alert,
        "eval_time": at,
        "exp_alerts": [{"exp_labels": {"job": "a", "severity": _severity(rules, alert)}}],
    }
    quiet = {"alertname": alert, "eval_time": "1m", "exp_alerts": []}
    test = {"interval": interval, "input_series": series, "alert_rule_test": [quiet, fired]}
    (tmp_path / "test.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "tests": [test]}))

    checked = subprocess.run(
        ["promtool", "test", "rules", "test.yaml"], cwd=tmp_path, capture_output=True, text=True
    )

    assert checked.returncode == 0, checked.stdout + checked.stderr


def _severity(rules: list[dict[str, Any]], alert: str) -> str:
    (rule,) = [rule for rule in rules if rule["alert"] == alert]
    return rule["labels"]["severity"]


@pytest.fixture(scope="module")
def exported_metrics(tmp_path_factory: pytest.TempPathFactory) -> Iterator[set[str]]:
    """Metric names on /metrics of a proxy with a model and a Redis that is down, after callers
    searched, followed, retried, abandoned searches, called unknown and failing tools."""

    def fail(name: str, arguments: dict[str, Any]) -> None:
        if name == "time_convert_time":
            raise MCPError(code=INTERNAL_ERROR, message="failing on purpose")

    model = tmp_path_factory.mktemp("tiny") / "model"
    write_model(model, name="tiny-monitoring")
    options = {
        "model_dir": str(model),
        "redis_url": f"redis://127.0.0.1:{free_port()}/0",  # nothing listens: every operation fails
        "search_outcome_window": 0.5,
    }
    with (
        running_upstream(recorded_tools(servers=["time", "github"]), on_call=fail) as (upstream_url, _),
        running_proxy(upstream_url, **options) as url,
    ):
        asyncio.run(_exercise(url))
        text = httpx.get(url.removesuffix("/mcp") + "/metrics").text
    yield {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


async def _exercise(url: str) -> None:
    async with connect(url, "token") as client:
        hits = await call_json(client, "search_tools", {"query": "current time"})
        await call_text(client, "call_write_tool", {"name": hits["results"][0]["tools"][0]["name"]})
        await call_json(client, "search_tools", {"query": "convert time"})
        convert = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Vilnius"}
        await call_text(client, "call_write_tool", {"name": "time_convert_time", "arguments": convert})
        await call_text(client, "call_write_tool", {"name": "github_create_issue"})
        await call_text(client, "call_write_tool", {"name": "time_get_curent_time"})
        await call_json(client, "search_tools", {"query": "list issues"})
        await call_json(client, "search_tools", {"query": "qqqzzzxx"})
    await asyncio.sleep(1.0)  # the last search goes unfollowed


def unexported(names: set[str], families: set[str]) -> set[str]:
    """The series `names` that none of the metric `families` has (histograms add _bucket, _count, _sum)."""
    return {name for name in names if not {name, re.sub(r"_(bucket|count|sum)$", "", name)} & families}


def test_the_dashboard_names_only_metrics_the_proxy_exports(exported_metrics: set[str]) -> None:
    used = {name for expr in dashboard_expressions() for name in metric_names(expr)}

    assert unexported(used, exported_metrics) == set()


def test_the_alerts_name_only_metrics_the_proxy_exports(
    chart: helm.Chart, exported_metrics: set[str]
) -> None:
    used = {name for rule in alert_rules(chart) for name in metric_names(rule["expr"])}

    assert unexported(used, exported_metrics) == set()
