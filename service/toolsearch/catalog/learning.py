"""Search that learns from use, served: each catalog's ranking learns from the calls after searches.

`search.learning` holds the arithmetic; this module feeds it. A search of a caller keeps, in this
process only and for the outcome window, the request vectors of its queries (at most
`MAX_PENDING` searches a caller; never the text). When `outcomes` links the caller's next call to
that search and the search did not put the called tool first (it ranked it lower, did not show
it, or the caller searched again before calling), each pending vector is taught to the called
tool's aggregate in the store (`backends.LearningStore`), under the catalog's toolset digest: callers
whose catalogs hold the same tools share what is learned, and no other catalog sees it. The
contributor is the caller's identity key hashed with that digest (`search.learning.contributor`).

Each catalog's index holds its effective aggregates as a `LearnedCatalog` (`HybridIndex.learned`),
read from the store when a search finds it older than `REFRESH_SECONDS` and right after this
process taught it: another replica, or this one after a restart, sees what was learned within
that time. A catalog still ranked by BM25 alone (its vectors not ready) learns nothing.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from cachetools import TTLCache

from toolsearch.backends.base import LearningStore, StoreUnavailable
from toolsearch.catalog.service import Catalog
from toolsearch.identity import Identifier
from toolsearch.mcp.caller import CallerHeaders
from toolsearch.search.learning import LearnedCatalog, LearningPolicy, contributor
from toolsearch.telemetry import Telemetry

if TYPE_CHECKING:  # the models' modules load only where a profile is served
    from toolsearch.search.hybrid import HybridIndex

REFRESH_SECONDS: Final = 30.0
MAX_PENDING: Final = 3
_MAX_CALLERS: Final = 100_000


@dataclass(frozen=True, slots=True)
class _Pending:
    catalog: str
    vectors: tuple[np.ndarray, ...]


def hybrid_index(catalog: Catalog) -> HybridIndex | None:
    """The catalog's hybrid index, if it is ranked by one yet (a `ProgressiveIndex` serves its
    `current` index; only a `HybridIndex` has `learned`)."""
    index: Any = getattr(catalog.index, "current", catalog.index)
    return index if hasattr(index, "learned") else None


class CatalogLearning:
    """What each catalog learns from use; `counts()` is what `/stats` shows of it."""

    def __init__(
        self,
        store: LearningStore,
        policy: LearningPolicy,
        identifier: Identifier,
        *,
        window: float,
        telemetry: Telemetry | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._identifier = identifier
        self._telemetry = telemetry or Telemetry(use_environment=False)
        self.policy = policy
        self._clock = clock
        self._pending: TTLCache[str, list[_Pending]] = TTLCache(_MAX_CALLERS, ttl=window)
        self._refreshed: weakref.WeakKeyDictionary[HybridIndex, float] = weakref.WeakKeyDictionary()
        self.taught = 0
        """Contributions this process added (a caller counts once per tool)."""
        self.lessons = 0
        """Calls after a search that did not put the called tool first."""

    def vectors(self, catalog: Catalog, queries: Sequence[str]) -> tuple[np.ndarray, ...]:
        """The request vectors of `queries` as the catalog's index read them (its query cache
        holds them already: the search just embedded them). Runs where searches run."""
        index = hybrid_index(catalog)
        if index is None:
            return ()
        return tuple(index.query_vectors(index.request(query).request) for query in queries)

    async def searched(
        self, caller: CallerHeaders, catalog: Catalog, vectors: tuple[np.ndarray, ...]
    ) -> None:
        """`caller` searched `catalog`; the request's `vectors` wait for its call."""
        if not vectors:
            return
        key = await self._key(caller)
        pending = [each for each in self._pending.get(key, []) if each.catalog == catalog.digest]
        self._pending[key] = [*pending, _Pending(catalog.digest, vectors)][-MAX_PENDING:]

    async def called(self, caller: CallerHeaders, catalog: Catalog, name: str, rank: int | None) -> None:
        """`caller` called `name` after a search that ranked it `rank` (0: not shown; None: no
        search pending): teach the tool the pending requests unless the search put it first."""
        key = await self._key(caller)
        pending = self._pending.pop(key, [])
        if rank is None or (rank == 1 and len(pending) == 1):
            return
        tool = catalog.get(name)
        index = hybrid_index(catalog)
        if tool is None or index is None or catalog.suspicious(name):
            return
        self.lessons += 1
        who = contributor(catalog.digest, key)
        for search in pending:
            if search.catalog != catalog.digest:
                continue
            for vector in search.vectors:
                try:
                    if await self._store.teach(catalog.digest, name, vector, who, tool.digest, self.policy):
                        self.taught += 1
                        self._telemetry.learning_contributions.add(1)
                except StoreUnavailable:
                    return
        await self._refresh(catalog, index)

    async def before_search(self, catalog: Catalog) -> None:
        """Bring the catalog's learned evidence up to date when it is older than `REFRESH_SECONDS`."""
        index = hybrid_index(catalog)
        if index is not None and self._clock() - self._refreshed.get(index, 0.0) >= REFRESH_SECONDS:
            await self._refresh(catalog, index)

    async def forget(self, catalog: Catalog) -> None:
        """Drop what `catalog` learned, here and in the store."""
        await self._store.forget(catalog.digest)
        index = hybrid_index(catalog)
        if index is not None:
            index.learned = None

    def counts(self) -> dict[str, Any]:
        """This process's counts since it started (replicas' add up, `outcomes.merge_counts`)."""
        return {"lessons": self.lessons, "contributions": self.taught}

    async def _refresh(self, catalog: Catalog, index: HybridIndex) -> None:
        now = self._clock()
        try:
            aggregates = await self._store.aggregates(catalog.digest)
        except StoreUnavailable:
            return
        tools = [(tool.name, tool.digest) for tool in catalog.tools]
        flagged = [tool.name for tool in catalog.tools if catalog.suspicious(tool.name)]
        index.learned = LearnedCatalog.of(aggregates, tools, flagged, now, self.policy)
        self._refreshed[index] = now

    async def _key(self, caller: CallerHeaders) -> str:
        return (await self._identifier.identify(caller.authorization)).key
