"""What toolsearch does with what upstream servers send: servers the operator does not control.

A listing leaves out definitions that cannot be served (`unservable`); texts lose the characters
that can hide or garble what a model or a terminal shows (`clean_text`); and what goes in front of
a model is bounded, saying what was cut (`abridged`, `excerpt`). The bounds sit well above the
largest of 5,190 recorded real tools (names of 72 characters, nesting 30 levels deep, texts of
14,020 characters, arrays of 126 items, fields of 71 KB), so real definitions pass untouched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import orjson

MAX_NAME_CHARS: Final = 256
MAX_DEFINITION_DEPTH: Final = 64
"""Deeper definitions are left out: everything that walks a definition stays far from recursion limits
(orjson's is 255)."""
MAX_TEXT_CHARS: Final = 20_000
MAX_ARRAY_ITEMS: Final = 1_000
MAX_FIELD_BYTES: Final = 128 * 1024
"""The most one abridged field (a schema, say) may take in an answer; a bigger one is left out."""

_CONTROL_CHARS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 but tab and newline, DEL, C1
    "\u202a-\u202e\u2066-\u2069"  # bidirectional embeddings, overrides and isolates
    "\U000e0000-\U000e007f]"  # tag characters: invisible text a model still reads
)


def clean_text(text: str) -> str:
    """`text` without control, bidirectional-override and tag characters."""
    return _CONTROL_CHARS.sub("", text)


def excerpt(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, cleaned, ending in `…` when cut."""
    cleaned = clean_text(text[: 2 * limit])
    if len(cleaned) <= limit and len(text) <= 2 * limit:
        return cleaned
    return cleaned[:limit].rstrip() + "…"


def unservable(definition: Mapping[str, Any]) -> str | None:
    """Why a listed tool definition cannot be served, or None when it can."""
    name = definition.get("name")
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_CHARS or _CONTROL_CHARS.search(name):
        return f"its name is not a string of 1 to {MAX_NAME_CHARS} characters without control characters"
    if _deeper_than(definition, MAX_DEFINITION_DEPTH):
        return f"it is nested more than {MAX_DEFINITION_DEPTH} levels deep"
    return None


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON `value` nests objects and arrays more than `limit` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            return True
        children = current.values() if isinstance(current, dict) else current
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def abridged(value: Any, pointer: str) -> tuple[Any, list[str]]:
    """`value` (JSON from upstream, at JSON pointer `pointer`) as a model may be shown it, and a note
    per cut: texts cleaned and cut at `MAX_TEXT_CHARS`, arrays cut at `MAX_ARRAY_ITEMS` items, and
    None instead of the whole when it still takes more than `MAX_FIELD_BYTES`."""
    notes: list[str] = []
    shown = _abridge(value, [pointer], notes)
    size = len(orjson.dumps(shown))
    if size > MAX_FIELD_BYTES:
        return None, [f"{pointer}: left out, {size} bytes (more than {MAX_FIELD_BYTES} even abridged)"]
    return shown, notes


def _abridge(value: Any, path: list[str], notes: list[str]) -> Any:
    """`abridged`'s walk; `path` holds the pointer's parts, joined only when a note needs them."""
    if isinstance(value, str):
        text = clean_text(value)
        if len(text) <= MAX_TEXT_CHARS:
            return text
        notes.append(f"{''.join(path)}: the first {MAX_TEXT_CHARS} of {len(text)} characters")
        return text[:MAX_TEXT_CHARS] + "…"
    if isinstance(value, dict):
        shown = {}
        for key, item in value.items():
            path.append("/" + str(key).replace("~", "~0").replace("/", "~1"))
            shown[key] = _abridge(item, path, notes)
            path.pop()
        return shown
    if isinstance(value, list):
        if len(value) > MAX_ARRAY_ITEMS:
            notes.append(f"{''.join(path)}: the first {MAX_ARRAY_ITEMS} of {len(value)} items")
        items = []
        for index, item in enumerate(value[:MAX_ARRAY_ITEMS]):
            path.append(f"/{index}")
            items.append(_abridge(item, path, notes))
            path.pop()
        return items
    return value
