"""Progress: a caller's `progressToken` goes upstream with its call, and the upstream's
`notifications/progress` come back on the caller's response stream, before the result."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import mcp_types
import pytest
from mcp.server.context import ServerRequestContext

from tests.conftest import connect, running_proxy, running_upstream
from tests.support.upstream import recorded_tools

TIME_ARGS = {"timezone": "Europe/Vilnius"}


async def _reporting_progress(
    ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
) -> dict[str, Any]:
    token = (params.meta or {}).get("progress_token")
    if token is not None:
        for step in (1, 2, 3):
            await ctx.session.send_progress_notification(token, step, 3, f"step {step}", ctx.request_id)
    return {"content": [{"type": "text", "text": f"done, token {'sent' if token is not None else 'absent'}"}]}


@pytest.fixture(scope="module", params=["modern upstream", "legacy upstream"])
def progress_proxy(request: pytest.FixtureRequest) -> Iterator[str]:
    legacy = request.param == "legacy upstream"
    with (
        running_upstream(
            recorded_tools(["time"]),
            on_call_request=_reporting_progress,
            legacy_only=legacy,
            stateless=not legacy,
        ) as (url, _),
        running_proxy(url) as proxy,
    ):
        yield proxy


@pytest.mark.parametrize("tool", ["time_get_current_time", "call_read_tool"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_upstreams_progress_reaches_the_caller_before_the_result(
    progress_proxy: str, mode: str, tool: str
) -> None:
    arguments = (
        TIME_ARGS if tool != "call_read_tool" else {"name": "time_get_current_time", "arguments": TIME_ARGS}
    )
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connect(progress_proxy, mode=mode) as client:
        result = await client.call_tool(tool, arguments, progress_callback=on_progress)
    assert result.content[0].text == "done, token sent"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_without_a_progress_token_none_goes_upstream(progress_proxy: str) -> None:
    async with connect(progress_proxy) as client:
        result = await client.call_tool("time_get_current_time", TIME_ARGS)
    assert result.content[0].text == "done, token absent"
