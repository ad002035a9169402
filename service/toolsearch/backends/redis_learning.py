"""What catalogs learned from use (`search.learning`), in Redis: every replica, and a restart, see it.

One hash per catalog, `learning:<catalog digest>`, a field per tool holding its aggregate: the
digest of the definition it was learned for, the decayed weight, the time of the last contribution,
the contributors' keyed hashes and the float32 sum of their unit request vectors. At most
`MAX_TOOLS` fields (a full catalog learns no further tool until its hash expires), and the hash
expires `EXPIRY_HALF_LIVES` half-lives after its last contribution, when what it held counts for
less than a sixteenth. A contribution is read, added to in Python and written back only if the
field did not change meanwhile (`TEACH`, compare and set), tried again a few times when it did.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

import numpy as np
import orjson

from toolsearch.backends.base import StoreUnavailable
from toolsearch.backends.memory import MemoryLearning
from toolsearch.backends.redis_connection import TEACH, Connection, CorruptEntry
from toolsearch.search.learning import MAX_TOOLS, LearningPolicy, ToolAggregate, contribute

EXPIRY_HALF_LIVES: Final = 4
_ATTEMPTS: Final = 3


def encoded(aggregate: ToolAggregate) -> bytes:
    head = {
        "definition": aggregate.definition,
        "mass": aggregate.mass,
        "updated": aggregate.updated,
        "contributors": list(aggregate.contributors),
    }
    return orjson.dumps(head) + b"\n" + np.ascontiguousarray(aggregate.total, dtype="<f4").tobytes()


def decoded(raw: object) -> ToolAggregate | None:
    """The aggregate `encoded` wrote; None for anything else."""
    if not isinstance(raw, bytes):
        return None
    head, _, vector = raw.partition(b"\n")
    try:
        fields = orjson.loads(head)
        if len(vector) % 4 or not vector:
            return None
        return ToolAggregate(
            str(fields["definition"]),
            np.frombuffer(vector, dtype="<f4").copy(),
            float(fields["mass"]),
            tuple(str(each) for each in fields["contributors"]),
            float(fields["updated"]),
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


class RedisLearning:
    """`LearningStore` in Redis; while Redis is unavailable, in this process."""

    def __init__(self, connection: Connection, clock: Callable[[], float] = time.time) -> None:
        self._redis = connection
        self._clock = clock
        self._local = MemoryLearning(clock=clock)

    async def aggregates(self, catalog: str) -> dict[str, ToolAggregate]:
        key = self._redis.keys.learning(catalog)
        try:
            raw = await self._redis.ask(lambda: self._redis.client.hgetall(key))
        except StoreUnavailable:
            return await self._local.aggregates(catalog)
        except CorruptEntry:
            await self._redis.discard(key)
            return {}
        found = {}
        for name, value in raw.items():
            aggregate = decoded(value)
            if aggregate is not None:
                found[name.decode() if isinstance(name, bytes) else str(name)] = aggregate
        return found

    async def teach(
        self, catalog: str, tool: str, vector: np.ndarray, who: str, definition: str, policy: LearningPolicy
    ) -> bool:
        key = self._redis.keys.learning(catalog)
        ttl_ms = max(1, int(EXPIRY_HALF_LIVES * policy.half_life * 1000))
        try:
            for _ in range(_ATTEMPTS):
                stored = await self._redis.ask(lambda: self._redis.client.hget(key, tool))
                taught = contribute(
                    decoded(stored) if stored else None, vector, who, definition, self._clock(), policy
                )
                if taught is None:
                    return False
                written = await self._redis.evaluate(
                    TEACH, key, tool, stored or b"", encoded(taught), MAX_TOOLS, ttl_ms
                )
                if written != 0:
                    return bool(written == 1)
            return False
        except StoreUnavailable:
            return await self._local.teach(catalog, tool, vector, who, definition, policy)
        except CorruptEntry:
            await self._redis.discard(key)
            return False

    async def forget(self, catalog: str) -> None:
        key = self._redis.keys.learning(catalog)
        await self._local.forget(catalog)
        await self._redis.ask(lambda: self._redis.client.delete(key))
