"""The `toolsearch.dev/*` annotations: precedence over the operator's defaults, and clear errors."""

from __future__ import annotations

import pytest

from toolsearch_operator.annotations import AnnotationError, injection_requested, sidecar_spec
from toolsearch_operator.sidecar import ModelSource, RedisSource

DEFAULTS = {"toolsearch.dev/image": "registry.example/toolsearch:1.0"}


def test_defaults_fit_agentgateways_mcp_route() -> None:
    spec = sidecar_spec({}, DEFAULTS)

    assert spec.upstream_url == "http://127.0.0.1:80/mcp"
    assert spec.port == 8090
    assert spec.model == ModelSource(kind="builtin", path="/models/default")
    assert spec.redis is None


def test_annotations_override_the_operators_defaults() -> None:
    annotations = {
        "toolsearch.dev/upstream-port": "3000",
        "toolsearch.dev/upstream-path": "/mcp/http",
        "toolsearch.dev/port": "9000",
        "toolsearch.dev/image": "registry.example/toolsearch:2.0",
        "toolsearch.dev/memory-limit": "2Gi",
    }

    spec = sidecar_spec(annotations, {**DEFAULTS, "toolsearch.dev/port": "8091"})

    assert spec.upstream_url == "http://127.0.0.1:3000/mcp/http"
    assert spec.port == 9000
    assert spec.image == "registry.example/toolsearch:2.0"
    assert spec.limits == {"memory": "2Gi"}


def test_unrelated_annotations_are_ignored() -> None:
    spec = sidecar_spec({"prometheus.io/port": "not a number"}, DEFAULTS)

    assert spec.port == 8090


def test_a_pods_redis_secret_replaces_the_default_redis_url() -> None:
    defaults = {**DEFAULTS, "toolsearch.dev/redis-url": "redis://shared-cache:6379/0"}

    spec = sidecar_spec({"toolsearch.dev/redis-secret": "gateway-cache:url"}, defaults)

    assert spec.redis == RedisSource(secret_name="gateway-cache", secret_key="url")


def test_a_redis_secret_without_a_key_uses_redis_url() -> None:
    spec = sidecar_spec({"toolsearch.dev/redis-secret": "gateway-cache"}, DEFAULTS)

    assert spec.redis == RedisSource(secret_name="gateway-cache", secret_key="redis-url")


@pytest.mark.parametrize(
    "url", ["redis+cluster://cache-0:6379,cache-1:6379", "rediss+cluster://:secret@clustercfg.example:6379"]
)
def test_a_redis_cluster_url_is_given_to_the_proxy(url) -> None:
    spec = sidecar_spec({"toolsearch.dev/redis-url": url}, DEFAULTS)

    assert spec.redis == RedisSource(url=url)


def test_an_empty_redis_url_turns_the_default_redis_off() -> None:
    defaults = {**DEFAULTS, "toolsearch.dev/redis-url": "redis://shared-cache:6379/0"}

    assert sidecar_spec({"toolsearch.dev/redis-url": ""}, defaults).redis is None


@pytest.mark.parametrize(
    ("annotations", "named"),
    [
        ({"toolsearch.dev/port": "http"}, "toolsearch.dev/port"),
        ({"toolsearch.dev/upstream-port": "70000"}, "toolsearch.dev/upstream-port"),
        ({"toolsearch.dev/upstream-path": "mcp"}, "toolsearch.dev/upstream-path"),
        ({"toolsearch.dev/cpu": "a lot"}, "toolsearch.dev/cpu"),
        ({"toolsearch.dev/memory-limit": "1GB"}, "toolsearch.dev/memory-limit"),
        ({"toolsearch.dev/image-pull-policy": "Sometimes"}, "toolsearch.dev/image-pull-policy"),
        ({"toolsearch.dev/image": "has space:1"}, "toolsearch.dev/image"),
        ({"toolsearch.dev/model": "huggingface"}, "toolsearch.dev/model"),
        ({"toolsearch.dev/model": "init-container"}, "toolsearch.dev/model-image"),
        ({"toolsearch.dev/redis-url": "http://cache:6379"}, "toolsearch.dev/redis-url"),
        ({"toolsearch.dev/redis-secret": "Cache_Secret"}, "toolsearch.dev/redis-secret"),
        ({"toolsearch.dev/port": "80"}, "toolsearch.dev/upstream-port"),
    ],
)
def test_an_unusable_value_is_refused_naming_its_annotation(annotations: dict[str, str], named: str) -> None:
    with pytest.raises(AnnotationError, match=named):
        sidecar_spec(annotations, DEFAULTS)


def test_a_missing_image_says_where_to_set_it() -> None:
    with pytest.raises(AnnotationError, match=r"toolsearch.dev/image.*sidecar\.image"):
        sidecar_spec({}, {})


def test_a_refused_redis_url_is_not_echoed() -> None:
    with pytest.raises(AnnotationError) as refused:
        sidecar_spec({"toolsearch.dev/redis-url": "http://user:hunter2@cache:6379"}, DEFAULTS)

    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize(
    ("metadata", "requested"),
    [
        ({"annotations": {"toolsearch.dev/inject": "true"}}, True),
        ({"annotations": {"toolsearch.dev/inject": "True"}}, True),
        ({"annotations": {"toolsearch.dev/inject": "false"}}, False),
        ({"annotations": {"toolsearch.dev/inject": "yes please"}}, False),
        ({"labels": {"toolsearch.dev/inject": "true"}}, True),
        (
            {"annotations": {"toolsearch.dev/inject": "false"}, "labels": {"toolsearch.dev/inject": "true"}},
            False,
        ),
        ({}, False),
    ],
)
def test_only_an_explicit_true_opts_in(metadata: dict[str, dict[str, str]], requested: bool) -> None:
    assert injection_requested(metadata) is requested
