"""A Redis that crashes, stalls or holds garbage never fails a request; sharing resumes when it is back."""

from __future__ import annotations

import asyncio

from tests.replicas.conftest import (
    TOKEN_TIME,
    TOKEN_X,
    TOKEN_Y,
    running_replicas,
    search,
    store_health,
    wait_until,
)


async def test_a_redis_killed_mid_test_fails_no_request_and_its_restart_restores_sharing(
    redis_server, upstream
) -> None:
    url, served = upstream
    with running_replicas(url, redis_url=redis_server.url) as replicas:
        for replica in replicas:
            await search(replica, TOKEN_X, "send a message")
        redis_server.kill()
        answers = [
            await search(replica, token, query)
            for query in ("send a message", "current time", "open pull requests")
            for token in (TOKEN_X, TOKEN_Y)
            for replica in replicas
        ]
        assert all(answer["results"][0]["tools"] for answer in answers)
        assert served.list_calls[f"Bearer {TOKEN_X}"] == 1  # each replica kept serving its own copy
        assert all(store_health(replica)["status"] == "down" for replica in replicas)

        redis_server.start()
        await wait_until(lambda: all(store_health(replica)["status"] == "up" for replica in replicas))
        listed_before = served.list_calls[f"Bearer {TOKEN_TIME}"]
        for replica in replicas:
            await search(replica, TOKEN_TIME, "current time")
    assert listed_before == 0
    assert served.list_calls[f"Bearer {TOKEN_TIME}"] == 1


async def test_a_replica_writes_its_catalog_back_to_a_redis_that_lost_it(redis_server, upstream) -> None:
    url, served = upstream
    with running_replicas(url, count=2, redis_url=redis_server.url) as (first, second):
        await search(first, TOKEN_X, "current time")
        redis_server.kill()
        redis_server.start()  # empty: no persistence
        with redis_server.client() as client:
            while not client.keys("toolsearch:catalog:*"):
                await search(first, TOKEN_X, "current time")
                await asyncio.sleep(0.05)
        await search(second, TOKEN_X, "current time")
    assert served.list_calls[f"Bearer {TOKEN_X}"] == 1


async def test_a_stalled_redis_fails_no_request(redis_server, upstream) -> None:
    url, _ = upstream
    with running_replicas(url, count=2, redis_url=redis_server.url) as replicas:
        await search(replicas[0], TOKEN_X, "current time")
        with redis_server.client() as client:
            client.execute_command("CLIENT", "PAUSE", "3000", "ALL")
        answers = await asyncio.gather(
            *(search(replica, token, "current time") for replica in replicas for token in (TOKEN_X, TOKEN_Y))
        )
        assert all(answer["results"][0]["tools"] for answer in answers)
        assert any(store_health(replica)["failures"] for replica in replicas)
        await wait_until(lambda: all(store_health(replica)["status"] == "up" for replica in replicas))


async def test_a_corrupt_catalog_is_discarded_and_listed_again_once(redis_server, upstream) -> None:
    url, served = upstream
    with running_replicas(url, redis_url=redis_server.url) as (first, second, third):
        await search(first, TOKEN_X, "current time")
        with redis_server.client() as client:
            (catalog_key,) = client.keys("toolsearch:catalog:*")
            (toolset_key,) = client.keys("toolsearch:toolset:*")
            client.set(toolset_key, b"\x00" * 31)
            client.hset(catalog_key, "listed_at", "9e99")  # newer than any copy: every replica reads it
        answers = [await search(replica, TOKEN_X, "current time") for replica in (second, first, third)]
        assert store_health(second)["corrupt_entries"] == 1
        with redis_server.client() as client:
            assert len(client.get(toolset_key) or b"") % 32 == 0
    assert all(answer == answers[0] for answer in answers)
    assert served.list_calls[f"Bearer {TOKEN_X}"] == 2  # rebuilt by the replica that found it corrupt


async def test_a_corrupt_tool_definition_is_discarded_and_written_again(redis_server, upstream) -> None:
    url, served = upstream
    with running_replicas(url, redis_url=redis_server.url) as (first, second, third):
        await search(first, TOKEN_X, "current time")
        with redis_server.client() as client:
            broken = client.keys("toolsearch:tool:*")[0]
            original = client.get(broken)
            client.set(broken, b'{"name": "not what the digest says"}')
        answers = [await search(replica, TOKEN_X, "current time") for replica in (second, third)]
        with redis_server.client() as client:
            assert client.get(broken) == original
    assert answers[0] == answers[1]
    assert served.list_calls[f"Bearer {TOKEN_X}"] == 2


async def test_readyz_shows_a_redis_outage_without_failing_readiness(redis_server, upstream) -> None:
    url, _ = upstream
    with running_replicas(url, count=1, redis_url=redis_server.url) as (replica,):
        assert store_health(replica)["status"] == "up"
        redis_server.kill()
        await search(replica, TOKEN_X, "current time")
        health = store_health(replica)
    assert health["store"] == "redis"
    assert health["status"] == "down"
    assert health["outages"] == 1
