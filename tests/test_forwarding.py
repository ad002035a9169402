"""Resources, prompts and completion pass through: the proxy hides the upstream's tools, not the rest
of the server. Forwarded with the caller's credentials, advertised only when the upstream offers
them, answered as the upstream answers them. The upstream: server-everything (TypeScript SDK)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import mcp_types
import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import TOKEN_X, connect, running_proxy
from tests.support.node import everything_server, requires_node
from tests.support.upstream import mcp_client

pytestmark = requires_node
STATIC = "demo://resource/static/document/architecture.md"


@pytest.fixture(scope="module")
def everything() -> Iterator[tuple[str, str]]:
    """(server-everything's URL, the proxy's URL in front of it)."""
    with everything_server() as upstream, running_proxy(upstream) as proxy:
        yield upstream, proxy


def _dumped(model: Any) -> Any:
    """A result's content, less the envelope (the proxy's own identity and caching hints)."""
    dumped = model.model_dump(mode="json", exclude_none=True)
    return {key: value for key, value in dumped.items() if key not in ("meta", "ttl_ms", "cache_scope")}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_upstreams_resources_prompts_and_completion_are_advertised_without_subscriptions(
    everything: tuple[str, str], mode: str
) -> None:
    async with connect(everything[1], mode=mode) as client:
        capabilities = client.server_capabilities
    assert capabilities.resources is not None and not capabilities.resources.subscribe
    assert capabilities.prompts is not None and capabilities.completions is not None


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_resources_and_prompts_come_back_as_the_upstream_answers_them(
    everything: tuple[str, str], mode: str
) -> None:
    async def answers(url: str) -> list[Any]:
        async with mcp_client(url, mode=mode) as client:
            return [
                _dumped(await client.list_resources()),
                _dumped(await client.list_resource_templates()),
                _dumped(await client.read_resource(STATIC)),
                _dumped(await client.list_prompts()),
                _dumped(await client.get_prompt("args-prompt", {"city": "Vilnius", "state": "LT"})),
            ]

    assert await answers(everything[1]) == await answers(everything[0])


async def test_completion_is_forwarded(everything: tuple[str, str]) -> None:
    async with connect(everything[1]) as client:
        result = await client.complete(
            mcp_types.PromptReference(name="completable-prompt"), {"name": "department", "value": "Eng"}
        )
    assert "Engineering" in result.completion.values


async def test_an_upstream_error_on_a_forwarded_request_keeps_its_code(everything: tuple[str, str]) -> None:
    async with connect(everything[1]) as client:
        with pytest.raises(MCPError) as direct_error:
            await client.get_prompt("no-such-prompt")
    async with mcp_client(everything[0]) as client:
        with pytest.raises(MCPError) as upstream_error:
            await client.get_prompt("no-such-prompt")
    assert direct_error.value.error.code == upstream_error.value.error.code


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_what_the_upstream_does_not_offer_is_neither_advertised_nor_served(
    proxy_url: str, mode: str
) -> None:
    async with connect(proxy_url, TOKEN_X, mode) as client:
        assert client.server_capabilities.prompts is None
        with pytest.raises(MCPError) as refused:
            await client.list_prompts()
    assert refused.value.error.code == -32601
