"""One way to build an index from a profile: BM25F alone, or hybrid with the profile's models.

`build_index` and `profile_index` build an index at once (eval, `toolsearch search`, training);
`index_builder` makes what a proxy's `CatalogService` builds each distinct catalog's index with: a
`ProgressiveIndex`, BM25F at once and hybrid once the catalog is embedded in the background. No
pool or task is made here: whoever builds an index hands in the threads its request runs go to
(`query_runs`), and a proxy's builder starts its work through the proxy's `Supervisor`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Literal, Protocol

import numpy as np

from toolsearch.embedding import Embedder
from toolsearch.runtime import Supervisor
from toolsearch.search import SearchIndex
from toolsearch.search.abstention import Abstainer
from toolsearch.search.dictionaries import Dictionaries
from toolsearch.search.hybrid import Companion, DenseIndex, HybridIndex, QueryVectors
from toolsearch.search.isolation import Neighbourhoods
from toolsearch.search.lexical import LexicalIndex
from toolsearch.search.profile import Profile
from toolsearch.search.progressive import EmbeddingWorker, ProgressiveIndex
from toolsearch.search.ranking import Ranker
from toolsearch.search.semantic import SemanticIndex, cached_ids
from toolsearch.search.vectors import MemoryVectorCache, VectorCache, VectorStore
from toolsearch.tool import Tool

Mode = Literal["bm25", "dense", "hybrid"]

EMBEDDING_WAIT_SECONDS = 1.0
"""How long building an index waits for its hybrid form before serving BM25F meanwhile."""
_WRITE_BACK_SECONDS = 5.0
"""How long closing waits for the new vectors of the catalogs embedded last to be written back."""


def build_index(
    tools: Sequence[Tool],
    embedder: Embedder | None = None,
    *,
    mode: Mode = "hybrid",
    cache: VectorCache | None = None,
    query_vectors: QueryVectors | None = None,
    companions: Sequence[QueryVectors] = (),
    ranker: Ranker | None = None,
    dictionaries: Dictionaries | None = None,
    abstainer: Abstainer | None = None,
    query_runs: Executor | None = None,
) -> SearchIndex:
    """The index of `tools`: BM25F alone without an embedder (or in mode bm25), else hybrid or
    dense, with the `companions`' models, the `ranker` and its `abstainer` (in hybrid mode) and
    the `dictionaries` that translate queries; tool vectors come from `cache` where it has them.
    A request's models run at once on `query_runs` (the caller's pool), else one after another."""
    lexical = LexicalIndex.build(tools)
    if embedder is None or mode == "bm25":
        return lexical
    return _with_models(
        lexical,
        tools,
        cache if cache is not None else MemoryVectorCache(),
        query_vectors=query_vectors if query_vectors is not None else QueryVectors(embedder),
        companions=companions if mode == "hybrid" else (),
        ranker=ranker if mode == "hybrid" else None,
        dictionaries=dictionaries,
        mode=mode,
        query_runs=query_runs,
        abstainer=abstainer if mode == "hybrid" else None,
    )


def profile_index(
    tools: Sequence[Tool],
    profile: Profile,
    *,
    mode: Mode = "hybrid",
    cache: VectorCache | None = None,
    query_runs: Executor | None = None,
) -> SearchIndex:
    """`build_index` with a profile's models (the first, then companions), ranker, abstainer and
    dictionaries; BM25F alone for a profile without models."""
    first, *companions = profile.models or (None,)
    return build_index(
        tools,
        first,
        mode=mode,
        cache=cache,
        companions=[QueryVectors(model) for model in companions],
        ranker=profile.ranker,
        dictionaries=profile.dictionaries,
        abstainer=profile.abstainer,
        query_runs=query_runs,
    )


def _with_models(
    lexical: LexicalIndex,
    tools: Sequence[Tool],
    cache: VectorCache,
    *,
    query_vectors: QueryVectors,
    companions: Sequence[QueryVectors],
    ranker: Ranker | None = None,
    dictionaries: Dictionaries | None = None,
    mode: Literal["dense", "hybrid"] = "hybrid",
    query_runs: Executor | None = None,
    abstainer: Abstainer | None = None,
    neighbourhoods: Neighbourhoods | None = None,
) -> SearchIndex:
    semantic = SemanticIndex.build(tools, query_vectors.embedder, cache, neighbourhoods=neighbourhoods)
    joined = [
        Companion(
            SemanticIndex.build(tools, queries.embedder, cache, words=False, neighbourhoods=neighbourhoods),
            queries,
        )
        for queries in companions
    ]
    index = HybridIndex(
        lexical,
        semantic,
        query_vectors,
        companions=joined,
        ranker=ranker,
        dictionaries=dictionaries,
        query_runs=query_runs,
        abstainer=abstainer,
    )
    return DenseIndex(index) if mode == "dense" else index


class IndexBuilder(Protocol):
    """What `CatalogService` builds each distinct catalog's index with, on the event loop."""

    async def __call__(self, tools: Sequence[Tool]) -> SearchIndex: ...

    async def aclose(self) -> None:
        """Write back the vectors embedded last, within a bound (once the `EmbeddingWorker` closed)."""
        ...


class LexicalBuilder:
    """BM25F alone (no model), built on `executor`."""

    def __init__(self, executor: Executor) -> None:
        self._executor = executor

    async def __call__(self, tools: Sequence[Tool]) -> SearchIndex:
        return await asyncio.get_running_loop().run_in_executor(self._executor, LexicalIndex.build, tools)

    async def aclose(self) -> None:
        pass


class ProgressiveBuilder:
    """Each index a `ProgressiveIndex`: BM25F at once, hybrid once the catalog is embedded in the
    background. One vector store and one query-vector cache per model, shared by every catalog of
    the process.

    The event loop asks `store` for the catalog's cached vectors, the `EmbeddingWorker` runs the
    models for the missing ones and builds the hybrid index from them, and the event loop writes
    the new ones back: the build never waits on the store, nor the store on a model."""

    def __init__(
        self,
        models: Sequence[Embedder],
        store: VectorStore,
        hybrid: Callable[[LexicalIndex, Sequence[Tool], VectorCache], SearchIndex],
        *,
        embedding: EmbeddingWorker,
        supervisor: Supervisor,
        executor: Executor,
        wait_seconds: float = EMBEDDING_WAIT_SECONDS,
    ) -> None:
        self._models = tuple(models)
        self._supervisor = supervisor
        self._store = store
        self._hybrid = hybrid
        self._embedding = embedding
        self._wait_seconds = wait_seconds
        self._executor = executor
        self._last: asyncio.Task[None] | None = None
        """The catalog embedded last, whose vectors the next one waits for (they share tools)."""
        self._under_way: set[asyncio.Task[None]] = set()

    async def __call__(self, tools: Sequence[Tool]) -> SearchIndex:
        loop = asyncio.get_running_loop()
        lexical, wanted = await loop.run_in_executor(self._executor, self._prepare, tools)
        index = ProgressiveIndex(lexical)
        upgraded = loop.create_future()
        self._last = self._supervisor.start(
            self._embed(index, lexical, tools, wanted, upgraded, self._last), name="catalog embedding"
        )
        self._under_way.add(self._last)
        self._last.add_done_callback(self._under_way.discard)
        await asyncio.wait([upgraded], timeout=self._wait_seconds)
        return index

    async def aclose(self) -> None:
        under_way = list(self._under_way)
        if under_way:
            await asyncio.wait(under_way, timeout=_WRITE_BACK_SECONDS)
        for task in under_way:
            task.cancel()
        await asyncio.gather(*under_way, return_exceptions=True)

    def _prepare(self, tools: Sequence[Tool]) -> tuple[LexicalIndex, dict[str, list[str]]]:
        """The catalog's BM25F index, and the ids of the vectors its hybrid index needs, by key."""
        wanted = cached_ids(tools, self._models[0])
        for companion in self._models[1:]:
            wanted.update(cached_ids(tools, companion, words=False))
        return LexicalIndex.build(tools), wanted

    async def _embed(
        self,
        index: ProgressiveIndex,
        lexical: LexicalIndex,
        tools: Sequence[Tool],
        wanted: dict[str, list[str]],
        upgraded: asyncio.Future[None],
        previous: asyncio.Task[None] | None,
    ) -> None:
        """After the catalog before it: fetch the vectors the store has, let the worker embed the
        rest and build the hybrid index, then write the new vectors back (also those of a build
        that failed part way)."""
        try:
            if previous is not None:
                await asyncio.wait([previous])
            found = _Found({key: await self._store.get_many(key, ids) for key, ids in wanted.items() if ids})
            job = functools.partial(self._hybrid, lexical, tools, found)
            await asyncio.wrap_future(self._embedding.submit(index, job))
        finally:
            upgraded.set_result(None)
        for key, vectors in found.new.items():
            await self._store.put_many(key, vectors)


class _Found:
    """A `VectorCache` holding the vectors fetched for one catalog, and those its build computes."""

    def __init__(self, fetched: dict[str, dict[str, np.ndarray]]) -> None:
        self._vectors = fetched
        self.new: dict[str, dict[str, np.ndarray]] = {}

    def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        held = self._vectors.get(model, {})
        return {digest: held[digest] for digest in digests if digest in held}

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        self.new.setdefault(model, {}).update(vectors)
        self._vectors.setdefault(model, {}).update(vectors)


def index_builder(
    models: Sequence[Embedder],
    store: VectorStore,
    supervisor: Supervisor,
    *,
    executor: Executor,
    embedding: EmbeddingWorker | None = None,
    wait_seconds: float = EMBEDDING_WAIT_SECONDS,
    ranker: Ranker | None = None,
    dictionaries: Dictionaries | None = None,
    abstainer: Abstainer | None = None,
) -> IndexBuilder:
    """What `CatalogService` builds each distinct catalog's index with: BM25F alone without
    `models` (built on `executor`); else a `ProgressiveBuilder` of hybrid indexes with the first
    model, the others as companions, the `ranker`, its `abstainer` and the `dictionaries`,
    embedded by `embedding` (a worker of `supervisor`'s by default); the build waits up to
    `wait_seconds` for the hybrid index."""
    if not models:
        return LexicalBuilder(executor)
    first, *companions = models
    embedding = embedding or EmbeddingWorker((), supervisor)
    hybrid = functools.partial(
        _with_models,
        query_vectors=QueryVectors(first),
        companions=[QueryVectors(companion) for companion in companions],
        ranker=ranker,
        dictionaries=dictionaries,
        abstainer=abstainer,
        query_runs=embedding.query_runs,
        neighbourhoods=Neighbourhoods(),
    )
    return ProgressiveBuilder(
        models,
        store,
        hybrid,
        embedding=embedding,
        supervisor=supervisor,
        executor=executor,
        wait_seconds=wait_seconds,
    )
