"""A request as search reads it, before any model runs: what it asks, in which language, which
of its words to translate and which tools it names.

Pure functions of the request's text and of the catalog's lexical index (and a model's tokenizer
for CJK words): `read_request` is what hybrid search reads once per request, and for a long
request once per sentence (`search.sentences`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from toolsearch.search import text
from toolsearch.search.dictionaries import Dictionaries
from toolsearch.search.lexical import MAX_QUERY_CHARS, LexicalIndex

TRANSLATED_WORDS = 12
"""At most this many words of a query are translated by the model: each costs it a model run, once."""
LOOKED_UP_WORDS = 64
"""At most this many words of a query are looked up in a dictionary (tens of microseconds each)."""

Pieces = Callable[[str], Sequence[str]]
"""How a model's tokenizer segments a text (`Embedder.pieces`): cuts CJK runs into words."""

# Quoted spans in the quotation marks of the languages served, then URLs and e-mail addresses.
_QUOTED = re.compile(
    r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”|„[^“”\n]{1,200}[“”]|«[^»\n]{1,200}»|‘[^’\n]{1,200}’"
    r"|「[^」\n]{1,200}」|『[^』\n]{1,200}』|`[^`\n]{1,200}`|(?<!\w)'[^'\n]{1,200}'(?!\w)"
)
_ADDRESSES = re.compile(r"\b(?:https?://|www\.)\S+|[\w.+-]+@[\w-]+\.[\w.]+")
_SPACES = re.compile(r"\s+")
_MIN_INTENT_CHARS = 3


def intent(query: str) -> str:
    """The query without its data (quoted text, URLs, e-mail addresses): what it asks to be done.
    The whole query when nothing else is left."""
    stripped = _SPACES.sub(" ", _ADDRESSES.sub(" ", _QUOTED.sub(" ", query))).strip()
    return stripped if len(stripped) >= _MIN_INTENT_CHARS else query


@dataclass(frozen=True, slots=True)
class Words:
    """How much of a request the catalog's words cover."""

    words: int
    """Its distinct words (CJK words as the model's tokenizer cuts them)."""
    unknown: int
    """Those that no tool has and no dictionary translates (names, data, or what the catalog lacks)."""


@dataclass(frozen=True, slots=True)
class Request:
    """A request as the index reads it (`read_request`)."""

    query: str
    """The query, cut to `MAX_QUERY_CHARS`: tool names are looked for in all of it."""
    request: str
    """What it asks (`intent`): what the models and BM25F read."""
    language: str
    read: tuple[str, ...]
    """Catalog words the dictionary gave for its words that no tool has."""
    unread: tuple[str, ...]
    """Its words that no tool has and no dictionary knows, for the model to guess."""
    words: Words
    """How much of it the catalog's words cover (for abstention)."""
    named: np.ndarray
    """Positions of the tools it names (`LexicalIndex.name_matches`)."""


def read_request(
    query: str,
    lexical: LexicalIndex,
    pieces: Pieces,
    dictionaries: Dictionaries | None,
    *,
    guesses: bool,
) -> Request:
    """`query` read once for every step that needs it: its intent, language, words to translate
    (for the model to guess too when it `guesses`) and the tools it names."""
    query = query[:MAX_QUERY_CHARS]
    request = intent(query)
    language = text.language_of(request)
    named = lexical.name_matches(query)
    # The catalog is English: a word of an English query that no tool has is a name or data
    # (`Lisbon`), not a word to translate.
    if language != "en":
        read, unread, words = looked_up(request, language, lexical, pieces, dictionaries, guesses=guesses)
        return Request(query, request, language, tuple(read), tuple(unread), words, named)
    words = Words(len(_content_words(request, pieces)), len(lexical.unknown_words(request)))
    return Request(query, request, language, (), (), words, named)


def looked_up(
    query: str,
    language: str,
    lexical: LexicalIndex,
    pieces: Pieces,
    dictionaries: Dictionaries | None,
    *,
    guesses: bool,
) -> tuple[list[str], list[str], Words]:
    """The catalog words the dictionary of `language` gives for the words of `query` that no
    tool has (`LexicalIndex.unknown_words`, then `text.cjk_words`), the first `TRANSLATED_WORDS`
    of those words it lacks, for the model to guess (none unless it `guesses`), and how many of
    the query's words remain unknown."""
    cjk = text.cjk_words(query, pieces)
    unknown = [*lexical.unknown_words(query), *filter(lexical.is_unknown, cjk)][:LOOKED_UP_WORDS]
    read: list[str] = []
    unread = []
    for word in unknown:
        english = dictionaries.english(language, word) if dictionaries is not None else ()
        known = [each for each in english if not lexical.is_unknown(each)]
        if known:
            read.extend(known)
        else:
            unread.append(word)
    words = Words(len(_content_words(query, pieces)), len(unread))
    if not guesses:
        return read, [], words
    return read, unread[:TRANSLATED_WORDS], words


def _content_words(query: str, pieces: Pieces) -> list[str]:
    """The distinct words of `query` that could name what it asks: content words of four
    letters or more, and its CJK words."""
    spelled = dict.fromkeys(word.lower() for word in text.spelled_words(query) if text.analyze(word))
    return [*spelled, *text.cjk_words(query, pieces)]
