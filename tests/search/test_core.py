"""The search core as pure functions, on a small catalog and synthetic vectors (no model): a request
read (`read_request`), its signals (`request_signals`) and the hand-set fusion's scores (`Fusion`)."""

from __future__ import annotations

import numpy as np
import pytest

from toolsearch.search.dictionaries import Dictionaries, Dictionary, Table
from toolsearch.search.lexical import LexicalIndex
from toolsearch.search.request import read_request
from toolsearch.search.scoring import Fusion
from toolsearch.search.semantic import SemanticIndex
from toolsearch.search.signals import (
    DENSE_WEIGHT,
    LEXICAL_WEIGHT,
    Embedded,
    request_signals,
    standardised,
)
from toolsearch.tool import Tool, ToolInterner

DIMENSIONS = 4
TOOLS = [
    ("tracker_create_issue", "Create an issue in the tracker with a title and a body."),
    ("tracker_delete_issue", "Delete an issue from the tracker."),
    ("weather_forecast", "Weather forecast for a city, by day."),
    ("files_read_file", "Read a file from the disk."),
]


@pytest.fixture(scope="module")
def tools() -> list[Tool]:
    interner = ToolInterner()
    return [interner.intern({"name": name, "description": text, "inputSchema": {}}) for name, text in TOOLS]


@pytest.fixture(scope="module")
def lexical(tools: list[Tool]) -> LexicalIndex:
    return LexicalIndex.build(tools)


def _unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    normalised: np.ndarray = vector / np.linalg.norm(vector)
    return normalised


@pytest.fixture(scope="module")
def semantic() -> SemanticIndex:
    """One axis per tool: a query vector along an axis is that tool's meaning."""
    vectors = np.eye(len(TOOLS), DIMENSIONS, dtype=np.float32)
    return SemanticIndex(vectors, vectors, ["issue", "weather"], vectors[[0, 2]])


def _pieces(text: str) -> list[str]:
    return text.split()


def test_a_request_is_read_for_what_it_asks_apart_from_its_quoted_data(lexical: LexicalIndex) -> None:
    request = read_request(
        'delete the issue "weather forecast for Vilnius"', lexical, _pieces, None, guesses=True
    )
    assert request.request == "delete the issue"
    assert request.language == "en"
    assert (request.read, request.unread) == ((), ())


def test_a_request_that_names_a_tool_carries_its_position(lexical: LexicalIndex) -> None:
    request = read_request("use weather_forecast for Riga", lexical, _pieces, None, guesses=False)
    assert request.named.tolist() == [2]


def test_a_foreign_word_no_tool_has_is_read_by_the_dictionary_or_left_for_the_model(
    lexical: LexicalIndex,
) -> None:
    dictionaries = Dictionaries({"de": Dictionary(Table.of({"wetter": "weather"}), Table.of({}))})
    request = read_request(
        "Zeige mir das Wetter und die Vorhersage", lexical, _pieces, dictionaries, guesses=True
    )
    assert request.language == "de"
    assert "weather" in request.read
    assert "wetter" not in request.unread
    assert "vorhersage" in request.unread


def test_the_fusion_adds_the_weighted_lexical_share_and_the_dense_z_score(
    lexical: LexicalIndex, semantic: SemanticIndex
) -> None:
    request = read_request("delete an issue", lexical, _pieces, None, guesses=False)
    vector = _unit(0.2, 1.0, 0.0, 0.0)
    signals = request_signals(request, Embedded(vector, None, (), ()), lexical, semantic)
    dense = semantic.similarities(vector)
    expected = DENSE_WEIGHT * standardised(dense) + LEXICAL_WEIGHT * signals.lexical / signals.lexical.max()
    assert np.allclose(signals.fusion, expected)
    assert int(np.argmax(signals.fusion)) == 1


def test_a_companion_that_sits_out_the_language_adds_nothing(
    lexical: LexicalIndex, semantic: SemanticIndex
) -> None:
    request = read_request("delete an issue", lexical, _pieces, None, guesses=False)
    vector = _unit(0.2, 1.0, 0.0, 0.0)
    alone = request_signals(request, Embedded(vector, None, (), ()), lexical, semantic)
    sitting_out = request_signals(request, Embedded(vector, None, (None,), ()), lexical, semantic)
    assert np.array_equal(alone.fusion, sitting_out.fusion)
    assert np.array_equal(sitting_out.companions[0], np.zeros(len(TOOLS)))


def test_words_the_model_guessed_count_in_the_lexical_part(
    lexical: LexicalIndex, semantic: SemanticIndex
) -> None:
    request = read_request("prognozė Vilniui", lexical, _pieces, None, guesses=True)
    vector = _unit(1.0, 1.0, 1.0, 1.0)
    plain = request_signals(request, Embedded(vector, None, (), ()), lexical, semantic)
    guessed = request_signals(request, Embedded(vector, None, (), ("weather",)), lexical, semantic)
    assert guessed.lexical[2] > plain.lexical[2]
    assert plain.untranslated == guessed.untranslated  # abstention judges before the guesses


def test_the_fusion_ranks_a_named_tool_first_whatever_its_score(
    lexical: LexicalIndex, semantic: SemanticIndex
) -> None:
    request = read_request("delete an issue, then files_read_file", lexical, _pieces, None, guesses=False)
    signals = request_signals(request, Embedded(_unit(0.0, 1.0, 0.0, 0.0), None, (), ()), lexical, semantic)
    scores = Fusion().scores(signals)
    assert int(np.argmax(scores)) == 3
    assert int(np.argsort(-scores)[1]) == 1
