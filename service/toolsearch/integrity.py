"""Search integrity: tool text that addresses the model, look-alikes and copies, and definitions
that change.

Tool names, descriptions and schemas are written by whoever publishes a server behind the gateway.
These defences sit here (ranking that stuffing or another language cannot buy is in
`search.lexical`):

- **Suspicious text is flagged** (`text_reasons`): a title, description or any string of the
  input schema that addresses the model, telling it to ignore other tools or the user, to always
  call this one, to keep something from the user or to pass secrets along. Telling it how to use
  the tool well is not flagged.
- **Look-alikes and copies are named** (`integrity`): a name made with look-alike letters of
  another tool's (Unicode's confusables, through `confusable_homoglyphs`, and words mixing Latin
  with another script), a definition equal or nearly equal to another tool's under a name a
  version suffix or one edit of the server prefix away (`lookalikes`), or under the same tool
  name on another vendor's server (`copies`). The imitation is flagged with the tool it imitates,
  never the original (else anyone could hide a real tool by imitating it); the operator's
  `allowed` patterns overrule the rules. Flags are reasons, never text: results carry them
  (`"suspicious": [...]`, `"imitates"`), the metric counts them by reason, the log names the tool;
  search ranks flagged tools after the others (`flagged_last`).
- **Definitions are pinned** (`ToolGuard`): the digest of each tool the first time a catalog
  identity's listing shows it is kept in the store, so that replicas agree. A later listing whose
  tool of the same name has another digest is a change: logged (name and digests) and counted. With
  `on_change="quarantine"` the changed tool is withheld (not searchable, not callable, calls told
  why) until its new digest is in the approvals file; with `"allow"` the pin follows the change.
- **Hiding is the operator's choice**: with `hide_suspicious` flagged tools are withheld too.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, Protocol, TypeVar

from confusable_homoglyphs import confusables
from rapidfuzz.distance import OSA

from toolsearch.naming import split_qualified_name
from toolsearch.search.documents import tool_fields
from toolsearch.tool import Tool
from toolsearch.untrusted import clean_text

if TYPE_CHECKING:
    from toolsearch.backends.base import CatalogStore
    from toolsearch.telemetry import Telemetry

logger = logging.getLogger(__name__)

OnChange = Literal["allow", "quarantine"]


class _Positioned(Protocol):
    @property
    def position(self) -> int: ...


_Ranked = TypeVar("_Ranked", bound=_Positioned)

CONFUSABLE_NAME: Final = "confusable-name"
_SHOWN_FOREIGN: Final = 5
"""Look-alike characters of a name an error message lists (a name has up to 256)."""
IMITATES_TOOL: Final = "imitates-tool"
COPIES_TOOL: Final = "copies-tool"
_SCANNED_CHARS: Final = 20_000
"""Text past this is not scanned (as it is not searched): bounds the work of a junk definition."""
_GAP = r"[^.!?\n]{0,60}?"
"""Words between the parts of one instruction, within one sentence."""
_TOOLS = r"(?:other|another|any other|the other|remaining|all other)\s+(?:tools?|functions?|servers?)"
_SECRETS = (
    r"(?:api[ _-]?keys?|access[ _-]?tokens?|tokens|passwords|secrets|credentials|private[ _-]?keys?"
    r"|ssh[ _-]?keys?|id_rsa|\.ssh\b|\.env\b|\.aws\b|/etc/passwd|environment variables|session cookies)"
)
# Written in lower case: ASCII text is matched lower-cased, case-sensitively (`_text_reasons`).
_PATTERNS: Final[dict[str, tuple[str, ...]]] = {
    "instructs-about-other-tools": (
        rf"\b(?:do not|don't|never|avoid|stop)\s+(?:use|using|call|calling|invoke|run|trust){_GAP}\b{_TOOLS}",
        rf"\binstead of\s+(?:using|calling|invoking)?\s*{_TOOLS}",
        rf"\b{_TOOLS}\s+(?:are|is)\s+(?:deprecated|broken|unsafe|disabled|outdated|malicious)\b",
        r"\binstead of the others\b",
        r"\b(?:supersedes?|outranks?|overrides?|replaces?|takes? precedence over)\s+(?:every|all|any)\b"
        rf"{_GAP}\b(?:tools?|functions?|instructions)\b",
        rf"\b(?:remaining|other)\s+(?:tools?|functions?){_GAP}\b(?:obsolete|deprecated|broken|unsafe|outdated"
        r"|unreliable|malicious)\b",
        r"\b(?:prefer|choose|pick|select|use)\s+this\s+(?:tool|function|one)\s+over\s+(?:all|any|every|the)\s+"
        r"(?:others?|alternatives?|other)\b",
        r"\beven\s+(?:when|if)\s+(?:another|other|a different)\s+tools?\b",
    ),
    "instructs-to-ignore": (
        r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier"
        r"|other|your|system|existing)\s+(?:instructions|rules|prompts?|tools|guidelines|directions)\b",
        r"\bignore (?:all|any) other\b",
        r"\b(?:ignore|disregard|forget)\s+(?:the\s+)?(?:rest of the\s+)?(?:tool list|tools list|list of tools"
        r"|available tools|other tools)\b",
    ),
    "instructs-to-always-call": (
        r"\balways\s+(?:call|use|invoke|run|prefer|choose|pick|select)\s+this\s+(?:tool|function|one)\b",
        rf"\b(?:call|use|invoke|run)\s+this\s+(?:tool|function|one){_GAP}\bbefore\s+(?:any|every|all)\s+(?:other\s+)?tools?\b",
        r"<\s*/?\s*(?:important|system)\s*>",
        r"\b(?:route|send|direct|pass)\s+(?:all|every|each|any)\s+(?:requests?|tasks?|queries|questions?|calls?)"
        r"\s+(?:through|to|via)\s+(?:this|it)\b",
        r"\b(?:select|use|call|invoke|choose|pick)\s+this\s+(?:tool|function|one)\s+for\s+(?:every|all|any|each)\s+"
        r"(?:tasks?|requests?|quer(?:y|ies)|questions?|purposes?)\b",
        r"\bonly\s+this\s+(?:one|tool|function)\s+(?:should|must|may|can)\s+be\s+used\b",
        rf"\bmust\s+(?:first\s+)?(?:invoke|call|use|run)\s+this\s+(?:tool|function){_GAP}\bbefore\s+"
        r"(?:answering|responding|replying|anything|doing anything)\b",
    ),
    "hides-from-user": (
        r"\b(?:do not|don't|never)\s+(?:tell|inform|let|notify|alert)\s+the\s+user\s+"
        r"(?:about|know|that you)\b",
        r"\bwithout\s+(?:telling|informing|notifying|alerting)\s+the\s+user\b",
        r"\b(?:the\s+)?user\s+(?:must|should)\s+not\s+(?:know|see|be told)\b",
        rf"\b(?:never|do not|don't)\s+(?:mention|reveal|disclose)\b{_GAP}"
        r"\b(?:to\s+the\s+user|that\s+this\s+tool)\b",
    ),
    "claims-authority": (
        r"\b(?:treat|consider|read)\s+this\s+(?:description|text|message)\s+as\s+(?:an?\s+)?(?:system|developer)\s+"
        r"(?:instruction|prompt|message)",
        r"\b(?:outranks?|overrides?|supersedes?|takes? precedence over)\s+(?:the\s+)?"
        r"(?:user|system prompt)\b",
        r"\bwhatever\s+the\s+user\s+(?:asks|says|wants|requests)\b",
    ),
    "asks-for-secrets": (
        rf"\b(?:pass|send|include|attach|forward|upload|copy|paste|put)\b{_GAP}\b(?:the\s+)?user'?s?\s+{_SECRETS}",
        rf"\b(?:read|send|include|attach|forward|upload|cat)\b{_GAP}(?:~/\.ssh|id_rsa|\.aws/credentials|/etc/shadow)",
        rf"\b(?:send|include|attach|forward|upload)\b{_GAP}\b(?:all|every|any)\s+{_SECRETS}",
    ),
}
_COMPILED: Final = {
    reason: re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)
    for reason, patterns in _PATTERNS.items()
}
REASONS: Final = (*_PATTERNS, CONFUSABLE_NAME, IMITATES_TOOL, COPIES_TOOL)
"""Every reason a tool may be flagged for (the metric's attribute values)."""
_EVERY_PATTERN = [pattern for patterns in _PATTERNS.values() for pattern in patterns]
_AT_WORDS = "|".join(f"(?:{pattern[2:]})" for pattern in _EVERY_PATTERN if pattern.startswith(r"\b"))
# The patterns opening with `\b` go on with a letter, so their `\b` is "no word character before":
# said once in front of them all, it scans in 60% of the time their own `\b`s take.
_ANY_PATTERN = "|".join([rf"(?<!\w)(?:{_AT_WORDS})", *(p for p in _EVERY_PATTERN if not p.startswith(r"\b"))])
_ANY_REASON: Final = re.compile(_ANY_PATTERN, re.IGNORECASE)
"""Whether a text matches any reason's pattern: one scan instead of one per reason, and nearly every
text matches none."""
_ANY_REASON_ASCII: Final = re.compile(_ANY_PATTERN, re.ASCII)
"""The same for ASCII text in lower case, in less than half the time: Unicode's case-insensitive
matches of ASCII patterns in ASCII text are ASCII's, and lower-case patterns match lower-cased text
where they match the text in any case."""
_SEPARATORS = re.compile(r"[\W_]+")


@lru_cache(maxsize=16384)
def _text_reasons(text: str) -> tuple[str, ...]:
    folded = " ".join(unicodedata.normalize("NFKC", clean_text(text[:_SCANNED_CHARS])).split())
    folded = _skeleton_chars(folded)
    if folded.isascii():
        if not _ANY_REASON_ASCII.search(folded.lower()):
            return ()
    elif not _ANY_REASON.search(folded):
        return ()
    return tuple(reason for reason, pattern in _COMPILED.items() if pattern.search(folded))


def text_reasons(tool: Tool) -> tuple[str, ...]:
    """Why the text of `tool` addresses the model (reasons of `REASONS`, in their order); () when
    it does not. Read: its title, description and every string of its input schema (parameter
    descriptions, titles, enum values, defaults, examples): the model reads them all."""
    fields = tool_fields(tool)
    return _text_reasons(
        ". ".join((fields["title"], fields["description"], *_schema_strings(tool.input_schema)))
    )


def _schema_strings(schema: Mapping[str, object]) -> list[str]:
    """The strings of a schema (not its keys), depth first, until `_SCANNED_CHARS` of them."""
    found: list[str] = []
    total = 0
    stack: list[object] = [schema]
    while stack and total < _SCANNED_CHARS:
        value = stack.pop()
        if isinstance(value, str):
            found.append(value)
            total += len(value)
        elif isinstance(value, Mapping):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return found


def _skeleton_chars(text: str) -> str:
    """`text` with each character confusable with a Latin one replaced by it (Cyrillic `і` -> `i`)."""
    if text.isascii():
        return text
    # Each character is looked up once; ASCII ones are Latin or Common, never replaced.
    others = "".join(char for char in set(text) if not char.isascii())
    found = confusables.is_confusable(others, greedy=True, preferred_aliases=["latin", "common"]) or []
    replaced = {}
    for entry in found:
        latin = [glyph["c"] for glyph in entry["homoglyphs"] if glyph["c"].isascii()]
        if latin:
            replaced[ord(entry["character"])] = latin[0]
    return text.translate(replaced)


@lru_cache(maxsize=65536)
def name_skeleton(name: str) -> str:
    """What `name` looks like: width, look-alike letters (Unicode confusables), case and separators
    folded. Two different names with one skeleton are confusable."""
    folded = unicodedata.normalize("NFKC", name)
    return _SEPARATORS.sub("", _skeleton_chars(folded).casefold())


def foreign_characters(name: str) -> str:
    """Where `name` has characters `name_skeleton` folds into others, for an error message to say
    why it looks like another name: `U+0440 CYRILLIC SMALL LETTER ER at position 17`, comma-separated
    (empty when it has none; the first `_SHOWN_FOREIGN` of them and how many more)."""
    found = [
        f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed character')} at position {position}"
        for position, char in enumerate(name, 1)
        if not char.isascii() and _skeleton_chars(unicodedata.normalize("NFKC", char)) != char
    ]
    more = f" and {len(found) - _SHOWN_FOREIGN} more" if len(found) > _SHOWN_FOREIGN else ""
    return ", ".join(found[:_SHOWN_FOREIGN]) + more


def lookalike_note(name: str, meant: str) -> str:
    """Why `name` is not `meant` when the two look alike (a Cyrillic `р` for a Latin `p`): which
    characters differ and where; empty when they do not look alike."""
    if name == meant or name_skeleton(name) != name_skeleton(meant):
        return ""
    foreign = foreign_characters(name)
    return f" It looks like {meant!r} but has {foreign}." if foreign else ""


def confusable_names(names: Iterable[str]) -> dict[str, list[str]]:
    """Each name that looks like another of `names` (`name_skeleton`), with those it looks like."""
    by_skeleton: dict[str, list[str]] = {}
    for name in names:
        by_skeleton.setdefault(name_skeleton(name), []).append(name)
    return {
        name: [other for other in group if other != name]
        for group in by_skeleton.values()
        if len(group) > 1
        for name in group
    }


@dataclass(frozen=True, slots=True)
class Integrity:
    """What one catalog's tools are flagged for (`integrity`)."""

    reasons: Mapping[str, tuple[str, ...]]
    """Why each flagged tool looks hostile (reasons of `REASONS`), by name; unflagged tools left out."""
    imitated: Mapping[str, str]
    """The tool each look-alike imitates, by the look-alike's name."""


def integrity(tools: Sequence[Tool], allowed: Sequence[str] = ()) -> Integrity:
    """The flags of one catalog: text that addresses the model (`text_reasons`), a name made with
    look-alike letters of another tool's (`confusable-name`), a look-alike of another tool's
    definition (`imitates-tool`, `lookalikes`) and a copy of it on another vendor's server
    (`copies-tool`, `copies`), each naming the tool it imitates. A tool whose name,
    or the name of the tool it would imitate, matches a glob of `allowed` is not flagged for its name
    (the operator's word over the rule's)."""
    names = [tool.name for tool in tools]
    confusable: dict[str, str | None] = {
        name: next(other for other in others if other.isascii() or not name.isascii())
        for name, others in confusable_names(names).items()
        if not _canonical_among(name, others)
    }
    confusable = {**mixed_script_names(names), **confusable}
    lookalike = lookalikes(tools)
    # A look-alike pair is one already: its original is no copy of its imitation.
    copied = {
        name: original for name, original in copies(tools).items() if {name, original}.isdisjoint(lookalike)
    }
    imitated = {
        name: original
        for name in {*confusable, *lookalike, *copied}
        if (original := lookalike.get(name) or confusable.get(name) or copied.get(name))
    }

    def allowed_name(name: str | None) -> bool:
        return name is not None and any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed)

    # A pair the operator allows is left alone whichever of its two names the pattern matches.
    flagged = {
        name
        for name in {*confusable, *lookalike, *copied}
        if not (allowed_name(name) or allowed_name(imitated.get(name)))
    }
    imitated = {name: original for name, original in imitated.items() if name in flagged}
    reasons = {}
    for tool in tools:
        found = text_reasons(tool)
        if tool.name in flagged:
            found += (CONFUSABLE_NAME,) if tool.name in confusable else ()
            found += (IMITATES_TOOL,) if tool.name in lookalike else ()
            found += (COPIES_TOOL,) if tool.name in copied else ()
        if found:
            reasons[tool.name] = found
    return Integrity(reasons, imitated)


def mixed_script_names(names: Sequence[str]) -> dict[str, str | None]:
    """Each name with a word that mixes Latin letters with another script's (Greek `η` in
    `create_preseηtation`, beyond Unicode's confusables), with the name of its server it imitates:
    one as long whose letters are the same wherever the mixed name's are ASCII (None when none is)."""
    mixed = [name for name in names if not name.isascii() and _mixes_scripts(name)]
    if not mixed:
        return {}
    by_server: dict[str, list[str]] = {}
    for name in names:
        if name.isascii():
            by_server.setdefault(split_qualified_name(name)[0], []).append(name)
    found: dict[str, str | None] = {}
    for name in mixed:
        folded = unicodedata.normalize("NFKC", name).casefold()
        same = by_server.get(split_qualified_name(name)[0], [])[:_MAX_SERVER_SCAN]
        found[name] = next((other for other in same if _same_but_letters(folded, other.casefold())), None)
    return found


_MAX_SERVER_SCAN = 2000
"""At most this many names of one server are compared with a mixed-script name."""


def _mixes_scripts(name: str) -> bool:
    for word in _SEPARATORS.split(unicodedata.normalize("NFKC", name)):
        scripts = {unicodedata.name(char, "?").split()[0] for char in word if char.isalpha()}
        if "LATIN" in scripts and len(scripts) > 1:
            return True
    return False


def _same_but_letters(mixed: str, plain: str) -> bool:
    """Whether `plain` has `mixed`'s characters wherever those are ASCII (and as many)."""
    return len(mixed) == len(plain) and all(a == b for a, b in zip(mixed, plain, strict=True) if a.isascii())


MAX_DEMOTED: Final = 100
"""At most this many flagged tools are looked past in one search (a catalog of thousands of flagged
tools would cost its size per search); past them, flagged tools rank by their scores."""


def flagged_last(ranked: Sequence[_Ranked], flagged: Container[int]) -> list[_Ranked]:
    """`ranked` (best first) with the tools at `flagged` positions after all others, each part in its
    order: a tool flagged suspicious gains nothing by the text it was flagged for, nor by imitating
    another tool, over any tool that is not. Search looks `MAX_DEMOTED` more tools deep to fill the
    answer."""
    return [hit for hit in ranked if hit.position not in flagged] + [
        hit for hit in ranked if hit.position in flagged
    ]


def _canonical_among(name: str, others: Sequence[str]) -> bool:
    """Whether `name` is the plain form of the names confusable with it: plain ASCII where some
    other uses look-alike letters (the imitation is the one that needed them). Names all plain or
    all not are each flagged: which came first is not for the text to say."""
    return name.isascii() and not all(other.isascii() for other in others)


_VERSION_SUFFIX = re.compile(
    r"(?:[\W_]+(?:v\d+(?:[._]\d+)*|\d+|new|newer|latest|next|beta|alpha|updated|official|fixed|final|pro|plus)"
    r"|(?<=[a-z])v?\d+)$"
)
"""A version or variant suffix at the end of a name: `_v2`, `-v3`, `_new`, `2`."""
_NEAR_WORDS = 0.9
"""Two definitions are near-equal when this share of the shorter text's words is in the other..."""
_NEAR_PARAMETERS = 0.8
"""...and this share of the parameter names of either is in the other."""


def lookalikes(tools: Sequence[Tool]) -> dict[str, str]:
    """Each tool whose definition equals or nearly equals another tool's under a name that only a
    look-alike letter, a version suffix or one edit of a letter on another server sets apart: the
    name it imitates.

    Which of two such tools imitates the other: the one with look-alike letters or the suffix; for
    an edit, the one whose server is made of such copies more than the other's (an imitator's
    server holds little else). When neither is (two one-tool servers), each is flagged, naming the
    other. Two servers of one vendor listing the same tools (`ms365`, `ms365-mail-calendar`) are
    not look-alikes: their names differ by a word, not by a letter."""
    by_name = {tool.name: tool for tool in tools}
    pairs = [
        pair for pair in _candidate_pairs(list(by_name)) if _near_equal(by_name[pair[0]], by_name[pair[1]])
    ]
    copied = Counter(split_qualified_name(name)[0] for pair in pairs for name in pair)
    sizes = Counter(split_qualified_name(name)[0] for name in by_name)
    imitated: dict[str, str] = {}
    for first, second in pairs:
        for suspect, original in ((first, second), (second, first)):
            if _imitates(suspect, original, copied, sizes):
                imitated.setdefault(suspect, original)
    return imitated


def copies(tools: Sequence[Tool]) -> dict[str, str]:
    """Each tool whose definition equals or nearly equals another's of the same tool name on a
    server of another vendor (the first word of the server names differs: `github` and `acme`, not
    `ms365` and `ms365-mail-calendar`): the tool it copies. Of the two, the copy is the one that
    says more (it added a line); when they say as much, each is flagged, naming the other."""
    by_bare: dict[str, list[Tool]] = {}
    for tool in tools:
        server, bare = split_qualified_name(tool.name)
        if server:
            by_bare.setdefault(name_skeleton(bare), []).append(tool)
    copied: dict[str, str] = {}
    for group in by_bare.values():
        if not 1 < len(group) <= _MAX_GROUP:
            continue
        for position, first in enumerate(group):
            for second in group[position + 1 :]:
                if _vendor(first.name) == _vendor(second.name) or not _near_equal(first, second):
                    continue
                sizes = len(_definition_words(first)), len(_definition_words(second))
                if sizes[0] >= sizes[1]:
                    copied.setdefault(first.name, second.name)
                if sizes[1] >= sizes[0]:
                    copied.setdefault(second.name, first.name)
    return copied


def _vendor(name: str) -> str:
    """The first word of a tool's server name (`ms365` of `ms365-mail-calendar_send-mail`)."""
    return split_qualified_name(name)[0].split("-")[0].casefold()


def _imitates(suspect: str, original: str, copied: Counter[str], sizes: Counter[str]) -> bool:
    """Whether `suspect` is the imitation in a pair of look-alikes with near-equal definitions."""
    if name_skeleton(suspect) == name_skeleton(original):
        return not _canonical_among(suspect, [original])
    if _unversioned(suspect) == name_skeleton(original):
        return True
    if _unversioned(original) == name_skeleton(suspect):
        return False
    share = {
        name: copied[split_qualified_name(name)[0]] / sizes[split_qualified_name(name)[0]]
        for name in (suspect, original)
    }
    return share[suspect] >= share[original]


@lru_cache(maxsize=65536)
def _unversioned(name: str) -> str:
    """The skeleton of `name` without a version suffix (its skeleton when it has none)."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    return name_skeleton(_VERSION_SUFFIX.sub("", folded))


def _candidate_pairs(names: Sequence[str]) -> list[tuple[str, str]]:
    """Pairs of names that look alike: one skeleton, one a version of the other, or the same tool
    name on servers one edit apart. Found through keys (`_keys`), not by comparing every pair."""
    by_key: dict[str, list[str]] = {}
    for name in names:
        for key in _keys(name):
            by_key.setdefault(key, []).append(name)
    pairs: set[tuple[str, str]] = set()
    for key, group in by_key.items():
        if not 1 < len(group) <= _MAX_GROUP:
            continue
        for position, first in enumerate(group):
            for second in group[position + 1 :]:
                if key.startswith("=") or _servers_one_edit_apart(first, second):
                    pairs.add((first, second) if first < second else (second, first))
    return sorted(pairs)


_MAX_GROUP = 64
"""Names sharing one key beyond this are not compared (a catalog of thousands of look-alikes would
cost its square): many near names are not one imitation."""


@lru_cache(maxsize=65536)
def _keys(name: str) -> frozenset[str]:
    """A name's skeleton, its unversioned skeleton, and its server's skeleton with each one letter
    deleted (and whole) before its tool's: two servers one edit apart share such a key."""
    server, bare = split_qualified_name(name)
    keys = {"=" + name_skeleton(name), "=" + _unversioned(name)}
    if server:
        folded, tail = name_skeleton(server), "/" + name_skeleton(bare)
        keys.add("-" + folded + tail)
        keys.update("-" + folded[:i] + folded[i + 1 :] + tail for i in range(len(folded)))
    return frozenset(keys)


def _servers_one_edit_apart(first: str, second: str) -> bool:
    (server, bare), (other_server, other_bare) = split_qualified_name(first), split_qualified_name(second)
    return (
        name_skeleton(bare) == name_skeleton(other_bare)
        and OSA.distance(name_skeleton(server), name_skeleton(other_server)) == 1
    )


def _near_equal(first: Tool, second: Tool) -> bool:
    """Whether two definitions say nearly the same: words of one text in the other, same parameters."""
    if first.digest == second.digest:
        return True
    words = [_definition_words(tool) for tool in (first, second)]
    shorter = min(len(words[0]), len(words[1]))
    if shorter and len(words[0] & words[1]) < _NEAR_WORDS * shorter:
        return False
    if not shorter and (words[0] or words[1]):
        return False
    parameters = [frozenset(tool_fields(tool)["parameter_names"].split()) for tool in (first, second)]
    wider = max(len(parameters[0]), len(parameters[1]))
    return not wider or len(parameters[0] & parameters[1]) >= _NEAR_PARAMETERS * wider


def _definition_words(tool: Tool) -> frozenset[str]:
    fields = tool_fields(tool)
    return frozenset(_WORDS.findall(f"{fields['title']} {fields['description']}".casefold()))


_WORDS = re.compile(r"\w+")


class Approvals:
    """The digests an operator approved, one per line (`#` starts a comment; a tool name may precede
    the digest), read again when the file changes (checked at most once a second)."""

    _CHECK_SECONDS: Final = 1.0

    def __init__(self, path: Path | None, clock: Callable[[], float] = time.monotonic) -> None:
        self._path = path
        self._clock = clock
        self._digests: frozenset[str] = frozenset()
        self._stamp: tuple[int, int] | None = None
        self._checked_at = float("-inf")
        self._lock = threading.Lock()
        self._reload()

    def __contains__(self, digest: str) -> bool:
        if self._path is not None and self._clock() - self._checked_at >= self._CHECK_SECONDS:
            self._reload()
        return digest in self._digests

    def _reload(self) -> None:
        if self._path is None:
            return
        with self._lock:
            self._checked_at = self._clock()
            try:
                stat = os.stat(self._path)
            except OSError:
                stamp = None
            else:
                stamp = (stat.st_mtime_ns, stat.st_size)
            if stamp == self._stamp:
                return
            self._stamp = stamp
            try:
                lines = self._path.read_text(encoding="utf-8").splitlines() if stamp else []
            except (OSError, UnicodeDecodeError) as error:
                logger.warning("cannot read the approved tools file: %s", type(error).__name__)
                return
            entries = (line.split("#", 1)[0].split() for line in lines)
            self._digests = frozenset(entry[-1].lower() for entry in entries if entry)
            logger.info("approved tools file read", extra={"approved": len(self._digests)})


@dataclass(frozen=True, slots=True)
class Change:
    name: str
    pinned: str
    """The digest first seen (or, with `allow`, last seen) for this name."""
    listed: str


class ToolGuard:
    """The operator's integrity settings, applied to every catalog: flags, pins and what is withheld."""

    def __init__(
        self,
        store: CatalogStore,
        telemetry: Telemetry,
        *,
        hide_suspicious: bool = False,
        on_change: OnChange = "allow",
        approvals: Approvals | None = None,
        allowed_lookalikes: Sequence[str] = (),
    ) -> None:
        self._store = store
        self._telemetry = telemetry
        self.hide_suspicious = hide_suspicious
        self.on_change = on_change
        self._approvals = approvals or Approvals(None)
        self.allowed_lookalikes = tuple(allowed_lookalikes)

    def flags(self, tools: Sequence[Tool]) -> Integrity:
        """What `tools` are flagged for (`integrity`), with the operator's allowed look-alikes."""
        return integrity(tools, self.allowed_lookalikes)

    async def review(self, key: str, tools: Sequence[Tool], flagged: Mapping[str, Sequence[str]]) -> None:
        """What a new listing of catalog `key` shows: each flagged tool logged (name and reasons) and
        counted by reason; each tool's digest pinned, and each change logged (name and digests) and
        counted. Store outages propagate (`StoreUnavailable`)."""
        reasons = Counter(reason for found in flagged.values() for reason in found)
        for reason, count in reasons.items():
            self._telemetry.suspicious_tools.add(count, {"toolsearch.suspicious.reason": reason})
        for name, found in flagged.items():
            logger.warning("suspicious tool", extra={"tool": name, "reasons": list(found)})
        for change in await self.changes(key, tools, follow=self.on_change == "allow"):
            quarantined = self.on_change == "quarantine" and change.listed not in self._approvals
            action = "quarantined" if quarantined else "recorded"
            self._telemetry.tool_changes.add(1, {"toolsearch.tool_change.action": action})
            logger.warning(
                "tool definition changed",
                extra={
                    "tool": change.name,
                    "pinned": change.pinned,
                    "listed": change.listed,
                    "action": action,
                },
            )

    async def changes(self, key: str, tools: Sequence[Tool], *, follow: bool = False) -> list[Change]:
        """The tools of `tools` whose digest differs from the one pinned for catalog `key`; names not
        pinned yet are pinned now (with `follow`, changed ones are pinned anew)."""
        pinned = await self._store.pin_digests(
            key, {tool.name: tool.digest for tool in tools}, replace=follow
        )
        return [
            Change(tool.name, pinned[tool.name], tool.digest)
            for tool in tools
            if pinned.get(tool.name, tool.digest) != tool.digest
        ]

    async def quarantined(self, key: str, tools: Sequence[Tool]) -> dict[str, str]:
        """With `quarantine`, the changed tools of catalog `key` (name -> listed digest); else none."""
        if self.on_change != "quarantine":
            return {}
        return {change.name: change.listed for change in await self.changes(key, tools)}

    def withheld_reason(
        self, name: str, digest: str, changed: Mapping[str, str], flagged: Sequence[str]
    ) -> str | None:
        """Why tool `name` (of `digest`) is kept from the caller, or None when it is served."""
        if changed.get(name) == digest and digest not in self._approvals:
            return (
                f"{name} changed since this catalog first listed it and is quarantined until an operator "
                f"approves its new definition (digest {digest})."
            )
        if self.hide_suspicious and flagged:
            foreign = foreign_characters(name) if CONFUSABLE_NAME in flagged else ""
            looks_like = f" Its name looks like another tool's: it has {foreign}." if foreign else ""
            return f"{name} is withheld: its definition looks hostile ({', '.join(flagged)}).{looks_like}"
        return None
