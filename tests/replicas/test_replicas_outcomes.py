"""Search outcomes across replicas sharing Redis: a search answered by one replica and the call that
follows it through another are linked, and Redis holds tool names only, never a query."""

from __future__ import annotations

import asyncio

import httpx

from tests.conftest import call_text, connect
from tests.replicas.conftest import TOKEN_X, call_json, found_names, running_replicas, search
from toolsearch.commands.stats import fetch_report

SECRET_QUERY = "QUERY-SECRET-walrus create an issue"
WINDOW = 2.0


def stats_of(mcp_url: str) -> dict:
    return httpx.get(mcp_url.removesuffix("/mcp") + "/stats", timeout=10).json()["counts"]


async def test_a_call_through_another_replica_follows_the_search(redis_server, upstream) -> None:
    url, _ = upstream
    with running_replicas(url, count=2, redis_url=redis_server.url, stats="true") as (first, second):
        answer = await search(first, TOKEN_X, SECRET_QUERY)
        best = answer["results"][0]["tools"][0]["name"]
        await call_json(second, TOKEN_X, "describe_tool", {"names": [best]})  # describing ends nothing
        async with connect(second, TOKEN_X) as client:  # the arguments may be wrong: the choice counts
            await call_text(client, "call_write_tool", {"name": best, "arguments": {}})

        assert stats_of(first)["searches"] == 1
        assert stats_of(second)["ended"]["followed"] == 1
        assert stats_of(second)["followed_by_rank"] == {"1": 1}
        bases = [replica.removesuffix("/mcp") for replica in (first, second)]
        assert fetch_report(bases)["followed_by_a_result"] == 1.0


async def test_redis_holds_no_query_and_forgets_the_answer_after_the_window(redis_server, upstream) -> None:
    url, _ = upstream
    flags = {"redis_url": redis_server.url, "stats": "true", "search_outcome_window": WINDOW}
    with running_replicas(url, count=1, **flags) as (replica,):
        shown = found_names(await search(replica, TOKEN_X, SECRET_QUERY))
        with redis_server.client() as client:
            (key,) = client.keys("toolsearch:outcome:*")
            record = client.hgetall(key)
            stored = b" ".join([key, *record, *record.values()]).decode()
            await asyncio.sleep(WINDOW + 1.0)
            ended = stats_of(replica)["ended"]
            left = client.hkeys(key)

    assert {f"shown:{name}" for name in shown} <= {field.decode() for field in record}
    for word in ("SECRET", "walrus"):
        assert word not in stored
    assert ended["unfollowed"] == 1
    assert b"search" not in left and b"ranks" not in left
