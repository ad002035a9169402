"""BM25F scores against the formula, computed here from term counts written out by hand for a
catalog of three tools, independently of how the index computes them."""

from __future__ import annotations

import math

import pytest

from toolsearch.search.lexical import (
    FIELD_WEIGHTS,
    K1,
    SERVER_B,
    SERVER_FIELDS,
    SERVER_WEIGHT,
    UNSUPPORTED_NAME_WEIGHT,
    LexicalIndex,
)
from toolsearch.tool import ToolInterner

DEFINITIONS = [
    {"name": "farm_cat", "description": "cat cat dog", "inputSchema": {"type": "object"}},
    {"name": "farm_dog", "description": "dog", "inputSchema": {"type": "object"}},
    {
        "name": "sea_fish",
        "title": "Sea fish",
        "description": "fish cat",
        "inputSchema": {
            "type": "object",
            "properties": {"cat": {"type": "string", "description": "cat dog"}},
        },
    },
]
# What analysis makes of each field (a description that is one short sentence is also the summary;
# the server is the name's prefix): term -> occurrences. Fields left out are empty.
COUNTS: dict[str, dict[str, dict[str, int]]] = {
    "farm_cat": {
        "name": {"farm": 1, "cat": 1},
        "server": {"farm": 1},
        "summary": {"cat": 2, "dog": 1},
        "description": {"cat": 2, "dog": 1},
    },
    "farm_dog": {
        "name": {"farm": 1, "dog": 1},
        "server": {"farm": 1},
        "summary": {"dog": 1},
        "description": {"dog": 1},
    },
    "sea_fish": {
        "name": {"sea": 1, "fish": 1},
        "server": {"sea": 1},
        "title": {"sea": 1, "fish": 1},
        "summary": {"fish": 1, "cat": 1},
        "description": {"fish": 1, "cat": 1},
        "parameter_names": {"cat": 1},
        "parameter_descriptions": {"cat": 1, "dog": 1},
    },
}
SERVERS = {"farm": ["farm_cat", "farm_dog"], "sea": ["sea_fish"]}
TERMS = ["cat", "dog", "fish", "farm", "sea"]


def _idf(documents_with_term: int, documents: int) -> float:
    return math.log(1 + (documents - documents_with_term + 0.5) / (documents_with_term + 0.5))


def _saturated(frequency: float) -> float:
    return frequency * (K1 + 1) / (K1 + frequency)


def _length(counts: dict[str, int]) -> int:
    return sum(counts.values())


def _said(term: str, tool: str) -> bool:
    return any(term in COUNTS[tool].get(field, {}) for field in ("title", "description", "parameter_names"))


def _own(term: str, tool: str) -> float:
    """BM25F: per field, the weighted occurrences over the field's length relative to its mean
    length (a name's word that the tool's title, description and parameter names never say at
    `UNSUPPORTED_NAME_WEIGHT`); summed over fields, then saturated once and multiplied by the
    term's idf."""
    frequency = 0.0
    for field, (weight, b) in ((f, (w.weight, w.length_normalisation)) for f, w in FIELD_WEIGHTS.items()):
        occurrences = COUNTS[tool].get(field, {}).get(term, 0)
        if occurrences:
            mean = sum(_length(fields.get(field, {})) for fields in COUNTS.values()) / len(COUNTS)
            length = _length(COUNTS[tool][field])
            if field == "name" and not _said(term, tool):
                weight *= UNSUPPORTED_NAME_WEIGHT
            frequency += weight * occurrences / (1 - b + b * length / mean)
    with_term = sum(any(term in counts for counts in fields.values()) for fields in COUNTS.values())
    return _idf(with_term, len(COUNTS)) * _saturated(frequency)


def _server_document(server: str) -> dict[str, int]:
    document: dict[str, int] = {}
    for tool in SERVERS[server]:
        for field in SERVER_FIELDS:
            for term, occurrences in COUNTS[tool].get(field, {}).items():
                document[term] = document.get(term, 0) + occurrences
    return document


def _server_share(term: str, tool: str) -> float:
    """Plain BM25 of the tool's server over its tools' names, titles and summaries, in part."""
    documents = {server: _server_document(server) for server in SERVERS}
    mean = sum(map(_length, documents.values())) / len(documents)
    server = next(server for server, tools in SERVERS.items() if tool in tools)
    document = documents[server]
    frequency = document.get(term, 0) / (1 - SERVER_B + SERVER_B * _length(document) / mean)
    with_term = sum(term in each for each in documents.values())
    return SERVER_WEIGHT * _idf(with_term, len(documents)) * _saturated(frequency)


@pytest.fixture(scope="module")
def index() -> LexicalIndex:
    interner = ToolInterner()
    return LexicalIndex.build([interner.intern(definition) for definition in DEFINITIONS])


@pytest.mark.parametrize("term", TERMS)
def test_a_tools_own_score_is_bm25f_over_its_fields(index: LexicalIndex, term: str) -> None:
    own, _ = index.bm25_parts(term)
    assert own.tolist() == pytest.approx([_own(term, tool) for tool in COUNTS])


@pytest.mark.parametrize("term", TERMS)
def test_a_tool_gets_a_share_of_its_servers_bm25(index: LexicalIndex, term: str) -> None:
    _, server_share = index.bm25_parts(term)
    assert server_share.tolist() == pytest.approx([_server_share(term, tool) for tool in COUNTS])


def test_the_words_of_a_query_add_up(index: LexicalIndex) -> None:
    expected = [sum(_own(t, tool) + _server_share(t, tool) for t in ("cat", "dog")) for tool in COUNTS]
    assert index.bm25_scores("cat dog").tolist() == pytest.approx(expected)


def test_farm_cats_score_for_cat_is_the_one_worked_out_by_hand(index: LexicalIndex) -> None:
    # farm_cat, `cat`: name 3 x 1 / (0.7 + 0.3 x 2/2), summary 1 x 2 / (0.5 + 0.5 x 3/2),
    # description 1 x 2 / (0.1 + 0.9 x 3/2); in 2 of 3 tools.
    frequency = 3 / 1 + 2 / 1.25 + 2 / 1.45
    expected = math.log(1 + 1.5 / 2.5) * frequency * 2.2 / (1.2 + frequency)
    own, _ = index.bm25_parts("cat")
    assert own[0] == pytest.approx(expected)
