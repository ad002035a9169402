"""One way to build an index from a profile: BM25F alone, or hybrid with the profile's models.

`build_index` and `profile_index` build an index at once (eval, `toolsearch search`, training);
`index_builder` makes what a proxy's `CatalogService` builds each distinct catalog's index with: a
`ProgressiveIndex`, BM25F at once and hybrid once the catalog is embedded in the background.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Literal

from toolsearch.embedding import Embedder
from toolsearch.search import SearchIndex
from toolsearch.search.abstention import Abstainer
from toolsearch.search.dictionaries import Dictionaries
from toolsearch.search.hybrid import QUERY_RUNS, Companion, HybridIndex, QueryVectors
from toolsearch.search.inspection import DenseIndex
from toolsearch.search.lexical import LexicalIndex
from toolsearch.search.profile import Profile
from toolsearch.search.progressive import EmbeddingWorker, ProgressiveIndex
from toolsearch.search.ranking import Ranker
from toolsearch.search.semantic import SemanticIndex
from toolsearch.search.vectors import MemoryVectorCache, VectorCache
from toolsearch.tool import Tool

Mode = Literal["bm25", "dense", "hybrid"]

EMBEDDING_WAIT_SECONDS = 1.0
"""How long building an index waits for its hybrid form before serving BM25F meanwhile."""


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
) -> SearchIndex:
    """The index of `tools`: BM25F alone without an embedder (or in mode bm25), else hybrid or
    dense, with the `companions`' models, the `ranker` and its `abstainer` (in hybrid mode) and
    the `dictionaries` that translate queries; tool vectors come from `cache` where it has them."""
    lexical = LexicalIndex.build(tools)
    if embedder is None or mode == "bm25":
        return lexical
    return _with_models(
        lexical,
        tools,
        query_vectors or QueryVectors(embedder),
        cache if cache is not None else MemoryVectorCache(),
        companions if mode == "hybrid" else (),
        ranker if mode == "hybrid" else None,
        dictionaries,
        mode,
        abstainer=abstainer if mode == "hybrid" else None,
    )


def profile_index(
    tools: Sequence[Tool], profile: Profile, *, mode: Mode = "hybrid", cache: VectorCache | None = None
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
    )


def _with_models(
    lexical: LexicalIndex,
    tools: Sequence[Tool],
    query_vectors: QueryVectors,
    cache: VectorCache,
    companions: Sequence[QueryVectors],
    ranker: Ranker | None = None,
    dictionaries: Dictionaries | None = None,
    mode: Literal["dense", "hybrid"] = "hybrid",
    query_runs: Executor | None = QUERY_RUNS,
    abstainer: Abstainer | None = None,
) -> SearchIndex:
    semantic = SemanticIndex.build(tools, query_vectors.embedder, cache)
    joined = [
        Companion(SemanticIndex.build(tools, queries.embedder, cache, words=False), queries)
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


def index_builder(
    embedder: Embedder | None,
    cache: VectorCache | None = None,
    companions: Sequence[Embedder] = (),
    *,
    wait_seconds: float = EMBEDDING_WAIT_SECONDS,
    embedding: EmbeddingWorker | None = None,
    ranker: Ranker | None = None,
    dictionaries: Dictionaries | None = None,
    abstainer: Abstainer | None = None,
) -> Callable[[Sequence[Tool]], SearchIndex]:
    """What `CatalogService` builds each distinct catalog's index with: one vector cache and one
    query-vector cache per model, shared by every catalog of the process.

    With a model, each index is a `ProgressiveIndex`: BM25F at once, hybrid once the catalog is
    embedded in the background (by `embedding`, a new one by default); the build waits up to
    `wait_seconds` for the hybrid index."""
    if embedder is None:
        return LexicalIndex.build
    shared_cache = cache if cache is not None else MemoryVectorCache()
    shared_queries = QueryVectors(embedder)
    companion_queries = [QueryVectors(companion) for companion in companions]
    background = embedding or EmbeddingWorker()

    def build(tools: Sequence[Tool]) -> SearchIndex:
        lexical = LexicalIndex.build(tools)
        index = ProgressiveIndex(lexical)
        background.submit(
            index,
            functools.partial(
                _with_models,
                lexical,
                tools,
                shared_queries,
                shared_cache,
                companion_queries,
                ranker,
                dictionaries,
                abstainer=abstainer,
                query_runs=background.query_runs,
            ),
        )
        index.upgraded.wait(wait_seconds)
        return index

    return build
