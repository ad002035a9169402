"""SentencePiece's "precompiled charsmap": a character normaliser as a double-array trie.

`tokenizers` can only express an arbitrary per-character rewrite table through its
`Precompiled` normaliser, which reads this binary format: a little-endian u32 byte length of
the trie, the trie as darts-clone units (u32), then the replacement strings, each NUL-ended.
A key's trie value is the byte offset of its replacement.

The normaliser looks up each grapheme shorter than 6 bytes, else each character, and takes the
shortest key that prefixes it; characters it does not find are kept. Keys here are single
characters, so a short grapheme whose first character is a key (a rewritten character followed
by a combining mark) is replaced whole by that key's replacement, as in SentencePiece.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

_LEAF_FLAG = 1 << 31
_HAS_LEAF_FLAG = 1 << 8
_MAX_OFFSET = 1 << 21  # offsets above this need darts-clone's extended encoding, never needed here
_BLOCK = 256  # XOR addressing keeps a node's children inside its base's 256-unit block


@dataclass
class _Node:
    children: dict[int, _Node] = field(default_factory=dict)
    value: int | None = None


def precompiled_charsmap(replacements: Mapping[str, str]) -> bytes:
    """The charsmap that rewrites each key character to its replacement ("" deletes it)."""
    strings = bytearray()
    offsets: dict[str, int] = {}
    root = _Node()
    for char in sorted(replacements):
        if len(char) != 1:
            raise ValueError(f"charsmap keys must be single characters, got {char!r}")
        replacement = replacements[char]
        if "\0" in replacement:
            raise ValueError(f"replacement of {char!r} contains NUL")
        if replacement not in offsets:
            offsets[replacement] = len(strings)
            strings += replacement.encode() + b"\0"
        node = root
        for byte in char.encode():
            node = node.children.setdefault(byte, _Node())
        node.value = offsets[replacement]
    units = _double_array(root)
    return struct.pack(f"<I{len(units)}I", 4 * len(units), *units) + bytes(strings)


def _double_array(root: _Node) -> list[int]:
    units = np.zeros(_BLOCK, dtype=np.uint32)
    taken = np.zeros(_BLOCK, dtype=bool)  # slot holds a unit
    base_taken = np.zeros(_BLOCK, dtype=bool)  # a node's children already start here
    taken[0] = True
    pending = [(root, 0)]
    while pending:
        node, position = pending.pop()
        labels = sorted(node.children)
        if node.value is not None:
            labels.insert(0, 0)
        base = _free_base(taken, base_taken, np.asarray(labels))
        if base ^ position >= _MAX_OFFSET:
            raise ValueError("charsmap too large for darts-clone's short offsets")
        size = max(len(units), (base | (_BLOCK - 1)) + 1)
        units, taken, base_taken = (np.pad(a, (0, size - len(a))) for a in (units, taken, base_taken))
        base_taken[base] = True
        units[position] |= (base ^ position) << 10
        if node.value is not None:
            units[position] |= _HAS_LEAF_FLAG
            units[base] = _LEAF_FLAG | node.value
            taken[base] = True
        for label, child in node.children.items():
            units[base ^ label] = label
            taken[base ^ label] = True
            pending.append((child, base ^ label))
    return units.tolist()


def _free_base(taken: np.ndarray, base_taken: np.ndarray, labels: np.ndarray) -> int:
    """The lowest base whose slots for `labels` are all free (past the end counts as free)."""
    candidates = np.arange(1, len(taken) + _BLOCK)
    fits = ~np.pad(base_taken, (0, _BLOCK))[candidates]
    padded = np.pad(taken, (0, 2 * _BLOCK))
    for label in labels:
        fits &= ~padded[candidates ^ label]
    return int(candidates[np.argmax(fits)])
