"""What a client sees when it connects: five meta-tools, our guidance, the upstream's instructions."""

from __future__ import annotations

import json

import httpx

from tests.conftest import TOKEN_X, UPSTREAM_INSTRUCTIONS, connect, running_proxy

META_TOOLS = ["search_tools", "describe_tool", "call_read_tool", "call_read_tools", "call_write_tool"]


async def test_tools_list_shows_the_five_meta_tools(proxy_url: str, mode: str) -> None:
    async with connect(proxy_url, TOKEN_X, mode) as client:
        listed = await client.list_tools()
    assert [tool.name for tool in listed.tools] == META_TOOLS


async def test_tools_list_costs_under_1500_tokens(proxy_url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Authorization": f"Bearer {TOKEN_X}", "MCP-Protocol-Version": "2025-11-25"}
    response = httpx.post(proxy_url, json=body, headers=headers)
    result = json.dumps(response.json()["result"], separators=(",", ":"))
    assert len(result) / 4 < 1500, f"{len(result) / 4:.0f} tokens"


async def test_meta_tools_carry_read_only_and_destructive_annotations(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert tools["search_tools"].annotations.read_only_hint is True
    assert tools["search_tools"].annotations.idempotent_hint is True
    assert tools["call_read_tool"].annotations.read_only_hint is True
    assert tools["call_write_tool"].annotations.destructive_hint is True


async def test_instructions_are_our_guidance_then_the_upstreams(proxy_url: str, mode: str) -> None:
    async with connect(proxy_url, TOKEN_X, mode) as client:
        instructions = client.instructions or ""
    assert instructions.startswith("This server gives access to a large catalog of tools")
    assert instructions.endswith(UPSTREAM_INSTRUCTIONS)


async def test_instructions_are_cut_at_the_limit_with_a_note(upstream) -> None:
    with running_proxy(upstream[0], max_instructions=200) as url:
        async with connect(url, TOKEN_X) as client:
            instructions = client.instructions or ""
    assert len(instructions) <= 200
    assert instructions.endswith("[Instructions cut at 200 characters.]")


async def test_modern_tools_list_is_private_and_cacheable(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X, "auto") as client:
        assert client.protocol_version == "2026-07-28"
        listed = await client.list_tools()
    assert listed.cache_scope == "private"
    assert listed.ttl_ms == 600_000


async def test_max_batch_calls_zero_removes_call_read_tools(upstream) -> None:
    with running_proxy(upstream[0], max_batch_calls=0) as url:
        async with connect(url, TOKEN_X) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
    assert "call_read_tools" not in names
    assert len(names) == 4
