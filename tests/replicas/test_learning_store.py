"""The store of what catalogs learned from use (`LearningStore`), in process and in a real Redis:
the same rules either way."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from tests.replicas.conftest import requires_redis
from toolsearch.backends.base import LearningStore
from toolsearch.backends.memory import MemoryLearning
from toolsearch.backends.redis_connection import Connection, connect
from toolsearch.backends.redis_learning import RedisLearning
from toolsearch.search.learning import MAX_TOOLS, LearningPolicy
from toolsearch.testing import RedisServer

POLICY = LearningPolicy(k=2)
VECTOR = np.array([0.6, 0.8, 0.0], dtype=np.float32)


@pytest.fixture(params=["memory", pytest.param("redis", marks=requires_redis)])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[LearningStore]:
    if request.param == "memory":
        yield MemoryLearning()
        return
    with RedisServer() as server:
        connection = Connection(connect(server.url, timeout=2.0), prefix="toolsearch:", timeout=2.0)
        yield RedisLearning(connection)
        await connection.client.aclose()


async def test_a_contributor_counts_once_per_tool(store: LearningStore) -> None:
    assert await store.teach("catalog", "tool", VECTOR, "who", "digest", POLICY)
    assert not await store.teach("catalog", "tool", VECTOR, "who", "digest", POLICY)
    assert await store.teach("catalog", "tool", VECTOR, "other", "digest", POLICY)
    aggregate = (await store.aggregates("catalog"))["tool"]
    assert aggregate.contributors == ("who", "other")
    np.testing.assert_allclose(aggregate.total, 2 * VECTOR, rtol=1e-5)


async def test_catalogs_learn_apart_and_one_is_forgotten_alone(store: LearningStore) -> None:
    await store.teach("one", "tool", VECTOR, "who", "digest", POLICY)
    await store.teach("two", "tool", VECTOR, "who", "digest", POLICY)
    await store.forget("one")
    assert await store.aggregates("one") == {}
    assert set(await store.aggregates("two")) == {"tool"}


async def test_a_catalogs_aggregates_are_bounded(store: LearningStore) -> None:
    for number in range(MAX_TOOLS + 5):
        await store.teach("catalog", f"tool-{number}", VECTOR, "who", "digest", POLICY)
    assert len(await store.aggregates("catalog")) == MAX_TOOLS
