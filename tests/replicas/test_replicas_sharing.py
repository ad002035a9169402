"""Replicas (separate proxy processes) share catalogs through one Redis: one listing serves them all."""

from __future__ import annotations

import asyncio
import time

import anyio

from tests.replicas.conftest import (
    TOKEN_TIME,
    TOKEN_X,
    TOKEN_Y,
    X_SERVERS,
    Y_SERVERS,
    call_json,
    found_names,
    names_of,
    running_replicas,
    search,
    wait_until,
)
from tests.support.upstream import SlowApp
from toolsearch.testing import DemoUpstream, recorded_tools, serve_app


async def test_a_catalog_listed_through_one_replica_is_served_by_the_others(redis_server, upstream) -> None:
    url, served = upstream
    with running_replicas(url, redis_url=redis_server.url) as replicas:
        first = await search(replicas[0], TOKEN_X, "create an issue")
        assert served.list_calls[f"Bearer {TOKEN_X}"] == 1
        others = [
            await search(replica, TOKEN_X, "create an issue", mode)
            for replica in replicas[1:]
            for mode in ("auto", "legacy")
        ]
    assert served.list_calls[f"Bearer {TOKEN_X}"] == 1
    assert all(answer == first for answer in others)


async def test_concurrent_first_requests_through_every_replica_list_the_upstream_once(redis_server) -> None:
    served = DemoUpstream(recorded_tools(servers=["time"]))
    with (
        serve_app(SlowApp(served.app(), 0.5)) as base,
        running_replicas(f"{base}/mcp", redis_url=redis_server.url) as replicas,
    ):
        answers = await asyncio.gather(
            *(search(replica, "new", "time") for replica in replicas for _ in range(2))
        )
    assert served.list_calls["Bearer new"] == 1
    assert all(answer == answers[0] for answer in answers)


async def test_after_the_ttl_exactly_one_replica_lists_the_catalog_again(redis_server, upstream) -> None:
    url, served = upstream
    added = {**served.tools[0], "name": "time_moon_phase", "description": "Phase of the moon on a date."}
    ttl = 4.0
    with running_replicas(url, redis_url=redis_server.url, catalog_ttl=ttl) as replicas:
        listed = time.monotonic()
        await search(replicas[0], TOKEN_TIME, "moon phase")
        await asyncio.gather(*(search(replica, TOKEN_TIME, "moon phase") for replica in replicas[1:]))
        served.set_tools([*served.tools, added])
        await asyncio.sleep(max(0.0, listed + ttl + 0.2 - time.monotonic()))
        # Every replica now holds a stale catalog: each serves it, and each asks for a refresh.
        await asyncio.gather(*(search(replica, TOKEN_TIME, "moon phase") for replica in replicas))
        await wait_until(lambda: served.list_calls[f"Bearer {TOKEN_TIME}"] >= 2)

        async def refreshed(replica: str) -> None:
            while "time_moon_phase" not in found_names(await search(replica, TOKEN_TIME, "moon phase")):
                await asyncio.sleep(0.05)

        with anyio.fail_after(20):
            await asyncio.gather(*(refreshed(replica) for replica in replicas))
    assert served.list_calls[f"Bearer {TOKEN_TIME}"] == 2


async def test_two_callers_never_see_each_others_catalogs(redis_server, upstream) -> None:
    url, served = upstream
    x_only = sorted(names_of(X_SERVERS) - names_of(Y_SERVERS))
    y_only = sorted(names_of(Y_SERVERS) - names_of(X_SERVERS))
    with running_replicas(url, redis_url=redis_server.url) as replicas:
        for round_ in range(2):
            for position, replica in enumerate(replicas):
                token, own, other = (
                    (TOKEN_X, x_only, y_only) if (position + round_) % 2 else (TOKEN_Y, y_only, x_only)
                )
                for query in ("create an issue", "list projects", "search messages", "error events"):
                    names = found_names(await search(replica, token, query))
                    assert not names & set(other)
                described = await call_json(replica, token, "describe_tool", {"names": [other[0], own[0]]})
                assert [tool["name"] for tool in described["tools"]] == [own[0]]
                assert [entry["name"] for entry in described["unknown"]] == [other[0]]
    assert served.list_calls[f"Bearer {TOKEN_X}"] == 1
    assert served.list_calls[f"Bearer {TOKEN_Y}"] == 1
    with redis_server.client() as client:
        assert len(client.keys("toolsearch:catalog:*")) == 2
        assert len(client.keys("toolsearch:toolset:*")) == 2
        shared = names_of(X_SERVERS) | names_of(Y_SERVERS)
        assert len(client.keys("toolsearch:tool:*")) == len(shared)
