"""The products a catalog serves and the products a request names: the reading behind an answer's
`servers` and what it says is not in the catalog.

Two pure functions. `catalog_products` reads a catalog once (at index time, with its toolset): the
names each server goes by and every word its tools' text uses. `request_products` reads a request
against that: the servers whose product it names, and the names it gives that no tool mentions.

- **The names a server goes by.** Its own name as a phrase (`aws-documentation` is "aws
  documentation"), each part of its name that is a product rather than a common word, and the proper
  names its tools' descriptions use for it (`gsheets` is "Google Sheets"). A part of a server name
  is a common word when the catalog's other servers use it in their tools' text about as often
  (`cloud`, `search`, `chart`); a proper name is a run of capitalised words written capitalised
  wherever it stands inside a sentence, used by several of the server's tools and mostly by its.
  A name the tools of two other servers or more use too ("google", "drive", "time") names a
  product only written capitalised, and an ordinary word ("time", "chart") only capitalised
  inside a sentence, not first.
- **Whole words only.** A request names a product by whole words or a whole phrase of them, where
  the longest phrase wins: "AWS documentation" names `aws-documentation`, not every `aws-*`
  server; words of paths, addresses, file names and identifiers (`docs.stripe.com`,
  `src/billing/x.ts`, `postgres-0`) name nothing. Latin-script words are read in every language
  (product names are written the same); Lithuanian inflects them, so a name of four letters or
  more also matches with an ending of up to three letters, its last "a" dropped or not
  ("Jiroje", "Grafanoje", "Notione").
- **What no tool mentions.** A proper name of the request (capitalised inside a sentence,
  capitalised within the word like "BambooHR", or a Latin word with a capital in a Chinese or
  Japanese request, whose lower-case Latin words are mostly values and identifiers; not a quoted
  value, code like `parseInvoice` or `ISODate(`, a day or a month, nor a German noun) that no
  tool's text has, and no server's name: a product the catalog lacks, or a value (a person, a
  city). The answer decides what it makes of it (`metatools.answer`).
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from toolsearch.naming import split_qualified_name
from toolsearch.search import stopwords
from toolsearch.search.text import language_of
from toolsearch.tool import Tool

MAX_PHRASE: Final = 3
"""The most words of a product name."""
OWN_SHARE: Final = 0.5
"""The least share of the tools mentioning a word that a server (or its vendor's servers) must hold
for the word to name it."""
CAPITALISED_SHARE: Final = 0.8
"""The least share of a word's occurrences inside sentences written capitalised, for a proper name."""
MIN_TOOLS: Final = 3
"""The fewest of a server's tools that must use a proper name for it to name the server."""
INFLECTED_STEM: Final = 4
"""The shortest name matched with an inflection's ending (Lithuanian: "Jiroje")."""
MAX_ENDING: Final = 3

_GENERIC: Final = frozenset(
    {"mcp", "api", "server", "tools", "full", "official", "remote", "py", "go", "community", "ea", "rest"}
)
"""Parts of server names that name no product."""
_LATIN_WORD = re.compile(r"[0-9A-Za-zÀ-ɏ]+(?:['’][A-Za-zÀ-ɏ]+)?")
_SENTENCE_END = re.compile(r"[.!?:;\n¿¡]\s*$|^\s*$")
_IDENTIFIER_CASE = re.compile(r"^[a-z]+[A-Z]|[A-Z][a-z]+[A-Z][a-z]+[A-Z]")
"""Code, not a name: `parseInvoice`, `vCPU`, `ReadOnlyAccess`, `OutOfSync` (but `BambooHR`, `MySQL`)."""
_IDENTIFIER_JOIN = re.compile(r"[./_:=~@#\\]")
_IDENTIFIER_NEXT = re.compile(r"[/_=~@#\\(]|[.:]\w|-\d")
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|„[^“”]*[“”]|«[^»]*»|'[^']*'(?!\w)|「[^」]*」")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_FUNCTION_WORDS: Final = frozenset(
    word
    for text in (
        stopwords.ENGLISH,
        stopwords.LITHUANIAN,
        stopwords.GERMAN,
        stopwords.SPANISH,
        stopwords.FRENCH,
    )
    for word in text.split()
)

_CALENDAR: Final = """
    monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december
    montag dienstag mittwoch donnerstag freitag samstag sonntag januar februar märz juni juli oktober
    dezember
    lunes martes miércoles jueves viernes sábado domingo enero febrero marzo abril mayo junio julio
    agosto septiembre octubre noviembre diciembre
    lundi mardi mercredi jeudi vendredi samedi dimanche janvier février mars avril mai juin juillet
    août septembre octobre novembre décembre
    pirmadienis antradienis trečiadienis ketvirtadienis penktadienis šeštadienis sekmadienis sausis
    vasaris kovas balandis gegužė birželis liepa rugpjūtis rugsėjis spalis lapkritis gruodis
"""
_CALENDAR_WORDS: Final = frozenset(_CALENDAR.split())
"""Days and months: capitalised in English, never a product."""


@dataclass(frozen=True, slots=True)
class CatalogProducts:
    """What `request_products` reads a request against."""

    names: dict[tuple[str, ...], frozenset[str]]
    """Each product name (its words, in lower case) -> the servers it names."""
    capitalised: frozenset[tuple[str, ...]]
    """The names that name a product only written capitalised: those the catalog's other servers
    use too ("google", "drive", "time")."""
    ordinary: frozenset[tuple[str, ...]]
    """Of those, the ordinary words ("time", "chart"): capitalised inside a sentence, not first."""
    words: frozenset[str]
    """Every word (lower case) of the catalog's tool names, descriptions and schemas."""


@dataclass(frozen=True, slots=True)
class RequestProducts:
    servers: tuple[str, ...]
    """The servers whose product the request names, in the order it names them."""
    unknown: tuple[str, ...]
    """The proper names of the request that nothing in the catalog mentions, as written."""


class _Casing(NamedTuple):
    inside: Counter[str]
    """Each word's occurrences inside sentences of the catalog's descriptions."""
    capitalised: Counter[str]
    """Of those, how many are written capitalised."""

    def proper(self, word: str) -> bool:
        return self.capitalised[word] >= CAPITALISED_SHARE * self.inside[word]


def _words(text: str) -> list[str]:
    return [word.lower() for word in _LATIN_WORD.findall(text)]


@functools.lru_cache(maxsize=4096)
def _server_words(server: str) -> tuple[str, ...]:
    return tuple(part for part in re.split(r"[-._]", server.lower()) if part)


def _tool_text(tool: Tool) -> str:
    schema = tool.input_schema.get("properties")
    return " ".join([tool.name.replace("_", " "), tool.description, " ".join(schema or ())])


def _inside_words(description: str) -> Iterable[tuple[str, bool]]:
    """The words of `description` that stand inside a sentence (not first), each with whether it
    is written as a proper name: capitalised, not all capitals, no digits, three letters or more."""
    for match in _LATIN_WORD.finditer(description):
        word = match.group()
        if not _SENTENCE_END.search(description[max(0, match.start() - 3) : match.start()]):
            yield word, _looks_proper(word)


def _looks_proper(word: str) -> bool:
    return (
        word[0].isupper()
        and word.isalpha()
        and len(word) >= 3
        and not word.isupper()
        and sum(letter.isupper() for letter in word[1:]) <= 1
        and word.lower() not in _FUNCTION_WORDS
    )


def catalog_products(tools: Sequence[Tool]) -> CatalogProducts:
    """The names each server of `tools` goes by, and every word their text uses."""
    server_of = [split_qualified_name(tool.name)[0] for tool in tools]
    mentions: dict[str, set[int]] = defaultdict(set)
    casing = _Casing(Counter(), Counter())
    inside = [[(word.lower(), proper) for word, proper in _inside_words(tool.description)] for tool in tools]
    for position, tool in enumerate(tools):
        for word in set(_words(_tool_text(tool))):
            mentions[word].add(position)
        for word, proper in inside[position]:
            casing.inside[word] += 1
            casing.capitalised[word] += proper
    names: dict[tuple[str, ...], set[str]] = defaultdict(set)
    capitalised: set[tuple[str, ...]] = set()
    for server in set(server_of):
        parts = _server_words(server)
        names[parts].add(server)
        names[(server.lower(),)].add(server)
        for part in set(parts) - _GENERIC if len(parts) > 1 else ():
            if _names_its_servers(part, mentions.get(part, set()), server_of):
                names[(part.rstrip("0123456789") or part,)].add(server)
                capitalised.add((part,))
    for phrase, servers in _proper_names(inside, server_of, casing).items():
        if phrase not in names:
            names[phrase].update(servers)
            capitalised.add(phrase)
    single = [name for name in names if len(name) == 1]
    capitalised.update(name for name in single if _ordinary(name[0], mentions.get(name[0], set()), server_of))
    return CatalogProducts(
        {name: frozenset(servers) for name, servers in names.items()},
        frozenset(capitalised),
        frozenset(name for name in capitalised if len(name) == 1 and not casing.proper(name[0])),
        frozenset(mentions),
    )


def _ordinary(word: str, mentioning: set[int], server_of: Sequence[str]) -> bool:
    """Whether `word` is an ordinary word of the catalog: the tools of two servers or more that do
    not go by it use it ("time", "chart", "fetch")."""
    others = {
        server for server in map(server_of.__getitem__, mentioning) if word not in _server_words(server)
    }
    return len(others) >= 2


def _names_its_servers(part: str, mentioning: set[int], server_of: Sequence[str]) -> bool:
    """Whether the tools whose text uses `part` are mostly of servers with `part` in their name."""
    if len(part) < 3 or not part.isalpha():
        return False
    if not mentioning:
        return True
    own = sum(part in _server_words(server_of[position]) for position in mentioning)
    return own / len(mentioning) >= OWN_SHARE


def _proper_names(
    inside: Sequence[Sequence[tuple[str, bool]]], server_of: Sequence[str], casing: _Casing
) -> dict[tuple[str, ...], set[str]]:
    """Proper names (runs of capitalised words) the tools' descriptions use (`inside`: each tool's
    words inside sentences), each -> the servers that use it in several tools and hold most of the
    tools using it."""
    users: dict[tuple[str, ...], Counter[str]] = defaultdict(Counter)
    for position, words in enumerate(inside):
        runs: set[tuple[str, ...]] = set()
        run: list[str] = []
        for word, proper in words:
            run = [*run, word][-MAX_PHRASE:] if proper else []
            runs.update(
                tuple(run[start:]) for start in range(len(run)) if any(map(casing.proper, run[start:]))
            )
        for phrase in runs:
            users[phrase][server_of[position]] += 1
    named: dict[tuple[str, ...], set[str]] = {}
    for phrase, by_server in users.items():
        total = sum(by_server.values())
        servers = {s for s, count in by_server.items() if count >= MIN_TOOLS and count >= OWN_SHARE * total}
        if servers:
            named[phrase] = servers
    return named


def request_products(request: str, catalog: CatalogProducts) -> RequestProducts:
    """The servers whose product `request` names (the longest name at each place), and its proper
    names that nothing in the catalog mentions."""
    matches = [match for match in _LATIN_WORD.finditer(request) if not _in_identifier(request, match)]
    words = [re.sub(r"['’].*", "", match.group().lower()) for match in matches]
    proper = set(_proper_places(request, matches))
    capitalised = {place for place, match in enumerate(matches) if match.group()[0].isupper()}
    servers: dict[str, None] = {}
    covered: set[int] = set()
    for start in range(len(words)):
        if start in covered:
            continue
        for length in range(MAX_PHRASE, 0, -1):
            name, found = _named(tuple(words[start : start + length]), catalog)
            if found and _as_written(name, start, catalog, capitalised, proper):
                servers.update(dict.fromkeys(sorted(found)))
                covered.update(range(start, start + length))
                break
    unknown = [
        matches[place].group()
        for place in sorted(proper)
        if place not in covered and words[place] not in catalog.words
    ]
    return RequestProducts(tuple(servers), tuple(dict.fromkeys(unknown)))


def _as_written(
    name: tuple[str, ...], place: int, catalog: CatalogProducts, capitalised: set[int], proper: set[int]
) -> bool:
    """Whether the request's words at `place` name a product, written as they are."""
    if name in catalog.ordinary:
        return place in proper
    return name not in catalog.capitalised or place in capitalised


def _in_identifier(request: str, match: re.Match[str]) -> bool:
    """Whether the word is part of a path, an address, a file name or an identifier."""
    before = request[max(0, match.start() - 1) : match.start()]
    after = request[match.end() : match.end() + 2]
    return bool(_IDENTIFIER_JOIN.match(before)) or bool(_IDENTIFIER_NEXT.match(after))


def _named(phrase: tuple[str, ...], catalog: CatalogProducts) -> tuple[tuple[str, ...], frozenset[str]]:
    found = catalog.names.get(phrase)
    if found or len(phrase) != 1:
        return phrase, found or frozenset()
    word = phrase[0]
    for cut in range(1, MAX_ENDING + 1):
        stem = word[:-cut]
        for name in ((stem,), (stem + "a",)):
            if len(name[0]) >= INFLECTED_STEM and name in catalog.names:
                return name, catalog.names[name]
    return phrase, frozenset()


def _proper_places(request: str, matches: Sequence[re.Match[str]]) -> Iterable[int]:
    """Where the request's proper names are: capitalised inside a sentence, capitalised within the
    word, or Latin words with a capital in a Chinese or Japanese request; not quoted values, code,
    days nor months."""
    cjk = bool(_CJK.search(request))
    quoted = [range(*quote.span()) for quote in _QUOTED.finditer(request)]
    nouns_capitalised = language_of(request) == "de"
    for place, match in enumerate(matches):
        word = match.group()
        if not word.isalpha() or word.lower() in _FUNCTION_WORDS or len(word) < 2:
            continue
        if any(match.start() in quote for quote in quoted) or _IDENTIFIER_CASE.search(word):
            continue
        if word.lower() in _CALENDAR_WORDS:
            continue
        inner_capital = any(letter.isupper() for letter in word[1:]) and not word.isupper()
        starts_sentence = bool(_SENTENCE_END.search(request[max(0, match.start() - 3) : match.start()]))
        capital = word[0].isupper() and not starts_sentence and not nouns_capitalised
        if (cjk and not word.islower()) or inner_capital or capital:
            yield place
