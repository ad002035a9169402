"""What text a tool contributes to search, as weighted fields, analysed once per distinct tool.

A tool's document is its fields' terms as ids of a vocabulary shared by the process until it is
full (`MAX_VOCABULARY_TERMS`). Documents are cached by `Tool.digest` for as long as any index (or
anyone else) holds them, so an index for a catalog whose tools were seen before in the current
vocabulary re-tokenises nothing: it only gathers arrays.
"""

from __future__ import annotations

import itertools
import re
import threading
import weakref
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from toolsearch.naming import split_qualified_name
from toolsearch.search import text
from toolsearch.tool import Tool, per_tool

FIELDS = ("name", "server", "title", "summary", "description", "parameter_names", "parameter_descriptions")
"""The fields of a tool document, in the order of `ToolDocument.fields`. `summary` is the first
sentence of the description (which keeps it too): what the tool is for, before the details and
examples that follow. Search indexes it only when it ends within `_MAX_SUMMARY_CHARS`
(`_opens_with_sentence`)."""

_MAX_SCHEMA_DEPTH = 4
_MAX_PARAMETERS = 200
_MAX_SUMMARY_CHARS = 300
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")
_MAX_FIELD_CHARS = 20_000
"""Text past this is not searched: bounds the work a junk definition can cause."""


def _described_parameters(schema: Mapping[str, Any], depth: int) -> Iterator[tuple[str, str]]:
    """(name, description) of each property, nested ones included, depth first."""
    if depth > _MAX_SCHEMA_DEPTH:
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, prop in properties.items():
            if not isinstance(prop, Mapping):
                yield str(name), ""
                continue
            description = prop.get("description")
            yield str(name), description if isinstance(description, str) else ""
            yield from _described_parameters(prop, depth + 1)
    for key in ("items", "additionalProperties"):
        nested = schema.get(key)
        if isinstance(nested, Mapping):
            yield from _described_parameters(nested, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        alternatives = schema.get(key)
        if isinstance(alternatives, list):
            for nested in alternatives:
                if isinstance(nested, Mapping):
                    yield from _described_parameters(nested, depth + 1)


_fields: weakref.WeakKeyDictionary[Tool, Mapping[str, str]] = weakref.WeakKeyDictionary()


def tool_fields(tool: Tool) -> Mapping[str, str]:
    """The text of each field of `tool` (see `FIELDS`), before analysis; found once per tool for as
    long as it is interned, as the integrity checks, the BM25F document and the model's passages
    all read them."""
    fields = _fields.get(tool)
    if fields is None:
        fields = _fields[tool] = MappingProxyType(_tool_fields(tool))
    return fields


def _tool_fields(tool: Tool) -> dict[str, str]:
    server, _ = split_qualified_name(tool.name)
    names: list[str] = []
    descriptions: list[str] = []
    for index, (name, description) in enumerate(_described_parameters(tool.input_schema, 0)):
        if index == _MAX_PARAMETERS:
            break
        names.append(name)
        descriptions.append(description)
    description = tool.description.strip()
    sentence_end = _SENTENCE_END.search(description)
    fields = {
        "name": tool.name,
        "server": server,
        "title": tool.title,
        "summary": description[: sentence_end.start() if sentence_end else None][:_MAX_SUMMARY_CHARS],
        "description": f"{description}\n{tool.search_hint}" if tool.search_hint else description,
        "parameter_names": " ".join(names),
        "parameter_descriptions": "\n".join(filter(None, descriptions)),
    }
    return {field: value[:_MAX_FIELD_CHARS] for field, value in fields.items()}


MAX_VOCABULARY_TERMS = 500_000
"""Terms of one vocabulary before the next catalog starts a new one (see docs/limits.md). The 5,190
recorded tools have about 12,000 distinct terms."""


class Vocabulary:
    """Term <-> id for the terms of the tools analysed while it was the current vocabulary.

    Ids let an index be assembled from cached documents with array operations only. It grows with
    the distinct terms it is given; past `MAX_VOCABULARY_TERMS` the next catalog starts a new one
    (`tool_documents`), so upstreams publishing ever new words cannot grow it without end. An old
    one lives on while a document or an index refers to it.
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._terms: list[str] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._terms)

    def add(self, terms: Sequence[str]) -> np.ndarray:
        with self._lock:
            # Checked as it goes: a new term recurring in `terms` is added once.
            for term in itertools.filterfalse(self._ids.__contains__, terms):
                self._ids[term] = len(self._terms)
                self._terms.append(term)
            return np.fromiter(map(self._ids.__getitem__, terms), dtype=np.int32, count=len(terms))

    def terms(self, ids: Iterable[int]) -> list[str]:
        return [self._terms[term_id] for term_id in ids]

    def get(self, term: str) -> int | None:
        return self._ids.get(term)


_vocabulary = Vocabulary()
_vocabulary_lock = threading.Lock()


def _current_vocabulary() -> Vocabulary:
    """The vocabulary a new catalog's documents go in: a new one once the current is full. A
    catalog may take it past the bound; the next one starts afresh."""
    global _vocabulary
    with _vocabulary_lock:
        if len(_vocabulary) >= MAX_VOCABULARY_TERMS:
            _vocabulary = Vocabulary()
        return _vocabulary


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class ToolDocument:
    digest: str
    vocabulary: Vocabulary
    """The vocabulary its ids are of."""
    fields: tuple[np.ndarray, ...]
    """Per field of `FIELDS`: ids of its terms in `vocabulary`, repeated as often as they occur."""
    language: str = ""
    """The language its title and description are written in (`text_language`); "" when too short
    to say."""


_documents: weakref.WeakValueDictionary[str, ToolDocument] = weakref.WeakValueDictionary()
_documents_lock = threading.Lock()


def _tool_document(tool: Tool, vocabulary: Vocabulary, analysed: dict[str, np.ndarray]) -> ToolDocument:
    """The analysed document of `tool` in `vocabulary`, shared by every caller of a tool with this
    digest. `analysed` holds the ids of field texts met before (tools of one server share its
    name, and many their titles or parameters): each text is analysed once."""
    document = _documents.get(tool.digest)
    if document is not None and document.vocabulary is vocabulary:
        return document
    fields = dict(tool_fields(tool))
    if not _opens_with_sentence(fields["description"]):
        fields["summary"] = ""
    for value in fields.values():
        if value not in analysed:
            ids = analysed[value] = vocabulary.add(text.terms(value))
            ids.flags.writeable = False  # shared by every document with this text
    document = ToolDocument(
        digest=tool.digest,
        vocabulary=vocabulary,
        fields=tuple(analysed[fields[field]] for field in FIELDS),
        language=text_language(f"{fields['title']} {fields['description']}"),
    )
    with _documents_lock:
        # Another thread may have analysed the same tool meanwhile: keep one copy per vocabulary.
        cached = _documents.get(tool.digest)
        if cached is not None and cached.vocabulary is vocabulary:
            return cached
        _documents[tool.digest] = document
        return document


_LANGUAGE_CHUNK_WORDS = 10
_LANGUAGE_CHUNKS = 24
_MIN_LANGUAGE_CHUNKS = 3
_LANGUAGE_MAJORITY = 0.6
_CJK_CHARS = 2000
_MIN_CJK_CHARS = 40


def text_language(value: str) -> str:
    """The language `value` is written in, "" when it is too short to say (fewer than three runs of
    ten words) or mixed. Each run of ten words is guessed on its own (`text.language_of`) and one
    language must hold most of them: technical English (`SI/BR/ACL regex+snippets`) fools a guess
    over a few words, rarely most runs of a longer text. The first `_LANGUAGE_CHUNKS` runs are read.
    A text in Chinese, Japanese or Korean script is told by its script."""
    whole = text.language_of(value[:_CJK_CHARS])
    if whole in ("ja", "ko", "zh"):  # told by its script, not by its words (few spaces)
        return whole if len(value) >= _MIN_CJK_CHARS else ""
    words = value.split()[: _LANGUAGE_CHUNK_WORDS * _LANGUAGE_CHUNKS]
    runs = [
        run
        for start in range(0, len(words), _LANGUAGE_CHUNK_WORDS)
        if len(run := " ".join(words[start : start + _LANGUAGE_CHUNK_WORDS])) >= 20
    ]
    if len(runs) < _MIN_LANGUAGE_CHUNKS:
        return ""
    language, count = Counter(map(text.language_of, runs)).most_common(1)[0]
    return language if count >= _LANGUAGE_MAJORITY * len(runs) else ""


def _opens_with_sentence(description: str) -> bool:
    """Whether `description` opens with a sentence that ends within `_MAX_SUMMARY_CHARS`. A text
    that does not (a list of words) gets no summary weight in search: a long run of words cannot
    buy it. The model still reads its start (`semantic.passage`): a passage without it would be the
    tool's name alone, which embeds close to any request with one of its words."""
    end = _SENTENCE_END.search(description)
    return (end.start() if end else len(description)) <= _MAX_SUMMARY_CHARS


def tool_documents(tools: Sequence[Tool]) -> list[ToolDocument]:
    """The documents of `tools`, all in one vocabulary (the current one): a document cached in an
    older vocabulary is analysed again."""
    vocabulary = _current_vocabulary()
    analysed: dict[str, np.ndarray] = {}
    return [_tool_document(tool, vocabulary, analysed) for tool in tools]


def foreign_languages(documents: Sequence[ToolDocument]) -> np.ndarray:
    """Per tool, the language its text is written in when that is another language than the
    catalog's (the language most of its tools whose language can be told are written in), else "".

    Such a tool's prose (title, description, parameter descriptions) is not searched
    (`LexicalIndex`): requests in its language would match it alone, since no tool of the catalog
    has their words, and those words would then not be translated into the catalog's (`HybridIndex`
    translates only words no tool has); it is still found by its name and parameters. Its meaning
    is judged beside the other tools written in its language (`isolation.LanguageShares`):
    the models match a text's meaning in any language, and a request is closer to any text in its
    own language, so that closeness is no evidence for one of them."""
    languages = np.array([document.language for document in documents], dtype=object)
    told = languages[languages != ""]
    if not len(told):
        return np.full(len(documents), "", dtype=object)
    values, counts = np.unique(told, return_counts=True)
    foreign: np.ndarray = np.where(languages == values[np.argmax(counts)], "", languages)
    return foreign


def foreign_tools(documents: Sequence[ToolDocument]) -> np.ndarray:
    """Per tool, whether its text is written in another language than the catalog's
    (`foreign_languages`)."""
    foreign: np.ndarray = foreign_languages(documents) != ""
    return foreign


_NAME_SEPARATORS = re.compile(r"[\W_]+")


def name_key(name: str) -> str:
    """A name as people may write it: any case, any separators (`Create-Issue` ~ `create_issue`)."""
    return _NAME_SEPARATORS.sub("", text.fold(name))


@per_tool
def name_keys(tool: Tool) -> frozenset[str]:
    """The keys of a tool's name and bare name (without its server's), as people may write them."""
    _, bare = split_qualified_name(tool.name)
    return frozenset({name_key(tool.name), name_key(bare)} - {""})
