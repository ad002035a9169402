"""A Hugging Face `tokenizers` Unigram tokenizer from raw SentencePiece pieces and scores.

It reproduces a SentencePiece (XLM-R style) tokenizer that is given as a vocabulary, a
per-character normalisation table and the ids of its special tokens: the table becomes a
`Precompiled` normaliser, runs of spaces collapse to one, spaces become the metaspace `▁` (one
is prepended), and Viterbi over the pieces picks the tokens; the text is wrapped in bos/eos.

Two details keep it faithful to SentencePiece rather than to `tokenizers`' defaults:
- every character that no piece contains is split off on its own, so each becomes one unknown
  token (`tokenizers` would fuse a run of them into one);
- the unknown piece gets a prohibitive score, so text that spells it (`<unk>`) is tokenised as
  the characters it is, never as the unknown token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from toolsearch.embedding.charsmap import precompiled_charsmap

METASPACE = "▁"
_NEVER_MATCHED = -1e6  # far below any real piece score; Viterbi never prefers it


def sentencepiece_tokenizer(
    pieces: Sequence[str],
    scores: Sequence[float],
    *,
    unk_id: int,
    bos_id: int,
    eos_id: int,
    replacements: Mapping[str, str],
) -> Tokenizer:
    vocab = [(piece, float(score)) for piece, score in zip(pieces, scores, strict=True)]
    vocab[unk_id] = (vocab[unk_id][0], _NEVER_MATCHED)
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=unk_id, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(precompiled_charsmap(replacements)),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    known = set("".join(piece for i, piece in enumerate(pieces) if i != unk_id))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True),
            pre_tokenizers.Split(Regex(_any_char_except(known)), behavior="isolated"),
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


def _any_char_except(chars: set[str]) -> str:
    """A regex character class matching one character outside `chars` (as codepoint ranges)."""
    ranges: list[list[int]] = []
    for codepoint in sorted(map(ord, chars)):
        if ranges and ranges[-1][1] == codepoint - 1:
            ranges[-1][1] = codepoint
        else:
            ranges.append([codepoint, codepoint])
    body = "".join(rf"\x{{{a:X}}}" if a == b else rf"\x{{{a:X}}}-\x{{{b:X}}}" for a, b in ranges)
    return f"[^{body}]"
