"""Tool descriptions as an answer shows them: upstream text in one line, what the tool does first
(leading notices such as "IMPORTANT: ..." moved behind it), cut at a sentence or clause boundary
within a number of characters (`described`, `cut_text`).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Mapping
from typing import Final

import cachetools

from toolsearch.catalog.boilerplate import without_boilerplate
from toolsearch.tool import Tool
from toolsearch.untrusted import clean_text

_NOTICE = re.compile(r"(IMPORTANT|MANDATORY|REQUIRED|WARNING|NOTE|CRITICAL|ALWAYS|NEVER|ATTENTION|CAUTION)\b")
_DECORATION: Final = frozenset(" \t*#-•>[]|\ufe0f")
_PARAGRAPHS = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"[.!?。！？](?=\s|$)")
_CLAUSE_END = re.compile(r"[,;)] | [-–—] | \(")
_ABBREVIATIONS: Final = frozenset({"e.g", "i.e", "etc", "vs", "cf", "approx", "incl", "no"})


@cachetools.cached(
    cachetools.LRUCache(16_384),
    key=lambda tool, limit, boilerplate=(): (tool.digest, limit, boilerplate),
    lock=threading.Lock(),
)
def described(tool: Tool, limit: int, boilerplate: tuple[str, ...] = ()) -> str:
    """The tool's description as an agent picks by it: what it does first, without its server's
    `boilerplate` sentences, at most `limit` characters; for a tool without one, that it has none
    and the names of its parameters."""
    text = plain(without_boilerplate(tool.description, boilerplate))
    if text:
        return cut_text(text, limit)
    title = plain(tool.title)
    properties = tool.input_schema.get("properties")
    names = [clean_text(str(name))[:40] for name in properties] if isinstance(properties, Mapping) else []
    parameters = f"parameters: {', '.join(names)}" if names else "no parameters"
    return cut_text(f"{title + ' ' if title else ''}(no description; {parameters})", limit)


def plain(text: str) -> str:
    """Upstream text in one line: without control characters, markdown emphasis and the decoration
    that opens lines, leading notices ("IMPORTANT: ...", by paragraph, or by sentence in a text of one
    paragraph) moved behind what follows them."""
    text = clean_text(text[:20_000]).replace("**", "").replace("`", "")
    units = [unit for unit in _PARAGRAPHS.split(text.strip()) if unit.strip()]
    if len(units) == 1:
        units = _sentences(units[0])
    notices = 0
    while notices < len(units) - 1 and _NOTICE.match(_undecorated(units[notices])):
        notices += 1
    ordered = [*units[notices:], *units[:notices]]
    return " ".join(" ".join(_undecorated(line).split()) for unit in ordered for line in unit.splitlines())


def _undecorated(text: str) -> str:
    """`text` without the emoji, bullets and markdown marks that open it."""
    start = 0
    while start < len(text) and (text[start] in _DECORATION or unicodedata.category(text[start])[0] in "SZ"):
        start += 1
    return text[start:]


def _sentences(text: str) -> list[str]:
    sentences, start = [], 0
    for end in _sentence_ends(text):
        if text[start:end].strip():
            sentences.append(text[start:end].strip())
        start = end
    if text[start:].strip():
        sentences.append(text[start:].strip())
    return sentences


def _sentence_ends(text: str) -> list[int]:
    """Where sentences of `text` end: a stop not after a list number, an initial or an abbreviation."""
    ends = []
    for match in _SENTENCE_END.finditer(text):
        words = text[: match.start()].rsplit(None, 1)
        word = words[-1].lower() if words else ""
        if not word or word.isdigit() or len(word) == 1 or word.strip("(") in _ABBREVIATIONS:
            continue
        ends.append(match.end())
    return ends


def cut_text(text: str, limit: int) -> str:
    """`text` (as `plain` leaves it) in one line of at most `limit` characters: cut after the last
    whole sentence that fits (not one that opens a list with a colon), else at a clause or a word,
    ending in `…`."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    window = text[:limit]
    for end in reversed(_sentence_ends(window)):
        if end < limit * 0.35:
            break
        if not window[:end].endswith(":"):
            return window[:end]
    clauses = [match.start() for match in _CLAUSE_END.finditer(window)]
    if clauses and clauses[-1] >= limit // 2:
        return window[: clauses[-1]].rstrip(" ,;:-–—(") + "…"
    return shortened(text, limit)


def shortened(text: str, limit: int) -> str:
    """`text` cut at the last word that fits `limit` characters with `…`."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    head = cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut
    return head.rstrip(" ,;:") + "…"


# -- schemas -----------------------------------------------------------------------------------
