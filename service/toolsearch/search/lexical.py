"""BM25F over a catalog's tool documents: built once per catalog, scored with array operations.

BM25F (Robertson and Zaragoza) rather than BM25 over one concatenated text: each field's term
frequency is normalised by that field's own length before the fields are added with their
weights, and only then saturated, so a tool whose name says `issue` once outranks one whose long
description says it five times, and a long parameter list does not drown its name.

A tool's server counts too: all tools of one server (agentgateway's name prefix) together say
what the server is about (`password`, `vault`, `secret` for a password manager) even where the one
tool asked for does not, so each tool also gets a share of its server's BM25 score over the
server's tools' names, titles and summaries.

At build time every (tool, term) and (server, term) weight goes into a sparse matrix; a query
then only adds up the columns of its terms, whatever the catalog size.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import scipy.sparse
from cachetools import LRUCache

from toolsearch.naming import split_qualified_name
from toolsearch.search import SearchHit, text
from toolsearch.search.documents import (
    FIELDS,
    ToolDocument,
    Vocabulary,
    foreign_tools,
    name_key,
    name_keys,
    tool_documents,
)
from toolsearch.search.selection import best_hits, named_first
from toolsearch.search.sentences import combined, sentences
from toolsearch.tool import Tool


@dataclass(frozen=True, slots=True)
class FieldWeight:
    weight: float
    """How much one occurrence in this field counts, relative to one in the description."""
    length_normalisation: float
    """BM25's b for this field: 0 ignores the field's length, 1 divides by it relative to its mean."""


# Round values, not fitted: search is not sensitive to any one of them, or to K1
# (docs/search-quality.md, "Where the constants come from"). The summary's and the description's
# b are what keyword stuffing cannot buy: a long text's words count for less, nearly in proportion
# to its length (docs/search-quality.md, hostile tools).
FIELD_WEIGHTS: dict[str, FieldWeight] = {
    "name": FieldWeight(3.0, 0.3),
    "server": FieldWeight(2.0, 0.0),
    "title": FieldWeight(2.0, 0.3),
    "summary": FieldWeight(1.0, 0.5),
    "description": FieldWeight(1.0, 0.9),
    "parameter_names": FieldWeight(1.0, 0.5),
    "parameter_descriptions": FieldWeight(0.5, 0.75),
}
K1 = 1.2
"""Term frequency saturation: the second occurrence of a term adds less than the first."""
SERVER_FIELDS = ("name", "title", "summary")
"""What a server's document is made of: its tools' names and first sentences."""
SERVER_B = 0.75
SERVER_WEIGHT = 0.4
"""How much of its server's score a tool gets."""
VARIANT_WEIGHT = 1.0
"""How much a query word counts through its stem in a language other than the guessed one."""
MIN_PREFIX = 4
PREFIX_WEIGHT = 0.5
"""How much a query word counts through a term it only shares a prefix with (see `_prefix_columns`)."""

MAX_QUERY_CHARS = 4096
"""Query text past this is ignored: bounds the work one request can cause."""
_QUERY_CHUNK = re.compile(r"[^\s\"'`“”„«»‘’,;:!?()\[\]{}<>]+")
_IDENTIFIER_LIKE = re.compile(r"[_.\-]|[a-z][A-Z]")
_EXACT = "="
"""Prefix of the `_names` keys that hold a tool's very name (name keys never contain `=`)."""


def _shared_prefix_length(first: str, second: str) -> int:
    return next(
        (index for index, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
        min(len(first), len(second)),
    )


def _saturate(frequency: scipy.sparse.csc_array) -> scipy.sparse.csc_array:
    """BM25 weights from (length-normalised) term frequencies: idf x saturated frequency."""
    rows = frequency.shape[0]
    with_term = np.diff(frequency.indptr)
    idf = np.log1p((rows - with_term + 0.5) / (with_term + 0.5))
    tf = frequency.data
    weights = frequency.copy()
    weights.data = np.repeat(idf, with_term) * tf * (K1 + 1.0) / (K1 + tf)
    return weights


def _length_normaliser(lengths: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = lengths.mean(axis=0) if len(lengths) else np.ones(lengths.shape[1:])
    normaliser: np.ndarray = 1.0 - b + b * lengths / np.maximum(mean, 1e-9)
    return normaliser


_PROSE_FIELDS = [
    FIELDS.index(field) for field in ("title", "summary", "description", "parameter_descriptions")
]


UNSUPPORTED_NAME_WEIGHT = 0.5
_NAME = FIELDS.index("name")
_SUPPORT_FIELDS = [FIELDS.index(field) for field in ("title", "description", "parameter_names")]


def _name_support(
    rows: np.ndarray, fields: np.ndarray, columns: np.ndarray, shape: tuple[int, int]
) -> np.ndarray:
    """Per occurrence, 1, or `UNSUPPORTED_NAME_WEIGHT` for a word of a tool's name that its title,
    description and parameters never say: a name of words no text explains (`search_list_get_files`
    over "Looks up records.") names no one job."""
    keys = rows.astype(np.int64) * shape[1] + columns
    said = keys[np.isin(fields, _SUPPORT_FIELDS)]
    factor = np.ones(len(rows))
    in_name = fields == _NAME
    factor[in_name & ~np.isin(keys, said)] = UNSUPPORTED_NAME_WEIGHT
    return factor


class LexicalIndex:
    """BM25F scores of one catalog's tools; immutable and safe to share between threads."""

    def __init__(
        self,
        documents: Sequence[ToolDocument],
        term_ids: np.ndarray,
        tool_weights: scipy.sparse.csc_array,
        server_weights: scipy.sparse.csc_array,
        server_of_tool: np.ndarray,
        names: dict[str, np.ndarray],
        tool_names: Sequence[str],
    ) -> None:
        self.tool_names = tuple(tool_names)
        """The qualified name of each tool, by position."""
        self._documents = tuple(documents)
        """Held so that the documents stay cached for as long as the catalog is in use."""
        self._vocabulary = documents[0].vocabulary if documents else Vocabulary()
        """The vocabulary of its documents' ids (one for all: `tool_documents`)."""
        self._size = len(self._documents)
        self._tool_weights = tool_weights
        """Tool x term BM25F weight, by column: a query adds up its terms' columns."""
        self._server_weights = server_weights
        """Server x term BM25 weight."""
        self._server_of_tool = server_of_tool
        """Row of each tool's server; one past the last for tools without a server."""
        self._names = names
        """Name key -> positions of tools with that qualified or bare name."""
        terms = self._vocabulary.terms(term_ids)
        order = sorted(range(len(terms)), key=terms.__getitem__)
        self._sorted_terms = [terms[column] for column in order]
        self._sorted_columns = order
        self._column_of_term = {int(term_id): column for column, term_id in enumerate(term_ids)}
        # Queries repeat words; a word's columns depend on the index alone (profiled: ~18% of a search).
        self._word_columns_memo: _Memo[text.Word, list[tuple[set[int], float]]] = _Memo(_MEMO_SIZE)
        self._unknown_memo: _Memo[str, bool] = _Memo(_MEMO_SIZE)

    @classmethod
    def build(cls, tools: Sequence[Tool]) -> LexicalIndex:
        """The index of `tools`; a hit's position is the tool's index in `tools`."""
        documents = tool_documents(tools)
        size, field_count = len(documents), len(FIELDS)
        lengths = np.array([[len(field) for field in document.fields] for document in documents], np.int64)
        lengths = lengths.reshape(size, field_count)
        all_ids = np.concatenate(
            [np.zeros(0, np.int32), *(field for document in documents for field in document.fields)]
        )
        # One entry per term occurrence, in document order, then field order.
        rows = np.repeat(np.repeat(np.arange(size), field_count), lengths.ravel())
        fields = np.repeat(np.tile(np.arange(field_count), size), lengths.ravel())
        foreign = foreign_tools(documents)
        if foreign.any():
            kept = ~(foreign[rows] & np.isin(fields, _PROSE_FIELDS))
            all_ids, rows, fields = all_ids[kept], rows[kept], fields[kept]
            lengths = lengths * ~(foreign[:, None] & np.isin(np.arange(field_count), _PROSE_FIELDS))
        term_ids, columns = np.unique(all_ids, return_inverse=True)
        columns = columns.ravel()
        shape = (size, len(term_ids))

        weight = np.array([FIELD_WEIGHTS[field].weight for field in FIELDS])
        b = np.array([FIELD_WEIGHTS[field].length_normalisation for field in FIELDS])
        normaliser = _length_normaliser(lengths, b)
        # Each occurrence adds its field's weight over its field's length normaliser; the sparse
        # constructor sums the occurrences of one term in one tool.
        frequency = scipy.sparse.csc_array(
            (
                weight[fields] / normaliser[rows, fields] * _name_support(rows, fields, columns, shape),
                (rows, columns),
            ),
            shape,
        )
        frequency.sum_duplicates()

        server_names = [split_qualified_name(tool.name)[0] for tool in tools]
        servers = {name: row for row, name in enumerate(dict.fromkeys(filter(None, server_names)))}
        # Tools without a server point past the last server, at a score of 0.
        server_of_tool = np.array([servers.get(name, len(servers)) for name in server_names], np.int64)
        server_of_tool = server_of_tool.reshape(size)
        in_server_document = np.isin(fields, [FIELDS.index(field) for field in SERVER_FIELDS])
        in_server_document &= server_of_tool[rows] < len(servers)
        server_rows = server_of_tool[rows[in_server_document]]
        server_lengths = np.bincount(server_rows, minlength=len(servers)).astype(np.float64)
        server_normaliser = _length_normaliser(server_lengths[:, None], np.array([SERVER_B]))[:, 0]
        server_frequency = scipy.sparse.csc_array(
            (1.0 / server_normaliser[server_rows], (server_rows, columns[in_server_document])),
            (len(servers), len(term_ids)),
        )
        server_frequency.sum_duplicates()
        return cls(
            documents,
            term_ids,
            _saturate(frequency),
            _saturate(server_frequency),
            server_of_tool,
            _name_positions(tools),
            [tool.name for tool in tools],
        )

    def __len__(self) -> int:
        return self._size

    def _column(self, term: str) -> int | None:
        term_id = self._vocabulary.get(term)
        return None if term_id is None else self._column_of_term.get(term_id)

    def _prefix_columns(self, word: str) -> list[int]:
        """Columns of the terms that `word` (a term of no tool here) extends or shortens by
        inflection: one of the two starts with all but the last letter of the other
        (`grafanoje` ~ `grafana`, `dropletus` ~ `droplet`)."""
        if len(word) <= MIN_PREFIX:
            return []
        first = bisect.bisect_left(self._sorted_terms, word[:MIN_PREFIX])
        last = bisect.bisect_left(self._sorted_terms, word[:MIN_PREFIX] + "\U0010ffff")
        found = []
        for position in range(first, last):
            term = self._sorted_terms[position]
            if _shared_prefix_length(word, term) >= min(len(word), len(term)) - 1:
                found.append(self._sorted_columns[position])
        return found

    def _exact_columns(self, alternatives: tuple[str, ...]) -> set[int]:
        return {column for column in map(self._column, alternatives) if column is not None}

    def _inflected_columns(self, alternatives: tuple[str, ...]) -> set[int]:
        return {column for word in alternatives for column in self._prefix_columns(word)}

    def _word_columns(self, word: text.Word) -> list[tuple[set[int], float]]:
        """The columns a query word matches, with how much they count: its terms if any tool has
        them, else (camelCase) its parts, else its stems in other languages, else terms it is an
        inflection of.

        So `GitHub` counts as `github`, not also as `git` and `hub`, and `parseInvoice` as `parse`
        and `invoice`."""
        columns = self._exact_columns(word.terms)
        if columns:
            return [(columns, 1.0)]
        if word.parts:
            return [self._word_columns(text.Word(part))[0] for part in word.parts]
        columns = self._exact_columns(word.variants)
        if columns:
            return [(columns, VARIANT_WEIGHT)]
        return [(self._inflected_columns(word.terms), PREFIX_WEIGHT)]

    def unknown_words(self, query: str) -> list[str]:
        """The words of `query` (of four letters or more, in lower case, each once, in order) that no
        tool's text has a term of: words of another language, or misspelt."""
        words = {token.lower(): token for token in text.spelled_words(query[:MAX_QUERY_CHARS])}
        return [word for word, token in words.items() if self.is_unknown(token)]

    def is_unknown(self, word: str) -> bool:
        """Whether no tool's text has a term of `word` (a content word)."""
        return self._unknown_memo.get(word, self._is_unknown_word)

    def _is_unknown_word(self, word: str) -> bool:
        """Whether `word` is a content word (not a stopword) and no tool has any of its terms."""
        analyzed = text.analyze(word)
        return bool(analyzed) and not any(self._exact_columns(each.terms) for each in analyzed)

    def _query_columns(self, query: str) -> list[tuple[list[int], float]]:
        """Per distinct query word: the columns of its terms, and how much they count."""
        found: dict[tuple[int, ...], float] = {}
        for word in text.analyze(query[:MAX_QUERY_CHARS]):
            for columns, weight in self._word_columns_memo.get(word, self._word_columns):
                if columns:
                    key = tuple(sorted(columns))
                    found[key] = max(found.get(key, 0.0), weight)
        return [(list(columns), weight) for columns, weight in found.items()]

    def bm25_scores(self, query: str) -> np.ndarray:
        """BM25F score of every tool for `query`, with its server's share, without name matches: 0
        where no query term is in the tool's text or its server's."""
        own, server_share = self.bm25_parts(query)
        scores: np.ndarray = own + server_share
        return scores

    def bm25_parts(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """`bm25_scores` in its two parts: every tool's own BM25F, and its share of its server's."""
        if not self._size:
            return np.zeros(0), np.zeros(0)
        query_columns = self._query_columns(query)
        own = _add_columns(self._tool_weights, query_columns)
        server_scores = np.append(_add_columns(self._server_weights, query_columns), 0.0)
        return own, SERVER_WEIGHT * server_scores[self._server_of_tool]

    def name_matches(self, query: str) -> np.ndarray:
        """Positions of the tools that `query` names: the whole query, or an identifier in it, is a
        tool's qualified or bare name up to case and separators (`GitHub create-issue`,
        `use github_create_issue`)."""
        query = query[:MAX_QUERY_CHARS]
        keys = {name_key(query)}
        keys.update(
            name_key(chunk) for chunk in _QUERY_CHUNK.findall(query) if _IDENTIFIER_LIKE.search(chunk)
        )
        found = [self._names[key] for key in keys if key in self._names]
        return np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)

    def scores(self, query: str) -> np.ndarray:
        """Score of every tool for `query` (`bm25_scores`), where a tool the query names
        (`name_matches`) scores above every tool it does not name, whatever their texts say."""
        scores = named_first(self.bm25_scores(query), self.name_matches(query), floor=0.0)
        exact = self._names.get(_EXACT + query.strip())
        if exact is not None:  # the very name, above names equal to it only up to case and separators
            named_first(scores, exact, floor=0.0)
        return scores

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """The best `limit` tools that match `query` at all, best first (ties by position); a long
        request ranked by its sentences too (`search.sentences`)."""
        scores = self.scores(query)
        parts = sentences(query[:MAX_QUERY_CHARS])
        if parts:
            scores = combined(scores, [self.scores(part) for part in parts])
        return best_hits(scores, limit, matching_only=True)


def _add_columns(weights: scipy.sparse.csc_array, query_columns: list[tuple[list[int], float]]) -> np.ndarray:
    """Per row, the sum over query words of the word's weight x its best column's value."""
    scores = np.zeros(weights.shape[0])
    indptr, indices, data = weights.indptr, weights.indices, weights.data
    for columns, weight in query_columns:
        if len(columns) == 1:
            span = slice(indptr[columns[0]], indptr[columns[0] + 1])
            scores[indices[span]] += weight * data[span]
            continue
        # A word with several terms counts once, by the term that scores best in each row.
        best = np.zeros(weights.shape[0])
        for column in columns:
            span = slice(indptr[column], indptr[column + 1])
            rows = indices[span]  # distinct within a column
            best[rows] = np.maximum(best[rows], data[span])
        scores += weight * best
    return scores


def _name_positions(tools: Sequence[Tool]) -> dict[str, np.ndarray]:
    positions: dict[str, list[int]] = {}
    for position, tool in enumerate(tools):
        for key in name_keys(tool):
            positions.setdefault(key, []).append(position)
        positions.setdefault(_EXACT + tool.name, []).append(position)
    return {key: np.array(found, dtype=np.int64) for key, found in positions.items()}


_MEMO_SIZE = 16384
_Key = TypeVar("_Key", bound=Hashable)
_Value = TypeVar("_Value")


class _Memo(Generic[_Key, _Value]):
    """Values of a pure function of a key, the `size` most recently used kept; thread-safe (searches
    run on several threads). It holds values only, never the function: an index keeping the memo of
    its own method would hold itself in a reference cycle, freed only by the garbage collector."""

    def __init__(self, size: int) -> None:
        self._values: LRUCache[_Key, _Value] = LRUCache(size)
        self._lock = threading.Lock()

    def get(self, key: _Key, compute: Callable[[_Key], _Value]) -> _Value:
        with self._lock:
            if key in self._values:
                return self._values[key]
        value = compute(key)
        with self._lock:
            self._values[key] = value
        return value
