"""Log messages: what a tool logs during a call reaches a caller that reads the call's response as a
stream, at the level it asked for; `logging` is offered, and `logging/setLevel` answered, exactly
where a level can be kept: a 2026-07-28 caller asks per request (`_meta` logLevel, passed upstream),
a legacy caller sets it with `logging/setLevel`, which goes to the upstream's session of its token
(so a 2026-07-28 upstream, which has no sessions, cannot keep it, and legacy callers are not offered
logging in front of one)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import mcp_types
import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import connect, running_proxy
from toolsearch.testing import serve_app
from toolsearch.testing.conformance import ConformanceUpstream

LOGGED = ["Tool execution started", "Tool processing data", "Tool execution completed"]
CALLS = [
    ("test_tool_with_logging", {}),
    ("call_read_tool", {"name": "test_tool_with_logging", "arguments": {}}),
]


@pytest.fixture(scope="module", params=["legacy upstream", "modern upstream"])
def logging_proxy(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    upstream = ConformanceUpstream(legacy_only=request.param == "legacy upstream")
    with serve_app(upstream.app()) as base, running_proxy(f"{base}/mcp", pin=["test_*"]) as proxy:
        yield proxy, request.param


async def _logged(proxy: str, mode: str, tool: str, arguments: dict[str, Any], **options: Any) -> list[Any]:
    seen: list[Any] = []

    async def on_log(params: mcp_types.LoggingMessageNotificationParams) -> None:
        seen.append((params.level, params.data))

    level = options.pop("set_level", None)
    async with connect(proxy, mode=mode, options={"logging_callback": on_log, **options}) as client:
        if level is not None:
            await client.set_logging_level(level)
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return seen


@pytest.mark.parametrize(("tool", "arguments"), CALLS)
async def test_a_modern_caller_gets_the_log_messages_of_its_call_at_the_level_it_asks(
    logging_proxy: tuple[str, str], tool: str, arguments: dict[str, Any]
) -> None:
    proxy, _ = logging_proxy
    assert await _logged(proxy, "auto", tool, arguments, log_level="info") == [("info", m) for m in LOGGED]
    assert await _logged(proxy, "auto", tool, arguments, log_level="warning") == []
    assert await _logged(proxy, "auto", tool, arguments) == []


@pytest.mark.parametrize(("tool", "arguments"), CALLS)
async def test_a_legacy_caller_in_front_of_a_legacy_upstream_sets_the_level_its_calls_log_at(
    logging_proxy: tuple[str, str], tool: str, arguments: dict[str, Any]
) -> None:
    proxy, upstream = logging_proxy
    if upstream != "legacy upstream":
        pytest.skip("a legacy caller is offered logging only in front of a legacy upstream")
    assert await _logged(proxy, "legacy", tool, arguments, set_level="debug") == [("info", m) for m in LOGGED]
    assert await _logged(proxy, "legacy", tool, arguments, set_level="error") == []


async def test_logging_is_offered_and_set_level_answered_only_where_a_level_can_be_kept(
    logging_proxy: tuple[str, str],
) -> None:
    proxy, upstream = logging_proxy
    async with connect(proxy, mode="legacy") as client:
        offered = client.server_capabilities.logging is not None
        if upstream == "legacy upstream":
            assert offered
            assert await client.set_logging_level("info") is not None
        else:
            assert not offered
            with pytest.raises(MCPError) as refused:
                await client.set_logging_level("info")
            assert refused.value.error.code == mcp_types.METHOD_NOT_FOUND
    async with connect(proxy) as client:
        assert client.server_capabilities.logging is not None
