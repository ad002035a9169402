"""BM25F ranking over slices of the recorded catalog: real tool texts, queries written for these tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from toolsearch.search import documents
from toolsearch.search.lexical import LexicalIndex
from toolsearch.tool import Tool, ToolInterner


@pytest.fixture(scope="module")
def index(slice_tools: list[Tool]) -> LexicalIndex:
    return LexicalIndex.build(slice_tools)


def _top(index: LexicalIndex, tools: list[Tool], query: str, limit: int = 3) -> list[str]:
    return [tools[hit.position].name for hit in index.search(query, limit)]


@pytest.mark.parametrize(
    ("query", "tool"),
    [
        ("lock my password vault", "bitwarden_lock"),
        ("convert a meeting time from one time zone to another", "time_convert_time"),
        ("merge the pull request once checks pass", "github_merge_pull_request"),
    ],
)
def test_an_english_request_finds_its_tool(
    index: LexicalIndex, slice_tools: list[Tool], query: str, tool: str
) -> None:
    assert _top(index, slice_tools, query, 1) == [tool]


@pytest.mark.parametrize(
    ("query", "tool"),
    [
        # "Show the Kubernetes pod's logs": no sign of Lithuanian, found through Lithuanian stems.
        ("Parodyk Kubernetes podo logus", "kubernetes-go_pods_log"),
        # "Give the Stripe refund back to the client": `refundą` is a Lithuanian form of `refund`.
        ("Stripe refundą grąžink klientui", "stripe025_create_refund"),
    ],
)
def test_a_lithuanian_request_finds_its_tool(
    index: LexicalIndex, slice_tools: list[Tool], query: str, tool: str
) -> None:
    assert _top(index, slice_tools, query, 1) == [tool]


def test_a_japanese_request_finds_its_tool_by_the_latin_words_in_it(
    index: LexicalIndex, slice_tools: list[Tool]
) -> None:
    assert _top(index, slice_tools, "Stripeでrefundを作成して", 1) == ["stripe025_create_refund"]


def test_japanese_tool_texts_are_found_by_japanese_requests() -> None:
    interner = ToolInterner()
    tools = [
        interner.intern({"name": "weather_forecast", "description": "指定した都市の天気予報を取得します。"}),
        interner.intern({"name": "weather_alerts", "description": "地域の気象警報の一覧を返します。"}),
        interner.intern({"name": "trains_timetable", "description": "駅の時刻表を調べます。"}),
    ]
    index = LexicalIndex.build(tools)
    assert _top(index, tools, "東京の明日の天気予報を教えて", 1) == ["weather_forecast"]
    assert _top(index, tools, "新宿駅の時刻表", 1) == ["trains_timetable"]


def test_an_exact_tool_name_wins_over_any_description(slice_definitions: list[dict[str, Any]]) -> None:
    decoy = {
        "name": "decoy_tool",
        "description": "github create issue: create a GitHub issue, create issues, GitHub issue creation.",
    }
    interner = ToolInterner()
    tools = [interner.intern(tool) for tool in [decoy, *slice_definitions]]
    index = LexicalIndex.build(tools)
    assert _top(index, tools, "github_create_issue", 1) == ["github_create_issue"]


def test_a_name_matches_whatever_its_case_and_separators(
    index: LexicalIndex, slice_tools: list[Tool]
) -> None:
    assert _top(index, slice_tools, "GitHub Create-Issue", 1) == ["github_create_issue"]


def test_a_tool_name_without_its_server_names_every_server_tool_of_that_name(
    index: LexicalIndex, slice_tools: list[Tool]
) -> None:
    named = {slice_tools[position].name for position in index.name_matches("list_issues")}
    assert named == {tool.name for tool in slice_tools if tool.name.endswith("_list_issues")}
    assert named


def test_a_tool_name_inside_a_sentence_is_recognised(index: LexicalIndex, slice_tools: list[Tool]) -> None:
    assert _top(index, slice_tools, "please call github_search_code for me", 1) == ["github_search_code"]


def test_scores_have_one_value_per_tool_and_zero_where_nothing_matches(
    index: LexicalIndex, slice_tools: list[Tool]
) -> None:
    scores = index.scores("kubernetes pods")
    assert scores.shape == (len(slice_tools),)
    kubernetes = np.array([tool.name.startswith("kubernetes-go_") for tool in slice_tools])
    assert (scores[kubernetes] > 0).all()
    assert (scores == 0).any()


def test_search_returns_only_matching_tools_best_first(index: LexicalIndex) -> None:
    hits = index.search("refund", 50)
    assert 0 < len(hits) < 50
    assert all(hit.score > 0 for hit in hits)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_search_returns_at_most_the_limit(index: LexicalIndex) -> None:
    assert len(index.search("list", 4)) == 4
    assert index.search("list", 0) == []


@pytest.mark.parametrize("query", ["", "   ", "!!! ??? ...", "the of and", "\x00\ufffd\u200b", "a" * 100_000])
def test_empty_and_junk_queries_find_nothing(index: LexicalIndex, query: str) -> None:
    assert index.search(query, 10) == []
    assert not index.scores(query).any()


def test_an_empty_catalog_finds_nothing() -> None:
    index = LexicalIndex.build([])
    assert index.search("anything", 5) == []
    assert index.scores("anything").shape == (0,)


def test_tools_without_a_server_prefix_are_searched_too() -> None:
    interner = ToolInterner()
    tools = [
        interner.intern({"name": "echo", "description": "Echo the message back."}),
        interner.intern({"name": "add", "description": "Add two numbers."}),
    ]
    index = LexicalIndex.build(tools)
    assert _top(index, tools, "sum of two numbers") == ["add"]


def test_positions_refer_to_the_order_the_tools_were_given_in(slice_tools: list[Tool]) -> None:
    reversed_tools = slice_tools[::-1]
    index = LexicalIndex.build(reversed_tools)
    assert _top(index, reversed_tools, "lock my password vault", 1) == ["bitwarden_lock"]


def test_unknown_words_are_the_query_words_no_tool_has(index: LexicalIndex) -> None:
    # "Show the pull requests of the repository": Lithuanian content words, one English word.
    unknown = index.unknown_words("Parodyk repozitorijos pull užklausas")
    assert unknown == ["parodyk", "repozitorijos", "užklausas"]


def test_unknown_words_leave_out_stopwords_short_words_numbers_and_codes(index: LexicalIndex) -> None:
    assert index.unknown_words("prašau ENG-101 abc rec9LmQz 2025 the") == []


_GERMAN_WEATHER = (
    "Dieses Werkzeug liefert die Wettervorhersage für eine Stadt. Es zeigt die Temperatur, den Regen und "
    "den Wind für die nächsten Tage an, und es warnt vor Sturm, Gewitter und Hitze in der ganzen Region."
)
_GERMAN_TRAINS = (
    "Dieses Werkzeug sucht Zugverbindungen zwischen zwei Bahnhöfen. Es zeigt die Abfahrt, die Ankunft und "
    "die Gleise der nächsten Züge an, und es meldet Verspätungen und Ausfälle auf der ganzen Strecke."
)


def test_a_tool_written_in_another_language_than_the_catalog_is_not_found_by_its_prose(
    slice_tools: list[Tool],
) -> None:
    foreign = ToolInterner().intern({"name": "acme_lookup", "description": _GERMAN_WEATHER})
    tools = [*slice_tools, foreign]
    index = LexicalIndex.build(tools)
    assert "acme_lookup" not in _top(index, tools, "Wettervorhersage Temperatur Regen Gewitter", 5)
    assert _top(index, tools, "acme lookup", 1) == ["acme_lookup"]


def test_a_catalog_written_in_one_other_language_is_searched_by_its_prose() -> None:
    interner = ToolInterner()
    tools = [
        interner.intern({"name": "wetter_vorhersage", "description": _GERMAN_WEATHER}),
        interner.intern({"name": "bahn_verbindungen", "description": _GERMAN_TRAINS}),
    ]
    index = LexicalIndex.build(tools)
    assert _top(index, tools, "Gewitter und Hitze", 1) == ["wetter_vorhersage"]


def test_an_index_built_before_the_vocabulary_is_renewed_still_searches_as_before(
    slice_tools: list[Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = ["merge the pull request once checks pass", "lock my password vault", "pod logs"]
    before = LexicalIndex.build(slice_tools)
    expected = [[(hit.position, hit.score) for hit in before.search(query, 5)] for query in queries]
    monkeypatch.setattr(documents, "MAX_VOCABULARY_TERMS", 0)  # each catalog starts a new vocabulary
    after = LexicalIndex.build(slice_tools)
    for query, hits in zip(queries, expected, strict=True):
        assert [(hit.position, hit.score) for hit in before.search(query, 5)] == hits
        assert [(hit.position, hit.score) for hit in after.search(query, 5)] == hits
