"""Hybrid ranking with a tiny generated model: fusion, named tools, abstention, shared vectors."""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from tests.embedding.tiny_models import describe, token_states_graph, token_table, write_model
from toolsearch.backends.memory import MemoryVectors
from toolsearch.embedding import Embedder, EmbedderClosed, load_model
from toolsearch.embedding.manifest import AbstentionThreshold, Calibration, seal
from toolsearch.runtime import Supervisor
from toolsearch.search import SearchIndex
from toolsearch.search.build import IndexBuilder, build_index, index_builder
from toolsearch.search.dictionaries import Dictionaries, Dictionary, Table
from toolsearch.search.hybrid import (
    Companion,
    DenseIndex,
    HybridIndex,
    QueryVectors,
    embed_at_once,
)
from toolsearch.search.lexical import LexicalIndex
from toolsearch.search.offline.inspection import explain, translations
from toolsearch.search.progressive import EmbeddingWorker, ProgressiveIndex
from toolsearch.search.request import TRANSLATED_WORDS, intent
from toolsearch.search.semantic import SemanticIndex, catalog_words, description_passage, passage
from toolsearch.search.sentences import sentences
from toolsearch.search.vectors import MemoryVectorCache
from toolsearch.tool import Tool, ToolInterner

WORDS = ["find", "files", "folder", "create", "delete", "issue", "weather", "forecast", "city", "tracker"]
DEFINITIONS = [
    {"name": "files_find_files", "description": "Find files in a folder.", "inputSchema": {}},
    {"name": "tracker_create_issue", "description": "Create an issue in the tracker.", "inputSchema": {}},
    {"name": "tracker_delete_issue", "description": "Delete an issue in the tracker.", "inputSchema": {}},
    {"name": "weather_forecast", "description": "Weather forecast for a city.", "inputSchema": {}},
]
NEVER = AbstentionThreshold(cosine=-2.0, lexical=0.0)
ALWAYS = AbstentionThreshold(cosine=2.0, lexical=math.inf)


def _tokenizer(words: list[str] = WORDS) -> Tokenizer:
    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "q:", "p:", *words])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    return tokenizer


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    directory: Path = tmp_path_factory.mktemp("tiny") / "model"
    write_model(directory, tokenizer=_tokenizer())
    return load_model(directory)


@pytest.fixture(scope="module")
def tools() -> list[Tool]:
    interner = ToolInterner()
    return [interner.intern(definition) for definition in DEFINITIONS]


@pytest.fixture(scope="module")
def query_runs() -> Iterator[ThreadPoolExecutor]:
    """The threads a request's further model runs go to, as a proxy's worker has them."""
    with ThreadPoolExecutor(2, thread_name_prefix="toolsearch-query-test") as runs:
        yield runs


def builder(
    models: Sequence[Embedder], store: MemoryVectors, supervisor: Supervisor, **options: Any
) -> IndexBuilder:
    """A proxy's index builder over `store`, its work on `supervisor`'s threads."""
    return index_builder(models, store, supervisor, executor=supervisor.pool("work"), **options)


def _hybrid(tools: list[Tool], embedder: Embedder, **options: object) -> HybridIndex:
    index = build_index(tools, embedder, **options)
    assert isinstance(index, HybridIndex)
    return index


def _names(index: SearchIndex, tools: list[Tool], query: str) -> list[str]:
    return [tools[hit.position].name for hit in index.search(query, 4)]


def test_dense_mode_ranks_by_cosine_to_the_tool_passage(tools: list[Tool], embedder: Embedder) -> None:
    index = build_index(tools, embedder, mode="dense")
    assert isinstance(index, DenseIndex)
    assert _names(index, tools, "weather forecast city")[0] == "weather_forecast"


def test_hybrid_ranks_first_the_tool_both_rankers_agree_on(tools: list[Tool], embedder: Embedder) -> None:
    index = _hybrid(tools, embedder)
    assert _names(index, tools, "delete an issue")[0] == "tracker_delete_issue"


def test_the_fusions_explanation_adds_up_to_the_score(tools: list[Tool], embedder: Embedder) -> None:
    explained = explain(_hybrid(tools, embedder), "delete an issue", 3)
    assert len(explained) == 3
    for hit, parts in explained:
        assert parts["lexical"] + parts["dense"] + parts["companions"] == pytest.approx(hit.score)
        assert parts["named"] == 0.0


def test_a_tool_the_query_names_wins_outright(tools: list[Tool], embedder: Embedder) -> None:
    index = _hybrid(tools, embedder)
    query = "find files in a folder with tracker_create_issue"
    assert _names(index, tools, query)[0] == "tracker_create_issue"


def test_hits_are_marked_weak_when_nothing_fits_well(tools: list[Tool], embedder: Embedder) -> None:
    index = HybridIndex(LexicalIndex.build(tools), *_semantic(tools, embedder), abstention=ALWAYS)
    hits = index.search("forecast for a city", 3)
    assert len(hits) == 3
    assert all(hit.weak for hit in hits)


def test_a_named_tool_is_never_weak(tools: list[Tool], embedder: Embedder) -> None:
    index = HybridIndex(LexicalIndex.build(tools), *_semantic(tools, embedder), abstention=ALWAYS)
    assert not index.search("weather_forecast", 3)[0].weak


def test_hits_above_the_thresholds_are_not_weak(tools: list[Tool], embedder: Embedder) -> None:
    index = HybridIndex(LexicalIndex.build(tools), *_semantic(tools, embedder), abstention=NEVER)
    assert not any(hit.weak for hit in index.search("forecast for a city", 3))


def test_a_model_without_calibration_never_abstains(tools: list[Tool], embedder: Embedder) -> None:
    index = _hybrid(tools, embedder)
    assert not any(hit.weak for hit in index.search("something else entirely", 4))


def test_the_limit_bounds_the_hits(tools: list[Tool], embedder: Embedder) -> None:
    index = _hybrid(tools, embedder)
    assert len(index.search("issue", 2)) == 2
    assert index.search("issue", 0) == []


def test_every_index_says_which_words_of_a_request_no_tool_has(tools: list[Tool], embedder: Embedder) -> None:
    lexical = LexicalIndex.build(tools)
    query = "bamboohr " + " ".join(tools[0].description.split()[:3])
    assert lexical.unknown_words(query) == ["bamboohr"]
    progressive = ProgressiveIndex(lexical)
    assert progressive.unknown_words(query) == ["bamboohr"]
    progressive.upgrade(lambda: _hybrid(tools, embedder))
    assert isinstance(progressive.current, HybridIndex)
    assert progressive.unknown_words(query) == ["bamboohr"]


def _semantic(tools: list[Tool], embedder: Embedder) -> tuple[SemanticIndex, QueryVectors]:
    return SemanticIndex.build(tools, embedder, MemoryVectorCache()), QueryVectors(embedder)


def _recorded(embedder: Embedder, method: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts `embedder.<method>` is given from now on, in order."""
    embedded: list[str] = []
    original = getattr(embedder, method)

    def recording(texts: list[str]) -> np.ndarray:
        embedded.extend(texts)
        return original(texts)

    monkeypatch.setattr(embedder, method, recording)
    return embedded


def test_tool_vectors_are_embedded_once_and_shared_by_catalogs(
    tools: list[Tool], embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded = _recorded(embedder, "embed_passages", monkeypatch)
    cache = MemoryVectorCache()
    first = SemanticIndex.build(tools[:3], embedder, cache)
    embedded.clear()
    second = SemanticIndex.build(tools[1:], embedder, cache)
    assert {passage(tools[3]), description_passage(tools[3])} <= set(embedded)
    assert not {text(tool) for tool in tools[1:3] for text in (passage, description_passage)} & set(embedded)
    np.testing.assert_array_equal(second.vectors[:2], first.vectors[1:3])
    np.testing.assert_array_equal(second.blended[:2], first.blended[1:3])


def test_the_vector_cache_drops_the_least_recently_used() -> None:
    vector = np.ones(2, dtype=np.float32)
    cache = MemoryVectorCache(max_bytes=2 * vector.nbytes)
    cache.put_many("m", {"a": vector, "b": vector})
    cache.get_many("m", ["a"])
    cache.put_many("m", {"c": vector})
    assert set(cache.get_many("m", ["a", "b", "c"])) == {"a", "c"}


def test_the_vector_cache_is_bounded_by_the_bytes_it_holds_whatever_its_entries_sizes() -> None:
    vector, catalog = np.ones(4, dtype=np.float32), np.ones(16, dtype=np.float32)
    cache = MemoryVectorCache(max_bytes=catalog.nbytes + vector.nbytes)
    cache.put_many("m", {"a": vector, "b": vector})
    cache.put_many("m.neighbours", {"catalog": catalog})
    cache.put_many("m.neighbours", {"too large": np.ones(32, dtype=np.float32)})
    assert set(cache.get_many("m", ["a", "b"])) == {"b"}
    assert set(cache.get_many("m.neighbours", ["catalog", "too large"])) == {"catalog"}


def test_query_vectors_keep_the_most_recently_used(embedder: Embedder) -> None:
    vectors = QueryVectors(embedder, max_queries=2)
    first = vectors("find files")
    vectors("create issue")
    vectors("find files")
    vectors("weather")
    assert len(vectors) == 2
    assert vectors("find files") is first


def test_catalog_words_are_those_of_two_tools_or_more(tools: list[Tool]) -> None:
    words = catalog_words(tools)
    assert {"issue", "tracker"} <= set(words)
    assert "weather" not in words


def test_catalog_words_are_the_runs_of_english_letters_in_the_words_of_tool_texts() -> None:
    interner = ToolInterner()
    tools = [
        interner.intern(
            {"name": f"net_{verb}Ipv4Address", "description": "Network address.", "inputSchema": {}}
        )
        for verb in ("get", "set")
    ]
    assert catalog_words(tools) == ["address", "ipv", "net", "network"]


def test_nearest_words_come_from_the_catalog(tools: list[Tool], embedder: Embedder) -> None:
    semantic, query_vectors = _semantic(tools, embedder)
    nearest = semantic.nearest_words(query_vectors("issue"), 2)
    assert nearest[0] == "issue"
    assert set(nearest) <= set(catalog_words(tools))


def test_intent_leaves_out_quoted_text_urls_and_addresses() -> None:
    query = 'Rename the page «Q3 plan» at https://wiki.example.com/x and tell ana@example.com "done"'
    assert intent(query) == "Rename the page at and tell"


def test_intent_keeps_a_query_that_is_all_quotes() -> None:
    assert intent('"create issue"') == '"create issue"'


async def test_without_a_model_the_index_is_lexical(tools: list[Tool], supervisor: Supervisor) -> None:
    build = builder((), MemoryVectors(), supervisor)
    assert isinstance(await build(tools), LexicalIndex)
    assert isinstance(build_index(tools, None), LexicalIndex)


async def test_the_builder_shares_one_vector_store_between_catalogs(
    tools: list[Tool],
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    supervisor: Supervisor,
) -> None:
    embedded = _recorded(embedder, "embed_passages", monkeypatch)
    store = MemoryVectors()
    cache = store.cache
    build = builder([embedder], store, supervisor, wait_seconds=30)
    await build(tools[:2])
    await build(tools[1:])
    await build.aclose()
    words = set(catalog_words(tools[:2])) | set(catalog_words(tools[1:]))
    assert len(cache) == 2 * len(tools) + len(words)  # each tool's two passages, once
    assert len(embedded) == len(cache)  # the second catalog embeds only what the first did not


@pytest.fixture(scope="module")
def english_companion(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    directory: Path = tmp_path_factory.mktemp("tiny") / "companion"
    write_model(directory, tokenizer=_tokenizer(), name="tiny-english-companion", languages=("en",))
    return load_model(directory)


def test_a_companion_model_ranks_an_english_query_too(
    tools: list[Tool], embedder: Embedder, english_companion: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded = _recorded(english_companion, "embed_queries", monkeypatch)
    index = _hybrid(tools, embedder, companions=[QueryVectors(english_companion)])
    assert _names(index, tools, "delete an issue in the tracker")[0] == "tracker_delete_issue"
    assert embedded == ["delete an issue in the tracker"]


def test_a_companion_model_sits_out_a_query_in_a_language_it_does_not_know(
    tools: list[Tool], embedder: Embedder, english_companion: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded = _recorded(english_companion, "embed_queries", monkeypatch)
    index = _hybrid(tools, embedder, companions=[QueryVectors(english_companion)])
    index.search("ištrink užduotį iš sekimo sistemos", 4)
    assert embedded == []


async def test_companion_vectors_are_cached_apart_and_without_words(
    tools: list[Tool],
    embedder: Embedder,
    english_companion: Embedder,
    supervisor: Supervisor,
) -> None:
    store = MemoryVectors()
    cache = store.cache
    build = builder([embedder, english_companion], store, supervisor, wait_seconds=30)
    index = await build(tools)
    await build.aclose()
    assert isinstance(index, ProgressiveIndex)
    assert index.upgraded.is_set()
    assert isinstance(index.current, HybridIndex)
    (companion,) = index.current.companions
    assert companion.semantic.words == ()
    assert len(cache) == 2 * len(tools) + len(catalog_words(tools)) + 2 * len(tools)


async def test_a_catalog_within_the_wait_is_hybrid_from_its_first_search(
    tools: list[Tool],
    embedder: Embedder,
    supervisor: Supervisor,
) -> None:
    index = await builder([embedder], MemoryVectors(), supervisor, wait_seconds=30)(tools)
    assert isinstance(index, ProgressiveIndex)
    assert isinstance(index.current, HybridIndex)


async def test_a_catalog_is_searched_with_bm25_until_its_tools_are_embedded(
    tools: list[Tool],
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    supervisor: Supervisor,
) -> None:
    release = threading.Event()
    original = embedder.embed_passages

    def slow(texts: list[str]) -> np.ndarray:
        release.wait(30)
        return original(texts)

    monkeypatch.setattr(embedder, "embed_passages", slow)
    index = await builder([embedder], MemoryVectors(), supervisor, wait_seconds=0)(tools)
    assert isinstance(index, ProgressiveIndex)
    assert isinstance(index.current, LexicalIndex)
    assert _names(index, tools, "delete an issue")[0] == "tracker_delete_issue"
    release.set()
    assert await asyncio.to_thread(index.upgraded.wait, 30)
    assert isinstance(index.current, HybridIndex)


async def test_a_catalog_that_cannot_be_embedded_stays_searchable_with_bm25(
    tools: list[Tool],
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    supervisor: Supervisor,
) -> None:
    def failing(texts: list[str]) -> np.ndarray:
        raise RuntimeError("onnxruntime failed")

    monkeypatch.setattr(embedder, "embed_passages", failing)
    with caplog.at_level(logging.ERROR, logger="toolsearch"):
        index = await builder([embedder], MemoryVectors(), supervisor, wait_seconds=30)(tools)
    assert isinstance(index, ProgressiveIndex)
    assert isinstance(index.current, LexicalIndex)
    assert _names(index, tools, "delete an issue")[0] == "tracker_delete_issue"
    assert any("its search stays lexical" in record.getMessage() for record in caplog.records)


async def test_the_embedding_thread_reports_each_catalog_it_embeds(
    tools: list[Tool],
    embedder: Embedder,
    supervisor: Supervisor,
) -> None:
    done: list[tuple[float, bool]] = []
    embedding = EmbeddingWorker(
        (), supervisor, on_done=lambda seconds, succeeded: done.append((seconds, succeeded))
    )
    index = await builder(
        [embedder],
        MemoryVectors(),
        supervisor,
        embedding=embedding,
        wait_seconds=30,
    )(tools)
    assert isinstance(index, ProgressiveIndex)
    assert [succeeded for _, succeeded in done] == [True]
    assert embedding.pending == 0


async def test_closing_the_embedding_stops_the_catalog_under_way_and_leaves_it_lexical(
    tools: list[Tool],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    supervisor: Supervisor,
) -> None:
    write_model(tmp_path / "model", tokenizer=_tokenizer())
    embedder = load_model(tmp_path / "model")
    started, release = threading.Event(), threading.Event()
    original = embedder.embed_passages

    def held(texts: list[str]) -> np.ndarray:
        started.set()
        release.wait(30)
        return original(texts)

    monkeypatch.setattr(embedder, "embed_passages", held)
    embedding = EmbeddingWorker([embedder], supervisor)
    index = await builder(
        [embedder],
        MemoryVectors(),
        supervisor,
        embedding=embedding,
        wait_seconds=0,
    )(tools)
    assert await asyncio.to_thread(started.wait, 30)
    threading.Timer(0.1, release.set).start()  # the model run under way ends after `close` began
    with caplog.at_level(logging.ERROR, logger="toolsearch"):
        assert embedding.close(timeout=30)
    assert isinstance(index, ProgressiveIndex)
    assert index.upgraded.is_set()
    assert isinstance(index.current, LexicalIndex)
    assert not embedding.running
    assert caplog.records == []


def _runs(embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    """Each model run `embedder.embed_queries` makes from now on: its thread's name, its texts."""
    runs: list[tuple[str, list[str]]] = []
    original = embedder.embed_queries

    def recording(texts: list[str]) -> np.ndarray:
        runs.append((threading.current_thread().name, list(texts)))
        return original(texts)

    monkeypatch.setattr(embedder, "embed_queries", recording)
    return runs


def test_a_companions_run_goes_to_the_query_runs_while_the_first_model_runs_here(
    tools: list[Tool],
    embedder: Embedder,
    english_companion: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    query_runs: ThreadPoolExecutor,
) -> None:
    first, companion = _runs(embedder, monkeypatch), _runs(english_companion, monkeypatch)
    index = _hybrid(tools, embedder, companions=[QueryVectors(english_companion)], query_runs=query_runs)
    index.search("delete an issue in the tracker", 4)
    assert first == [(threading.current_thread().name, ["delete an issue in the tracker"])]
    assert [(thread.startswith("toolsearch-query"), texts) for thread, texts in companion] == [
        (True, ["delete an issue in the tracker"])
    ]


def test_without_query_runs_every_model_runs_in_turn_on_the_searching_thread(
    tools: list[Tool], embedder: Embedder, english_companion: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, companion = _runs(embedder, monkeypatch), _runs(english_companion, monkeypatch)
    lexical, semantic, vectors = LexicalIndex.build(tools), *_semantic(tools, embedder)
    joined = Companion(
        SemanticIndex.build(tools, english_companion, MemoryVectorCache(), words=False),
        QueryVectors(english_companion),
    )
    index = HybridIndex(lexical, semantic, vectors, companions=[joined], query_runs=None)
    index.search("delete an issue in the tracker", 4)
    assert {thread for thread, _ in first + companion} == {threading.current_thread().name}


def test_a_long_request_costs_each_model_one_run_whole_and_one_for_its_sentences(
    tools: list[Tool], embedder: Embedder, english_companion: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, companion = _runs(embedder, monkeypatch), _runs(english_companion, monkeypatch)
    index = _hybrid(tools, embedder, companions=[QueryVectors(english_companion)])
    background = "We moved the weather forecast for every city of the folder to the new tracker last week."
    request = f"{background} Please delete the issue in the tracker that the move left behind for us."
    parts = sentences(request)
    index.search(request, 4)
    assert len(parts) == 2
    assert sorted(texts for _, texts in first) == sorted([[request], parts])
    assert sorted(texts for _, texts in companion) == sorted([[request], parts])


def test_a_request_seen_before_runs_no_model(
    tools: list[Tool], embedder: Embedder, english_companion: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _hybrid(tools, embedder, companions=[QueryVectors(english_companion)])
    index.search("delete an issue in the tracker", 4)
    first, companion = _runs(embedder, monkeypatch), _runs(english_companion, monkeypatch)
    index.search("delete an issue in the tracker", 4)
    assert first == companion == []


def test_a_failed_model_run_fails_the_whole_after_the_others_have_ended(
    embedder: Embedder,
    english_companion: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    query_runs: ThreadPoolExecutor,
) -> None:
    working, failing = QueryVectors(embedder), QueryVectors(english_companion)

    def closed(texts: list[str]) -> np.ndarray:
        raise EmbedderClosed("the embedding model tiny-english-companion was closed")

    monkeypatch.setattr(english_companion, "embed_queries", closed)
    with pytest.raises(EmbedderClosed):
        embed_at_once([(failing, ["find files"]), (working, ["find files"])], query_runs)
    assert len(working) == 1


async def test_a_catalog_submitted_after_close_stays_lexical(
    tools: list[Tool], embedder: Embedder, supervisor: Supervisor
) -> None:
    embedding = EmbeddingWorker((), supervisor)
    assert embedding.close(timeout=1)
    index = await builder(
        [embedder],
        MemoryVectors(),
        supervisor,
        embedding=embedding,
        wait_seconds=30,
    )(tools)
    assert isinstance(index, ProgressiveIndex)
    assert isinstance(index.current, LexicalIndex)
    assert embedding.pending == 0


def _query_run_threads() -> list[str]:
    return [
        thread.name for thread in threading.enumerate() if thread.name.startswith("toolsearch-query-runs")
    ]


async def test_a_served_indexs_further_model_runs_go_to_its_worker_and_end_with_its_supervisor(
    tools: list[Tool],
    embedder: Embedder,
    english_companion: Embedder,
    supervisor: Supervisor,
) -> None:
    supervisor = Supervisor()
    embedding = EmbeddingWorker((), supervisor)  # without the models, which the other tests use
    index = await builder(
        [embedder, english_companion],
        MemoryVectors(),
        supervisor,
        embedding=embedding,
        wait_seconds=30,
    )(tools)
    assert isinstance(index, ProgressiveIndex) and isinstance(index.current, HybridIndex)
    index.search("delete an issue in the tracker", 4)  # the companion's run goes to the worker's threads
    assert _query_run_threads()

    assert embedding.close(timeout=5)
    await supervisor.aclose()

    assert _query_run_threads() == []
    with pytest.raises(RuntimeError):
        embedding.query_runs.submit(int)


def test_query_vectors_embed_the_uncached_queries_together(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = QueryVectors(embedder)
    vectors("find files")
    calls: list[list[str]] = []
    original = embedder.embed_queries
    monkeypatch.setattr(embedder, "embed_queries", lambda texts: calls.append(list(texts)) or original(texts))
    rows = vectors.many(["weather", "find files", "city", "weather"])
    assert calls == [["weather", "city"]]
    np.testing.assert_array_equal(rows[1], vectors("find files"))
    np.testing.assert_array_equal(rows[0], rows[3])


# Lithuanian for `issue` and `in the tracker`, with the same rows as the English words in the model's
# table: the model "knows" they mean the same. The prefixes' rows are zero, so that a word's
# query and passage vectors are its row alone.
FOREIGN = {"klaidą": "issue", "sekiklyje": "tracker", "问题": "issue", "跟踪器": "tracker"}


@pytest.fixture(scope="module")
def bilingual_embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return _bilingual_model(tmp_path_factory.mktemp("bilingual") / "model")


def _bilingual_model(directory: Path, **changes: object) -> Embedder:
    """A tiny model that embeds each word of `FOREIGN` as its English word (`changes` to its manifest)."""
    words = [*WORDS, *FOREIGN]
    tokenizer = _tokenizer(words)
    table = token_table(tokenizer.get_vocab_size())
    vocab = tokenizer.get_vocab()
    table[[vocab["q:"], vocab["p:"]]] = 0.0
    for foreign, english in FOREIGN.items():
        table[vocab[foreign]] = table[vocab[english]]
    write_model(directory, graph=token_states_graph(table), tokenizer=tokenizer, **changes)
    return load_model(directory)


def _translating(tools: list[Tool], embedder: Embedder, cosine: float) -> HybridIndex:
    return HybridIndex(LexicalIndex.build(tools), *_semantic(tools, embedder), translation_cosine=cosine)


def test_a_query_word_no_tool_has_is_read_as_the_catalog_word_nearest_to_it(
    tools: list[Tool], bilingual_embedder: Embedder
) -> None:
    index = _translating(tools, bilingual_embedder, 0.99)
    assert translations(index, "klaidą sekiklyje", "lt") == ["issue", "tracker"]


def test_a_one_word_request_that_is_its_own_word_to_guess_is_embedded_once(
    tools: list[Tool], bilingual_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _translating(tools, bilingual_embedder, 0.99)
    runs = _runs(bilingual_embedder, monkeypatch)
    index.search("klaidą", 4)
    assert [texts for _, texts in runs] == [["klaidą"]]


def test_a_word_near_no_catalog_word_is_not_translated(
    tools: list[Tool], bilingual_embedder: Embedder
) -> None:
    index = _translating(tools, bilingual_embedder, 0.99)
    assert translations(index, "klaidą pizzą", "lt") == ["issue"]


def test_only_a_query_in_another_language_has_its_words_translated(
    tools: list[Tool], bilingual_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _translating(tools, bilingual_embedder, 0.99)
    embedded = _recorded(bilingual_embedder, "embed_queries", monkeypatch)
    index.search("delete the Lisbon issue", 2)
    index.search("klaidą sekiklyje", 2)
    # The request's run and its words' go at once: either may be recorded first.
    assert sorted(embedded) == sorted(["delete the Lisbon issue", "klaidą sekiklyje", "klaidą", "sekiklyje"])


def test_the_han_words_of_a_chinese_query_are_translated(
    tools: list[Tool], bilingual_embedder: Embedder
) -> None:
    index = _translating(tools, bilingual_embedder, 0.99)
    assert translations(index, "问题 跟踪器", "zh") == ["issue", "tracker"]


def test_a_model_without_calibration_translates_nothing(
    tools: list[Tool], bilingual_embedder: Embedder
) -> None:
    assert translations(_hybrid(tools, bilingual_embedder), "klaidą sekiklyje", "lt") == []


def test_a_model_calibrated_in_its_manifest_translates_at_its_cosine(
    tools: list[Tool], tmp_path: Path
) -> None:
    calibrated = _bilingual_model(tmp_path / "model", calibration=Calibration(NEVER, translation_cosine=0.99))
    assert translations(_hybrid(tools, calibrated), "klaidą sekiklyje", "lt") == [
        "issue",
        "tracker",
    ]


def _with_query_graph(directory: Path) -> Embedder:
    """The bilingual model with a query graph that knows no word alike: only its passage graph
    reads `klaidą` as `issue`."""
    calibration = Calibration(NEVER, translation_cosine=0.99)
    _bilingual_model(directory, calibration=calibration)
    query_graph = token_states_graph(token_table(_tokenizer([*WORDS, *FOREIGN]).get_vocab_size(), seed=8))
    onnx.save(query_graph, directory / "query.onnx")
    seal(directory, describe(query_model="query.onnx", calibration=calibration))
    return load_model(directory)


def test_a_model_whose_queries_run_a_graph_of_their_own_translates_words_by_its_passage_graph(
    tools: list[Tool], tmp_path: Path
) -> None:
    assert translations(_hybrid(tools, _with_query_graph(tmp_path / "model")), "klaidą sekiklyje", "lt") == [
        "issue",
        "tracker",
    ]


def test_the_words_a_query_graph_leaves_to_the_passage_graph_are_embedded_once_for_every_catalog(
    tools: list[Tool], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = _with_query_graph(tmp_path / "model")
    shared = QueryVectors(embedder)
    embedded = _recorded(embedder, "embed_words", monkeypatch)
    for catalog in (tools, tools[:-1]):
        assert translations(_hybrid(catalog, embedder, query_vectors=shared), "klaidą", "lt") == ["issue"]
    assert embedded == ["klaidą"]


def _with_dictionary(tools: list[Tool], embedder: Embedder, entries: dict[str, str]) -> HybridIndex:
    dictionaries = Dictionaries({"lt": Dictionary(Table.of(entries), Table.of({}))})
    lexical, semantic = LexicalIndex.build(tools), _semantic(tools, embedder)
    return HybridIndex(lexical, *semantic, translation_cosine=0.99, dictionaries=dictionaries)


def test_a_word_the_dictionary_knows_is_read_by_it_not_by_the_model(
    tools: list[Tool], bilingual_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _with_dictionary(tools, bilingual_embedder, {"klaidą": "bug issue"})
    embedded = _recorded(bilingual_embedder, "embed_queries", monkeypatch)
    assert translations(index, "klaidą sekiklyje", "lt") == ["issue", "tracker"]
    assert embedded == ["sekiklyje"]  # `bug` is no catalog word; the model reads only the unknown word


def test_a_dictionary_serves_only_its_own_language(tools: list[Tool], bilingual_embedder: Embedder) -> None:
    index = _with_dictionary(tools, bilingual_embedder, {"klaidą": "tracker"})
    assert translations(index, "klaidą", "lt") == ["tracker"]
    assert translations(index, "klaidą", "de") == ["issue"]


def test_words_past_the_model_s_limit_are_still_looked_up_in_the_dictionary(
    tools: list[Tool], bilingual_embedder: Embedder
) -> None:
    fillers = [f"zodis{letter}" for letter in "abcdefghijklmn"]  # words no tool and no dictionary has
    index = _with_dictionary(tools, bilingual_embedder, {"sekiklyje": "tracker"})
    assert len(fillers) > TRANSLATED_WORDS
    assert translations(index, " ".join([*fillers, "sekiklyje"]), "lt") == ["tracker"]


def test_with_dictionaries_abstention_judges_the_lexical_score_with_the_translated_words(
    tools: list[Tool], bilingual_embedder: Embedder
) -> None:
    # Doubtful by the cosine always; by the request's own words always; with translations, not.
    threshold = AbstentionThreshold(cosine=2.0, lexical=math.inf, translated_lexical=0.5)
    dictionaries = Dictionaries({"lt": Dictionary(Table.of({"sekiklyje": "tracker"}), Table.of({}))})
    lexical, semantic = LexicalIndex.build(tools), _semantic(tools, bilingual_embedder)
    translating = HybridIndex(lexical, *semantic, abstention=threshold, dictionaries=dictionaries)
    assert not translating.search("sekiklyje", 3)[0].weak
    own_words = HybridIndex(lexical, *semantic, abstention=threshold)
    assert own_words.search("sekiklyje", 3)[0].weak
