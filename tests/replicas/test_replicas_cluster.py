"""Replicas share catalogs through a real Redis Cluster: keys spread over the slots, and a failover
or a resharding never fails a request."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from redis.cluster import RedisCluster

from tests.replicas.conftest import (
    TOKEN_TIME,
    TOKEN_X,
    TOKEN_Y,
    running_replicas,
    search,
    store_health,
    wait_until,
)
from toolsearch.backends.base import CatalogRecord, StoreUnavailable
from toolsearch.backends.redis import RedisBackend
from toolsearch.backends.redis_connection import connect
from toolsearch.runtime import Supervisor
from toolsearch.testing import RedisClusterServer, recorded_tools
from toolsearch.tool import ToolInterner

INTERNER = ToolInterner()
TOOLS = tuple(INTERNER.intern(definition) for definition in recorded_tools(servers=["time", "github"]))


def record() -> CatalogRecord:
    return CatalogRecord(TOOLS, "Upstream instructions.", time.time())


def opened(cluster: RedisClusterServer) -> RedisBackend:
    """A store with an interner of its own, as another replica would have. Its first operation
    learns the cluster's layout (a connection to every master): 5 s, for a busy CI machine."""
    return RedisBackend.from_url(cluster.url, ToolInterner(), supervisor=Supervisor(), timeout=5.0)


def keys_by_master(cluster: RedisClusterServer) -> dict[int, list[bytes]]:
    found = {}
    for master in cluster.masters():
        with master.client() as client:
            found[master.port] = client.keys("toolsearch:*")
    return found


async def searching_until(operation: Callable[[], object], replicas: list[str]) -> list[dict[str, Any]]:
    """Two callers search through every replica, again and again, until `operation` (run in a
    thread) is done; returns their answers."""
    running = asyncio.ensure_future(asyncio.to_thread(operation))
    answers: list[dict[str, Any]] = []
    while not running.done():
        searches = (
            search(replica, token, "current time") for replica in replicas for token in (TOKEN_X, TOKEN_Y)
        )
        answers += await asyncio.gather(*searches)
    await running
    return answers


async def test_a_record_written_through_the_cluster_reads_back_on_another_replica(redis_cluster) -> None:
    writer, reader = opened(redis_cluster), opened(redis_cluster)
    written = record()
    try:
        await writer.catalogs.put("caller", written)
        read = await reader.catalogs.get("caller")
        assert await reader.catalogs.listed_at("caller") == written.listed_at
    finally:
        await writer.aclose()
        await reader.aclose()
    assert read is not None
    assert [tool.definition for tool in read.tools] == [tool.definition for tool in written.tools]


async def test_each_key_lives_on_the_master_of_its_slot_and_tools_spread_over_every_master(
    redis_cluster,
) -> None:
    store = opened(redis_cluster)
    try:
        await store.catalogs.put("caller", record())
    finally:
        await store.aclose()
    stored = keys_by_master(redis_cluster)
    with redis_cluster.client() as client:
        owners = {
            key: client.nodes_manager.get_node_from_slot(client.keyslot(key)).port
            for keys in stored.values()
            for key in keys
        }
        tool_slots = {client.keyslot(key) for key in owners if key.startswith(b"toolsearch:tool:")}
    assert all(owners[key] == port for port, keys in stored.items() for key in keys)
    assert sum(map(len, stored.values())) == len(TOOLS) + 2  # the tools, their toolset, the catalog
    assert all(any(key.startswith(b"toolsearch:tool:") for key in keys) for keys in stored.values())
    assert len(tool_slots) == len(TOOLS)  # no hash tag gathers them in one slot


async def test_tool_embeddings_spread_over_slots_read_back_in_order(redis_cluster) -> None:
    vectors = {tool.digest: np.full(4, index, dtype=np.float32) for index, tool in enumerate(TOOLS)}
    store = opened(redis_cluster)
    try:
        await store.vectors.put_many("e5-small", vectors)
        found = await store.vectors.get_many("e5-small", [tool.digest for tool in TOOLS])
    finally:
        await store.aclose()
    assert list(found) == list(vectors)
    assert all(np.array_equal(found[digest], vector) for digest, vector in vectors.items())


async def test_a_corrupt_toolset_is_deleted_with_its_catalog_across_slots(redis_cluster) -> None:
    store = opened(redis_cluster)
    try:
        await store.catalogs.put("caller", record())
        with redis_cluster.client() as client:
            (toolset_key,) = client.keys("toolsearch:toolset:*", target_nodes=RedisCluster.PRIMARIES)
            client.set(toolset_key, b"\x01" * 40)
        assert await store.catalogs.get("caller") is None
        with redis_cluster.client() as client:
            left = client.keys("toolsearch:catalog:*", target_nodes=RedisCluster.PRIMARIES)
    finally:
        await store.aclose()
    assert store.connection.corrupt_entries == 1
    assert left == []


async def test_operations_in_flight_during_a_failover_fail_only_as_unavailable(redis_cluster) -> None:
    """The cluster client closes every connection to relearn the layout; commands it cuts short
    are outages like any other, never another exception."""
    store = opened(redis_cluster)
    outcomes: Counter[str] = Counter()

    async def keep_using(caller: str) -> None:
        while not failover.done():
            try:
                await store.catalogs.put(caller, record())
                await store.catalogs.get(caller)
                outcomes["answered"] += 1
            except StoreUnavailable:
                outcomes["unavailable"] += 1
                await asyncio.sleep(0.05)

    try:
        await store.catalogs.put("caller-0", record())
        redis_cluster.kill_master()
        failover = asyncio.ensure_future(asyncio.to_thread(redis_cluster.wait_until_serving))
        await asyncio.gather(*(keep_using(f"caller-{number}") for number in range(100)))
    finally:
        await store.aclose()
    assert outcomes["unavailable"]


@pytest.mark.parametrize(
    "url",
    ["redis+cluster:///", "redis+cluster://127.0.0.1:7000/1", "rediss+cluster://user:secret@/"],
)
def test_a_cluster_url_without_nodes_or_with_a_database_is_refused(url) -> None:
    with pytest.raises(ValueError, match="a cluster URL names its nodes") as refused:
        connect(url, timeout=1.0)
    assert "secret" not in str(refused.value)


async def test_a_catalog_listed_through_one_replica_is_served_by_the_other_through_the_cluster(
    redis_cluster, upstream
) -> None:
    url, served = upstream
    with running_replicas(url, count=2, redis_url=redis_cluster.url) as (first, second):
        listed = await search(first, TOKEN_X, "create an issue")
        shared = await search(second, TOKEN_X, "create an issue")
    assert shared == listed
    assert served.list_calls[f"Bearer {TOKEN_X}"] == 1


async def test_a_master_killed_mid_test_fails_no_request_and_its_promoted_replica_shares_again(
    redis_cluster, upstream
) -> None:
    url, served = upstream
    with running_replicas(url, count=2, redis_url=redis_cluster.url) as replicas:
        for replica in replicas:
            await search(replica, TOKEN_X, "send a message")
        redis_cluster.kill_master()
        answers = await searching_until(redis_cluster.wait_until_serving, replicas)
        assert all(answer["results"][0]["tools"] for answer in answers)
        await wait_until(lambda: all(store_health(replica)["status"] == "up" for replica in replicas))
        for replica in replicas:
            await search(replica, TOKEN_TIME, "current time")
    assert served.list_calls[f"Bearer {TOKEN_TIME}"] == 1


async def test_slots_moved_mid_test_fail_no_request_and_no_store_operation(redis_cluster, upstream) -> None:
    url, served = upstream
    with running_replicas(url, count=2, redis_url=redis_cluster.url) as replicas:
        for replica in replicas:
            await search(replica, TOKEN_X, "send a message")
        before = keys_by_master(redis_cluster)
        answers = await searching_until(lambda: redis_cluster.move_slots(1500), replicas)
        for replica in replicas:
            answers.append(await search(replica, TOKEN_TIME, "current time"))
        health = [store_health(replica) for replica in replicas]
        after = keys_by_master(redis_cluster)
    source, target = list(before)[:2]  # the masters `move_slots` moves from and to
    moved = set(before[source]) - set(after[source])
    assert moved  # keys the replicas had found on the first master
    assert moved <= set(after[target])
    assert all(answer["results"][0]["tools"] for answer in answers)
    assert [(entry["status"], entry["failures"]) for entry in health] == [("up", 0), ("up", 0)]
    assert served.list_calls[f"Bearer {TOKEN_TIME}"] == 1
