"""What a name looks like: its skeleton, with width, look-alike letters (Unicode's confusables,
through `confusable_homoglyphs`), case and separators folded. Two different names with one skeleton
are confusable; an error message names the characters that make them so.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import Final

from confusable_homoglyphs import confusables

SEPARATORS: Final = re.compile(r"[\W_]+")
"""What separates the words of a name (folded away in its skeleton)."""
_SHOWN_FOREIGN: Final = 5
"""Look-alike characters of a name an error message lists (a name has up to 256)."""


def latin_letters(text: str) -> str:
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
    return SEPARATORS.sub("", latin_letters(folded).casefold())


def foreign_characters(name: str) -> str:
    """Where `name` has characters `name_skeleton` folds into others, for an error message to say
    why it looks like another name: `U+0440 CYRILLIC SMALL LETTER ER at position 17`, comma-separated
    (empty when it has none; the first `_SHOWN_FOREIGN` of them and how many more)."""
    found = [
        f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed character')} at position {position}"
        for position, char in enumerate(name, 1)
        if not char.isascii() and latin_letters(unicodedata.normalize("NFKC", char)) != char
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
