"""Catalogs are listed once per caller, served while fresh, and refreshed in the background."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import httpx

from tests.conftest import TOKEN_X, call_json, connect, running_proxy, running_upstream
from tests.support.upstream import SlowApp
from toolsearch.testing import serve_app

SEARCH = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "search_tools", "arguments": {"query": "current time"}},
}


async def _wait_for(condition: Any, seconds: float = 10.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await asyncio.sleep(0.02)


async def _search_until(client: Any, query: str, total: int, seconds: float = 10.0) -> dict[str, Any]:
    """`search_tools` again until the catalog searched has `total` tools."""
    with anyio.fail_after(seconds):
        while (answer := await call_json(client, "search_tools", {"query": query}))["total"] != total:
            await asyncio.sleep(0.02)
    return answer


async def test_concurrent_first_requests_of_a_caller_list_the_upstream_once(catalog_tools) -> None:
    from toolsearch.testing import DemoUpstream

    upstream = DemoUpstream(catalog_tools)
    with serve_app(SlowApp(upstream.app(), 0.3)) as base, running_proxy(f"{base}/mcp") as proxy:
        async with httpx.AsyncClient(headers={"Authorization": "Bearer one"}) as http:
            responses = await asyncio.gather(*(http.post(proxy, json=SEARCH) for _ in range(20)))
    assert all(response.status_code == 200 for response in responses)
    assert all("error" not in response.json() for response in responses)
    assert upstream.list_calls["Bearer one"] == 1


async def test_a_fresh_catalog_is_not_listed_again(catalog_tools) -> None:
    with running_upstream(catalog_tools) as (url, upstream), running_proxy(url) as proxy:
        for _ in range(3):
            async with connect(proxy, TOKEN_X) as client:
                await call_json(client, "search_tools", {"query": "time"})
    assert upstream.list_calls[f"Bearer {TOKEN_X}"] == 1


async def test_a_stale_catalog_keeps_serving_while_one_background_listing_replaces_it(catalog_tools) -> None:
    added = {**catalog_tools[0], "name": "time_moon_phase", "description": "Phase of the moon on a date."}
    with running_upstream(catalog_tools) as (url, upstream), running_proxy(url, catalog_ttl=0.5) as proxy:
        async with connect(proxy, TOKEN_X) as client:
            first = await call_json(client, "search_tools", {"query": "moon phase"})
            upstream.set_tools([*catalog_tools, added])
            await asyncio.sleep(0.6)
            stale = await call_json(client, "search_tools", {"query": "moon phase"})
            await _wait_for(lambda: upstream.list_calls[f"Bearer {TOKEN_X}"] == 2)
            # The listing has reached the upstream; its catalog replaces the stale one once indexed.
            fresh = await _search_until(client, "moon phase", total=len(catalog_tools) + 1)
    assert first["total"] == stale["total"] == len(catalog_tools)
    assert fresh["total"] == len(catalog_tools) + 1
    assert fresh["results"][0]["tools"][0]["name"] == "time_moon_phase"
    assert upstream.list_calls[f"Bearer {TOKEN_X}"] == 2


async def test_callers_with_the_same_tools_share_one_copy_of_them(catalog_tools) -> None:
    with running_upstream(catalog_tools) as (url, _):
        from toolsearch.settings import Settings
        from toolsearch.transport.http import create_app

        app = create_app(Settings(upstream=url))
        with serve_app(app) as base:
            for token in ("a", "b", "c"):
                async with connect(f"{base}/mcp", token) as client:
                    await call_json(client, "search_tools", {"query": "time"})
            catalogs = app.state.proxy.catalogs
            assert catalogs.interned_tools == len(catalog_tools)


async def test_without_redis_a_catalog_dropped_past_the_cache_bound_is_listed_again(catalog_tools) -> None:
    with (
        running_upstream(catalog_tools) as (url, upstream),
        running_proxy(url, max_cached_catalogs=1) as proxy,
    ):
        for token in ("a", "b", "a"):
            async with connect(proxy, token) as client:
                await call_json(client, "search_tools", {"query": "time"})
        ready = httpx.get(proxy.removesuffix("/mcp") + "/readyz").json()
    assert (upstream.list_calls["Bearer a"], upstream.list_calls["Bearer b"]) == (2, 1)
    assert ready["catalog_store"]["catalogs"] == ready["catalog_store"]["cached_catalogs"] == 1
