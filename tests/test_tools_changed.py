"""When the upstream says a caller's tools changed (`notifications/tools/list_changed` on a
response stream), that caller's catalog is listed again at once, not only past `--catalog-ttl`."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types
import pytest
from mcp.server.context import ServerRequestContext

from tests.conftest import call_json, connect, running_proxy
from tests.support.upstream import DemoUpstream, recorded_tools, serve_upstream

NEW_TOOL = {
    "name": "acme_launch_rocket",
    "description": "Launch the rocket to orbit.",
    "inputSchema": {"type": "object", "properties": {}},
}


@pytest.mark.parametrize("legacy", [False, True], ids=["modern upstream", "legacy upstream"])
async def test_a_tools_changed_notification_lists_the_catalog_again(legacy: bool) -> None:
    tools = recorded_tools(["time"])
    upstream: DemoUpstream

    async def adds_a_tool(
        ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
    ) -> dict[str, Any]:
        upstream.set_tools([*tools, NEW_TOOL])
        await ctx.session.send_notification(mcp_types.ToolListChangedNotification(), ctx.request_id)
        return {"content": [{"type": "text", "text": "a tool was added"}]}

    options = {"legacy_only": legacy, "stateless": not legacy, "on_call_request": adds_a_tool}
    with serve_upstream(tools, **options) as (url, upstream), running_proxy(url, catalog_ttl=3600) as proxy:
        async with connect(proxy) as client:
            before = await call_json(client, "describe_tool", {"names": [NEW_TOOL["name"]]})
            await client.call_tool("time_get_current_time", {"timezone": "UTC"})
            for _ in range(200):  # the listing runs in the background: wait for it, a bounded while
                after = await call_json(client, "describe_tool", {"names": [NEW_TOOL["name"]]})
                if after["tools"]:
                    break
                await asyncio.sleep(0.05)
    assert before["tools"] == []
    assert [tool["name"] for tool in after["tools"]] == [NEW_TOOL["name"]]
