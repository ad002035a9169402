from __future__ import annotations

import pytest
from tokenizers import normalizers

from toolsearch.embedding.charsmap import precompiled_charsmap

REPLACEMENTS = {
    "\t": " ",  # one byte
    "\x07": "",  # deleted
    "é": "e\u0301",  # two bytes, grows
    "Ａ": "A",  # three bytes (full width)
    "ﬁ": "fi",  # ligature
    "𝐀": "A",  # four bytes
    "\u3000": " ",  # ideographic space
}


def _normalise(text: str, replacements: dict[str, str] = REPLACEMENTS) -> str:
    return normalizers.Precompiled(precompiled_charsmap(replacements)).normalize_str(text)


@pytest.mark.parametrize(("char", "replacement"), REPLACEMENTS.items())
def test_each_mapped_character_is_replaced(char: str, replacement: str) -> None:
    assert _normalise(f"x{char}y") == f"x{replacement}y"


def test_characters_outside_the_table_are_kept() -> None:
    assert _normalise("plain ascii, ü, 東京, 😀") == "plain ascii, ü, 東京, 😀"


def test_characters_sharing_utf8_prefixes_stay_distinct() -> None:
    # U+FF21..U+FF3A share their first two UTF-8 bytes: the trie must branch on the last one.
    full_width = {chr(0xFF21 + i): chr(0x41 + i) for i in range(26)}

    assert _normalise("ＡＢＣＸＹＺ", full_width) == "ABCXYZ"


def test_keys_must_be_single_characters() -> None:
    with pytest.raises(ValueError, match="single characters"):
        precompiled_charsmap({"ab": "c"})
