"""Ranking changes may not lower search quality below the recorded figures.

A fixed slice of the dev set: the recorded catalog's tools of `SERVERS` (conftest), every dev
query with a gold tool among them (gold limited to them), and the unservable ones. BM25 is
measured always; hybrid as shipped, multilingual-e5-small with Universal Sentence Encoder
multilingual as its companion, skipped only when a model package or onnx is not installed; the
learned ranking with the dictionaries, skipped when they are not installed. Deterministic: no
timing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.search_quality.conftest import SERVERS, server_of
from toolsearch.embedding import Embedder
from toolsearch.search.build import build_index
from toolsearch.search.dictionaries import Dictionaries
from toolsearch.search.hybrid import QueryVectors
from toolsearch.search.offline.evaluation import Query, load_queries, run_queries, summarize
from toolsearch.search.ranking import Ranker
from toolsearch.search.vectors import MemoryVectorCache
from toolsearch.tool import Tool

DEV_QUERIES = Path(__file__).parents[2] / "bench" / "data" / "queries-dev.jsonl"
LONG_QUERIES = Path(__file__).parents[2] / "bench" / "data" / "queries-dev-long-held.jsonl"
"""The English dev requests with a story around them (`python -m bench.long_requests`)."""
# Recorded on this slice (119 servable, 12 unservable queries over 1,198 tools) with the figures in
# docs/search-quality.md. Recall holds exactly, but for the hand-set fusion, whose margins are the
# thinnest: onnxruntime's kernels differ by processor (an AVX-512 Xeon ranks one query of the slice
# otherwise than an AVX2 EPYC: 79 against 80), so its floor is the lower of the two. Abstention,
# which hangs on thresholds, gets one query of slack.
BM25_RECALL_AT_5 = 63 / 119
HYBRID_RECALL_AT_5 = 79 / 119
HYBRID_ABSTAINED_ON_UNSERVABLE = (10 - 1) / 12
HYBRID_WRONGLY_ABSTAINED = (15 + 1) / 119
LEARNED_RECALL_AT_5 = 88 / 119
"""The shipped ranker with the dictionaries on this slice: 88 on an AMD EPYC without AVX-512, whose
kernels round the models' floating point otherwise than the machine that trained it (the fusion: 80).
The bound on dense evidence (`search.isolation`) costs 1 of them (the fusion 2): the price of hostile
tools in the top 5 of 4.6% of requests instead of 10% (docs/security.md)."""
LEARNED_ABSTAINED_ON_UNSERVABLE = (10 - 1) / 12
LEARNED_WRONGLY_ABSTAINED = (10 + 1) / 119
"""Abstention with the dictionaries: their words count in the lexical score it judges."""
BM25_LONG_RECALL_AT_5 = 214 / 350
"""The held-out long requests on this slice (each ranked whole only: 202). 215 before a name's
words its text never says counted half (dev recall@5 +1 of 248, this -1 of 350)."""


def _sliced(path: Path) -> list[Query]:
    sliced = []
    for query in load_queries(path):
        gold = frozenset(name for name in query.gold if server_of(name) in SERVERS)
        if gold or not query.gold:
            sliced.append(Query(query.id, query.text, query.lang, gold, query.kind))
    return sliced


@pytest.fixture(scope="module")
def queries() -> list[Query]:
    return _sliced(DEV_QUERIES)


def _report(tools: list[Tool], queries: list[Query], **options: object) -> dict:
    index = build_index(tools, **options)
    return summarize(run_queries(index.search, [tool.name for tool in tools], queries))


def test_bm25_recall_at_5_holds(tools: list[Tool], queries: list[Query]) -> None:
    assert _report(tools, queries)["overall"]["recall@5"] >= BM25_RECALL_AT_5


def test_bm25_recall_at_5_on_long_requests_holds(tools: list[Tool]) -> None:
    assert _report(tools, _sliced(LONG_QUERIES))["overall"]["recall@5"] >= BM25_LONG_RECALL_AT_5


@pytest.fixture(scope="module")
def hybrid_report(
    tools: list[Tool], queries: list[Query], models: list[Embedder], cache: MemoryVectorCache
) -> dict:
    companion = QueryVectors(models[1])
    return _report(tools, queries, embedder=models[0], companions=[companion], cache=cache)


@pytest.fixture(scope="module")
def learned_report(
    tools: list[Tool],
    queries: list[Query],
    models: list[Embedder],
    cache: MemoryVectorCache,
    shipped_ranker: Ranker,
    dictionaries: Dictionaries,
) -> dict:
    companion = QueryVectors(models[1])
    return _report(
        tools,
        queries,
        embedder=models[0],
        companions=[companion],
        cache=cache,
        ranker=shipped_ranker,
        dictionaries=dictionaries,
    )


def test_the_shipped_ranker_was_trained_for_the_models_and_dictionaries_the_packages_make(
    models: list[Embedder], shipped_ranker: Ranker, dictionaries: Dictionaries
) -> None:
    assert shipped_ranker.fits([model.fingerprint for model in models], dictionaries)


FLOORS = {
    "learned": (LEARNED_RECALL_AT_5, LEARNED_ABSTAINED_ON_UNSERVABLE, LEARNED_WRONGLY_ABSTAINED),
    "hybrid": (HYBRID_RECALL_AT_5, HYBRID_ABSTAINED_ON_UNSERVABLE, HYBRID_WRONGLY_ABSTAINED),
}
"""Recall@5, abstention on unservable requests and wrong abstention on servable ones, by ranking."""
RANKINGS = pytest.mark.parametrize("ranking", list(FLOORS))


def _ranking_report(request: pytest.FixtureRequest, ranking: str) -> dict:
    return request.getfixturevalue(f"{ranking}_report")


@RANKINGS
def test_recall_at_5_holds(request: pytest.FixtureRequest, ranking: str) -> None:
    assert _ranking_report(request, ranking)["overall"]["recall@5"] >= FLOORS[ranking][0]


@RANKINGS
def test_ranking_abstains_on_unservable_requests(request: pytest.FixtureRequest, ranking: str) -> None:
    abstention = _ranking_report(request, ranking)["abstention"]
    assert abstention["abstained_on_unservable"] >= FLOORS[ranking][1]


@RANKINGS
def test_ranking_rarely_abstains_on_servable_requests(request: pytest.FixtureRequest, ranking: str) -> None:
    abstention = _ranking_report(request, ranking)["abstention"]
    assert abstention["wrongly_abstained_on_servable"] <= FLOORS[ranking][2]
