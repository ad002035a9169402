"""Imitations of another tool: a name made with look-alike letters of another's (`confusable_imitations`:
Unicode's confusables, and words mixing Latin with another script), a definition equal or nearly
equal to another tool's under a name a version suffix or one edit of the server prefix away
(`lookalikes`), or under the same tool name on another vendor's server (`copies`). Each names the
tool imitated, never the original the other way round: else anyone could hide a real tool by
imitating it.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from rapidfuzz.distance import OSA

from toolsearch.integrity.skeletons import SEPARATORS, confusable_names, name_skeleton
from toolsearch.naming import split_qualified_name
from toolsearch.search.documents import tool_fields
from toolsearch.tool import Tool


def confusable_imitations(names: Sequence[str]) -> dict[str, str | None]:
    """Each name made with look-alike letters of another of `names` (`confusable_names`, unless it
    is the plain form of them) or mixing scripts (`mixed_script_names`), with the name it imitates
    (None when no name of its server is the plain form)."""
    confusable: dict[str, str | None] = {
        name: next(other for other in others if other.isascii() or not name.isascii())
        for name, others in confusable_names(names).items()
        if not _canonical_among(name, others)
    }
    return {**mixed_script_names(names), **confusable}


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
    for word in SEPARATORS.split(unicodedata.normalize("NFKC", name)):
        scripts = {unicodedata.name(char, "?").split()[0] for char in word if char.isalpha()}
        if "LATIN" in scripts and len(scripts) > 1:
            return True
    return False


def _same_but_letters(mixed: str, plain: str) -> bool:
    """Whether `plain` has `mixed`'s characters wherever those are ASCII (and as many)."""
    return len(mixed) == len(plain) and all(a == b for a, b in zip(mixed, plain, strict=True) if a.isascii())


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
