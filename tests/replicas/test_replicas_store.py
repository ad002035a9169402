"""The Redis catalog store on a real redis-server: layout, versions, leases, corruption and outages."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
from redis.exceptions import TimeoutError as RedisTimeoutError

from tests.replicas.conftest import requires_redis
from toolsearch.backends.base import CatalogRecord, CatalogStore, StoreUnavailable
from toolsearch.backends.memory import MemoryCatalogStore
from toolsearch.backends.redis import RedisBackend
from toolsearch.runtime import Supervisor
from toolsearch.testing import RedisServer, free_port, recorded_tools
from toolsearch.tool import ToolInterner

INTERNER = ToolInterner()
TOOLS = tuple(INTERNER.intern(definition) for definition in recorded_tools(servers=["time", "github"]))


def record(listed_at: float | None = None, **changes) -> CatalogRecord:
    fields = {"tools": TOOLS, "instructions": "Upstream instructions.", "listed_at": listed_at or time.time()}
    return CatalogRecord(**{**fields, **changes})


@contextlib.asynccontextmanager
async def opened(url: str, **options) -> AsyncIterator[RedisBackend]:
    """A store with an interner of its own, as another replica would have."""
    supervisor = Supervisor()
    store = RedisBackend.from_url(url, ToolInterner(), supervisor=supervisor, **{"timeout": 1.0, **options})
    try:
        yield store
    finally:
        await supervisor.aclose()
        await store.aclose()


async def test_a_record_written_by_one_replica_reads_back_on_another(redis_server) -> None:
    written = record()
    async with opened(redis_server.url) as writer, opened(redis_server.url) as reader:
        await writer.catalogs.put("caller", written)
        read = await reader.catalogs.get("caller")
        assert await reader.catalogs.listed_at("caller") == written.listed_at
    assert read is not None
    assert [tool.definition for tool in read.tools] == [tool.definition for tool in written.tools]
    assert (read.instructions, read.listed_at, read.expires_at) == (
        "Upstream instructions.",
        written.listed_at,
        None,
    )


async def test_callers_with_the_same_tools_share_one_stored_copy_of_them(redis_server) -> None:
    async with opened(redis_server.url) as store:
        for caller in range(50):
            await store.catalogs.put(f"caller-{caller}", record())
    with redis_server.client() as client:
        assert len(client.keys("toolsearch:catalog:*")) == 50
        assert len(client.keys("toolsearch:toolset:*")) == 1
        assert len(client.keys("toolsearch:tool:*")) == len(TOOLS)
        assert all(client.pttl(key) > 0 for key in client.keys("toolsearch:*"))


async def test_a_replica_reads_no_stored_copy_of_the_tools_it_already_holds(redis_server) -> None:
    async with opened(redis_server.url) as writer:
        await writer.catalogs.put("caller", record())
    with redis_server.client() as client:
        client.delete(*client.keys("toolsearch:tool:*"))
    # TOOLS are interned here
    holder = RedisBackend.from_url(redis_server.url, INTERNER, supervisor=Supervisor(), timeout=1.0)
    try:
        read = await holder.catalogs.get("caller")
    finally:
        await holder.aclose()
    assert read is not None and read.tools == TOOLS


async def test_an_older_listing_never_replaces_a_newer_one(redis_server) -> None:
    async with opened(redis_server.url) as store:
        await store.catalogs.put("caller", record(listed_at=2000.0, instructions="newer"))
        await store.catalogs.put("caller", record(listed_at=1000.0, instructions="older"))
        kept = await store.catalogs.get("caller")
    assert kept is not None
    assert kept.instructions == "newer"


async def test_a_catalog_is_not_kept_past_its_tokens_expiry(redis_server) -> None:
    async with opened(redis_server.url) as store:
        await store.catalogs.put("expiring", record(expires_at=time.time() + 30))
        await store.catalogs.put("expired", record(expires_at=time.time() - 1))
        assert await store.catalogs.get("expired") is None
    with redis_server.client() as client:
        (key,) = client.keys("toolsearch:catalog:*")
        assert 0 < client.pttl(key) <= 30_000


CORRUPTIONS = {
    "catalog body is not JSON": lambda client, keys: client.hset(keys["catalog"], "body", b"\xff{"),
    "catalog key of another type": lambda client, keys: client.set(keys["catalog"], b"garbage"),
    "toolset cut short": lambda client, keys: client.set(keys["toolset"], b"\x01" * 40),
    "toolset of other tools": lambda client, keys: client.set(keys["toolset"], b"\x01" * 64),
    "tool definition not JSON": lambda client, keys: client.set(keys["tool"], b"{nope"),
    "tool definition of another tool": lambda client, keys: client.set(keys["tool"], b'{"name": "x"}'),
    "tool definition missing": lambda client, keys: client.delete(keys["tool"]),
}


@pytest.mark.parametrize("corruption", CORRUPTIONS)
async def test_a_corrupt_entry_reads_as_absent_and_is_deleted(redis_server, corruption) -> None:
    async with opened(redis_server.url) as writer:
        await writer.catalogs.put("caller", record())
    with redis_server.client() as client:
        keys = {
            "catalog": client.keys("toolsearch:catalog:*")[0],
            "toolset": client.keys("toolsearch:toolset:*")[0],
            "tool": sorted(client.keys("toolsearch:tool:*"))[0],
        }
        CORRUPTIONS[corruption](client, keys)
    async with opened(redis_server.url) as reader:
        assert await reader.catalogs.get("caller") is None
        assert reader.connection.corrupt_entries >= 1
    with redis_server.client() as client:
        assert not client.exists(keys["catalog"])


async def test_a_rewrite_after_corruption_restores_every_entry(redis_server) -> None:
    async with opened(redis_server.url) as writer:
        await writer.catalogs.put("caller", record())
    with redis_server.client() as client:
        broken = sorted(client.keys("toolsearch:tool:*"))[0]
        client.set(broken, b'{"name": "x"}')
    async with opened(redis_server.url) as replica:
        assert await replica.catalogs.get("caller") is None
        await replica.catalogs.put("caller", record())
        assert await replica.catalogs.get("caller") is not None


async def test_a_lease_is_held_by_one_holder_at_a_time(redis_server) -> None:
    async with opened(redis_server.url) as first, opened(redis_server.url) as second:
        async with first.catalogs.lease("caller") as held, second.catalogs.lease("caller") as also_held:
            assert (held, also_held) == (True, False)
        async with second.catalogs.lease("caller") as held_after_release:
            assert held_after_release


async def test_a_lease_is_renewed_while_its_holder_lists(redis_server) -> None:
    async with (
        opened(redis_server.url, lease_ttl=0.3) as holder,
        opened(redis_server.url) as other,
        holder.catalogs.lease("caller") as held,
    ):
        await asyncio.sleep(1.0)  # more than three lease lifetimes
        async with other.catalogs.lease("caller") as taken:
            assert (held, taken) == (True, False)


async def test_the_lease_of_a_crashed_holder_frees_itself(redis_server) -> None:
    with redis_server.client() as client:
        client.set("toolsearch:lock:caller", "crashed-holder", px=300)  # no renewal will come
        async with opened(redis_server.url) as store:
            async with store.catalogs.lease("caller") as held_while_locked:
                assert not held_while_locked
            while client.exists("toolsearch:lock:caller"):
                await asyncio.sleep(0.05)
            async with store.catalogs.lease("caller") as held:
                assert held


async def test_a_lease_is_released_only_by_its_owner(redis_server) -> None:
    with redis_server.client() as client:
        async with opened(redis_server.url) as store, store.catalogs.lease("caller") as held:
            assert held
            client.set("toolsearch:lock:caller", "next-holder", px=10_000)  # ours expired, retaken
        assert client.get("toolsearch:lock:caller") == b"next-holder"


async def test_a_lease_taken_by_a_command_whose_answer_was_lost_is_released_when_redis_answers_again(
    redis_server, monkeypatch
) -> None:
    async with opened(redis_server.url, lease_ttl=60) as store:
        taken_unanswered = store.connection.client.set

        async def set_and_lose_the_answer(*args: Any, **kwargs: Any) -> Any:
            await taken_unanswered(*args, **kwargs)
            raise RedisTimeoutError("Timeout reading from socket")

        monkeypatch.setattr(store.connection.client, "set", set_and_lose_the_answer)
        with pytest.raises(StoreUnavailable):
            async with store.catalogs.lease("caller"):
                pass
        monkeypatch.undo()
        with redis_server.client() as client:
            assert client.exists("toolsearch:lock:caller")
            for _ in range(100):
                if not client.exists("toolsearch:lock:caller"):
                    break
                await asyncio.sleep(0.05)
            assert not client.exists("toolsearch:lock:caller"), "left to expire in a minute"


async def test_leaving_a_lease_does_not_wait_for_a_renewal_that_ignores_cancellation(
    redis_server, monkeypatch
) -> None:
    # redis-py on Python 3.11 can swallow a cancellation that lands as a command completes; a
    # renewal stuck so must not keep its holder, or the lease, forever.
    renewing, finish = asyncio.Event(), asyncio.Event()

    async def renewal_ignoring_cancellation(**_: object) -> int:
        renewing.set()
        while not finish.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await finish.wait()
        return 0

    async with opened(redis_server.url, lease_ttl=0.03) as holder, opened(redis_server.url) as other:
        monkeypatch.setattr(holder.catalogs, "_renew", renewal_ignoring_cancellation)

        async def hold() -> None:
            async with holder.catalogs.lease("caller") as held:
                assert held
                await renewing.wait()

        leaving = asyncio.ensure_future(hold())
        done, _ = await asyncio.wait({leaving}, timeout=5)
        finish.set()
        assert leaving in done, "the holder was still waiting for its renewal"
        async with other.catalogs.lease("caller") as taken:
            assert taken


@pytest.fixture(params=["memory", "redis"])
async def pins_store(request, redis_server) -> AsyncIterator[CatalogStore]:
    if request.param == "memory":
        yield MemoryCatalogStore()
    else:
        async with opened(redis_server.url) as store:
            yield store.catalogs


PINNED = {tool.name: tool.digest for tool in TOOLS}


async def test_pins_keep_the_first_digest_of_each_name_and_pin_new_names(pins_store) -> None:
    first = await pins_store.pin_digests("caller", {"a": "1" * 64, "b": "2" * 64}, replace=False)
    changed = await pins_store.pin_digests("caller", {"a": "9" * 64, "c": "3" * 64}, replace=False)
    again = await pins_store.pin_digests(
        "caller", {"a": "9" * 64, "b": "2" * 64, "c": "3" * 64}, replace=False
    )
    assert (first, changed) == ({}, {"a": "1" * 64})
    assert again == {"a": "1" * 64, "b": "2" * 64, "c": "3" * 64}


async def test_replaced_pins_follow_the_listing(pins_store) -> None:
    await pins_store.pin_digests("caller", {"a": "1" * 64, "b": "2" * 64}, replace=True)
    await pins_store.pin_digests("caller", {"a": "9" * 64}, replace=True)
    assert await pins_store.pin_digests("caller", {"a": "0" * 64, "b": "0" * 64}, replace=False) == {
        "a": "9" * 64,
        "b": "2" * 64,
    }


async def test_pins_are_kept_per_catalog(pins_store) -> None:
    await pins_store.pin_digests("caller", {"a": "1" * 64}, replace=False)
    assert await pins_store.pin_digests("other caller", {"a": "9" * 64}, replace=False) == {}


async def test_callers_first_listed_with_the_same_tools_share_one_copy_of_their_pins(redis_server) -> None:
    async with opened(redis_server.url) as store:
        for caller in range(50):
            assert await store.catalogs.pin_digests(f"caller-{caller}", PINNED, replace=False) == {}
        await store.catalogs.pin_digests("changed", {**PINNED, TOOLS[0].name: "0" * 64}, replace=True)
    with redis_server.client() as client:
        pointers = client.keys("toolsearch:pins:*")
        assert (len(pointers), len(client.keys("toolsearch:pinset:*"))) == (51, 2)
        pin_set_bytes = client.memory_usage(client.keys("toolsearch:pinset:*")[0])
        assert max(client.memory_usage(key) for key in pointers) < 200 < pin_set_bytes / 10


async def test_replicas_pinning_one_catalog_at_once_agree_on_the_first_pins(redis_server) -> None:
    changed = {name: "0" * 64 for name in PINNED}
    async with opened(redis_server.url) as first, opened(redis_server.url) as second:
        before = await asyncio.gather(
            first.catalogs.pin_digests("caller", PINNED, replace=False),
            second.catalogs.pin_digests("caller", changed, replace=False),
        )
    assert sorted(before, key=len) in ([{}, PINNED], [{}, changed])


async def test_a_pointer_never_outlives_its_pins(redis_server) -> None:
    async with opened(redis_server.url) as store:
        await store.catalogs.pin_digests("caller", PINNED, replace=False)
    with redis_server.client() as client:
        (pin_set,) = client.keys("toolsearch:pinset:*")
        assert client.pttl("toolsearch:pins:caller") <= client.pttl(pin_set)


@pytest.mark.parametrize("junk", ["pins hash of an earlier version", "unknown address", "altered pin set"])
async def test_unusable_pins_are_replaced_by_the_listing(redis_server, junk) -> None:
    async with opened(redis_server.url) as store:
        with redis_server.client() as client:
            if junk == "pins hash of an earlier version":
                client.hset("toolsearch:pins:caller", mapping={TOOLS[0].name: "0" * 64})
            elif junk == "unknown address":
                client.set("toolsearch:pins:caller", "not an address")
            else:
                await store.catalogs.pin_digests("caller", {TOOLS[0].name: "0" * 64}, replace=False)
                (pin_set,) = client.keys("toolsearch:pinset:*")
                client.set(pin_set, b'{"' + TOOLS[0].name.encode() + b'": "' + b"1" * 64 + b'"}')
        assert await store.catalogs.pin_digests("caller", PINNED, replace=False) == {}
        assert await store.catalogs.pin_digests("caller", PINNED, replace=False) == PINNED


async def test_tool_embeddings_are_kept_per_model_and_tool_digest(redis_server) -> None:
    first, second = TOOLS[0].digest, TOOLS[1].digest
    vector = np.arange(8, dtype=np.float32) / 8
    async with opened(redis_server.url) as store:
        await store.vectors.put_many("e5-small", {first: vector, second: vector * 2})
        found = await store.vectors.get_many("e5-small", [first, second, TOOLS[2].digest])
        other_model = await store.vectors.get_many("potion", [first])
    assert set(found) == {first, second}
    np.testing.assert_array_equal(found[second], vector * 2)
    assert found[first].dtype == np.float32
    assert other_model == {}


async def test_a_broken_embedding_is_left_out(redis_server) -> None:
    async with opened(redis_server.url) as store:
        await store.vectors.put_many("e5-small", {TOOLS[0].digest: np.ones(4, dtype=np.float32)})
        with redis_server.client() as client:
            client.set(f"toolsearch:vectors:e5-small:{TOOLS[0].digest}", b"\x00\x01\x02")
        assert await store.vectors.get_many("e5-small", [TOOLS[0].digest]) == {}


async def test_an_unreachable_redis_reads_as_no_vectors_cached_and_drops_their_writes() -> None:
    async with opened(f"redis://127.0.0.1:{free_port()}/0") as store:
        await store.vectors.put_many("e5-small", {TOOLS[0].digest: np.ones(4, dtype=np.float32)})
        assert await store.vectors.get_many("e5-small", [TOOLS[0].digest]) == {}
        assert (await store.health())["status"] == "down"


@requires_redis
async def test_an_unreachable_redis_answers_unavailable_and_recovers_when_it_comes_back() -> None:
    port = free_port()
    async with opened(f"redis://127.0.0.1:{port}/0") as store:
        with pytest.raises(StoreUnavailable):
            await store.catalogs.listed_at("caller")
        with pytest.raises(StoreUnavailable):  # left alone for a while: no second attempt
            await store.catalogs.put("caller", record())
        assert (await store.health())["status"] == "down"
        with RedisServer(port=port):
            while (await store.health())["status"] == "down":
                await asyncio.sleep(0.1)
            await store.catalogs.put("caller", record())
            assert await store.catalogs.get("caller") is not None
    assert store.connection.outages == 1


async def test_a_server_answering_garbage_is_treated_as_unavailable() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)
        writer.write(b"\x00\xffnot the redis protocol\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(garbage, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with opened(f"redis://127.0.0.1:{port}/0") as store:
            with pytest.raises(StoreUnavailable):
                await store.catalogs.get("caller")
            assert (await store.health())["status"] == "down"
    finally:
        server.close()
        await server.wait_closed()


async def test_a_sentinel_url_finds_the_master_through_the_sentinel(redis_server) -> None:
    sentinel = RedisServer()
    sentinel.start_sentinel(redis_server.port, service="catalogs")
    with sentinel:
        async with opened(f"redis+sentinel://127.0.0.1:{sentinel.port}/catalogs/0") as store:
            await store.catalogs.put("caller", record())
            assert await store.catalogs.get("caller") is not None
    with redis_server.client() as client:
        assert client.keys("toolsearch:catalog:*")
