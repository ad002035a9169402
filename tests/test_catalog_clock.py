"""Catalogs in process, on a clock the test moves: served while fresh, refreshed in the background
once stale, listed once for concurrent first requests, and shared between two replicas through one
store. The upstream is a narrow stand-in for what `CatalogService` asks of `UpstreamClient` (an
era, instructions, pages of tools); the store is the memory backend's. Over HTTP, with a real
upstream and Redis, the same behaviour is tested in tests/test_catalog_cache.py and tests/replicas/."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncGenerator
from typing import Any

from toolsearch.backends.memory import MemoryCatalogStore, MemoryVectors
from toolsearch.catalog.service import CatalogService
from toolsearch.mcp.caller import CallerHeaders
from toolsearch.runtime import Supervisor
from toolsearch.search.build import index_builder

TTL = 60.0
CALLER = CallerHeaders(authorization="Bearer clock")


def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": f"{name.replace('_', ' ')}.", "inputSchema": {"type": "object"}}


class _Upstream:
    """Lists `tools` to every caller, counting listings; `gate` holds a listing until it is set."""

    def __init__(self, *names: str) -> None:
        self.tools = [_tool(name) for name in names]
        self.listings: Counter[str | None] = Counter()
        self.gate = asyncio.Event()
        self.gate.set()

    async def era(self, caller: CallerHeaders) -> str:
        return "legacy"

    async def instructions(self, caller: CallerHeaders) -> str | None:
        return None

    async def tool_pages(self, caller: CallerHeaders) -> AsyncGenerator[list[Any]]:
        self.listings[caller.authorization] += 1
        await self.gate.wait()
        yield list(self.tools)


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _service(
    upstream: _Upstream, store: MemoryCatalogStore, clock: _Clock, supervisor: Supervisor
) -> CatalogService:
    work = supervisor.pool("work")
    indexes = index_builder((), MemoryVectors(), supervisor, executor=work)
    return CatalogService(
        upstream,  # type: ignore[arg-type]  # the part of UpstreamClient a catalog asks for
        store,
        indexes,
        supervisor=supervisor,
        work=work,
        ttl=TTL,
        clock=clock,
    )


async def _names(service: CatalogService) -> list[str]:
    return [tool.name for tool in (await service.get(CALLER)).tools]


async def _settled(supervisor: Supervisor) -> None:
    """Until the background work started so far (a refresh, a write-back) has finished."""
    while supervisor.tasks:
        await asyncio.wait(supervisor.tasks)


async def test_a_fresh_catalog_is_served_without_listing_again(supervisor: Supervisor) -> None:
    upstream, clock = _Upstream("time_now"), _Clock()
    service = _service(upstream, MemoryCatalogStore(), clock, supervisor)
    assert await _names(service) == ["time_now"]
    clock.now += TTL - 1
    assert await _names(service) == ["time_now"]
    assert upstream.listings[CALLER.authorization] == 1


async def test_a_stale_catalog_is_served_while_one_listing_replaces_it(supervisor: Supervisor) -> None:
    upstream, clock = _Upstream("time_now"), _Clock()
    service = _service(upstream, MemoryCatalogStore(), clock, supervisor)
    await _names(service)
    upstream.tools.append(_tool("time_moon_phase"))
    clock.now += TTL
    assert await _names(service) == ["time_now"]  # stale: served as it is, refreshed behind it
    assert await _names(service) == ["time_now"]  # one refresh at a time
    await _settled(supervisor)
    assert await _names(service) == ["time_now", "time_moon_phase"]
    assert upstream.listings[CALLER.authorization] == 2


async def test_concurrent_first_requests_share_one_listing(supervisor: Supervisor) -> None:
    upstream, clock = _Upstream("time_now"), _Clock()
    upstream.gate.clear()
    service = _service(upstream, MemoryCatalogStore(), clock, supervisor)
    waiting = [asyncio.ensure_future(_names(service)) for _ in range(20)]
    await asyncio.sleep(0.01)
    upstream.gate.set()
    assert await asyncio.gather(*waiting) == [["time_now"]] * 20
    assert upstream.listings[CALLER.authorization] == 1


async def test_a_replica_serves_the_catalog_another_listed_into_the_shared_store(
    supervisor: Supervisor,
) -> None:
    store, clock = MemoryCatalogStore(), _Clock()
    first, second = _Upstream("time_now"), _Upstream("time_now")
    one, other = _service(first, store, clock, supervisor), _service(second, store, clock, supervisor)
    await _names(one)
    assert await _names(other) == ["time_now"]
    assert (first.listings[CALLER.authorization], second.listings[CALLER.authorization]) == (1, 0)


async def test_a_newer_listing_in_the_store_replaces_a_replicas_copy(supervisor: Supervisor) -> None:
    store, clock = MemoryCatalogStore(), _Clock()
    first, second = _Upstream("time_now"), _Upstream("time_now", "time_moon_phase")
    one, other = _service(first, store, clock, supervisor), _service(second, store, clock, supervisor)
    await _names(one)
    await _names(other)  # reads what `one` listed
    clock.now += TTL
    await _names(other)  # stale: `other` lists again, in the background, into the store
    await _settled(supervisor)
    clock.now += 1
    assert await _names(one) == ["time_now", "time_moon_phase"]
