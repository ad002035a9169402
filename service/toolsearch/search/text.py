"""Text analysis: the terms a tool's text and a query are compared by, in any script.

One analyzer serves both sides, so whatever it does to a query it also did to the tools:

- NFKC (full-width forms, ligatures and compatibility characters become plain ones), casefold,
  and Latin and Greek diacritics folded (`é` -> `e`, `ł` -> `l`, `ß` -> `ss`);
- words are runs of letters and digits, so identifiers split on `_`, `-`, `.` and any other
  punctuation; a camelCase word yields its parts and itself (`GitHub` -> `github`, `git`, `hub`),
  because tool names write `github` while people write `GitHub`;
- CJK (Han, Hiragana, Katakana, Hangul) has no spaces: each run becomes overlapping character
  bigrams, and a lone character itself;
- stopwords dropped: English always, plus those of the guessed language;
- Snowball stems.

Stemming when the language is unknown: tools are (nearly always) described in English while
people ask in their own language. Every word is stemmed in English and, when the text's
stopwords and letters point to another language with a Snowball stemmer, also in that language,
as an alternative: Spanish `eventos` and `incidencia` stem to `event` and `incident`, which is
what the English tool text stems to, while the English stemmer leaves them as they are. A word
counts once, by its best alternative. A query too short to show its language keeps every other
stemmer's stem as a fallback (`podus` -> `pod`), used only when no tool has the word itself.
Stemming every word in every language instead conflates unrelated English words (what each choice
measured: docs/search-quality.md, "Where the constants come from").
"""

from __future__ import annotations

import itertools
import operator
import re
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import Stemmer

from toolsearch.search import stopwords

# Han (with radicals, iteration marks and extensions), Hiragana, Katakana, Hangul, and Bopomofo,
# Hangul compatibility jamo, Kanbun and CJK strokes: scripts written without spaces between words,
# or (Hangul) with stems that bigrams match well.
_HAN = "\u2e80-\u2fdf\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HIRAGANA = "\u3040-\u309f"
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff"
_HANGUL_LETTERS = "\u1100-\u11ff\ua960-\ua97f\uac00-\ud7ff"
_CJK = f"{_HAN}{_HIRAGANA}{_KATAKANA}{_HANGUL_LETTERS}\u3100-\u31ef"


def _ranges(codes: list[int]) -> str:
    """A regex character class body for the code points (sorted), as ranges."""
    spans: list[list[int]] = []
    for code in codes:
        if spans and code == spans[-1][1] + 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    return "".join(f"{re.escape(chr(first))}-{re.escape(chr(last))}" for first, last in spans)


# Combining marks live below U+30000, but for variation selectors at U+E0100.
_MARK_CODES = [
    code
    for code in itertools.chain(range(0x30000), range(0xE0000, 0xE1000))
    if unicodedata.category(chr(code)).startswith("M")
]
# Combining marks belong to their word: Devanagari, Thai or Tamil words are spelt with them.
_LETTERS = rf"[^\W_{_CJK}]"
_TOKEN = re.compile(rf"([{_CJK}]+)|({_LETTERS}+(?:[{_ranges(_MARK_CODES)}]+{_LETTERS}*)*)")
_SPELLED_WORD = re.compile(rf"(?<![^\W{_CJK}])[^\W\d_{_CJK}]{{4,}}(?![^\W{_CJK}])")
_CJK_CHARACTER = re.compile(f"[{_CJK}]")
_OTHER_LETTER = re.compile(_LETTERS)
_KANA = re.compile(f"[{_HIRAGANA}{_KATAKANA}]")
_HANGUL = re.compile(f"[{_HANGUL_LETTERS}]")
_SCRIPT_RUN = re.compile(
    f"(?P<han>[{_HAN}]+)|(?P<katakana>[{_KATAKANA}]+)|(?P<hiragana>[{_HIRAGANA}]+)|(?P<hangul>[{_HANGUL_LETTERS}]+)"
)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_ASCII_TOKEN = re.compile(r"[a-zA-Z0-9]+")
"""What `_TOKEN` finds in ASCII text (no CJK, no marks, nothing NFKC changes), several times faster."""

# Letters that no Unicode decomposition folds but that people type without the stroke or ligature.
_UNDECOMPOSED = {"ł": "l", "ø": "o", "đ": "d", "ð": "d", "ħ": "h", "ı": "i", "þ": "th", "æ": "ae", "œ": "oe"}
# Latin (Latin-1 Supplement to Latin Extended-B, Latin Extended Additional) and Greek blocks.
_FOLDED_BLOCKS = ((0x00C0, 0x024F), (0x0370, 0x03FF), (0x1E00, 0x1FFF))
# Marks that only add accents or optional vowel points (generic combining diacritics, Hebrew
# points, Arabic harakat): folded away. Other scripts' marks are letters of their words: kept.
_OPTIONAL_MARK_BLOCKS = (
    (0x0300, 0x036F),
    (0x0591, 0x05C7),
    (0x0610, 0x06ED),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
)


def _fold_table() -> dict[int, str | None]:
    table: dict[int, str | None] = {ord(char): plain for char, plain in _UNDECOMPOSED.items()}
    for first, last in _FOLDED_BLOCKS:
        for code in range(first, last + 1):
            char = chr(code)
            plain = "".join(c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c))
            if plain and plain != char and code not in table:
                table[code] = plain
    for first, last in _OPTIONAL_MARK_BLOCKS:
        for code in range(first, last + 1):
            if unicodedata.category(chr(code)) == "Mn":
                table[code] = None
    return table


_FOLD = _fold_table()


def fold(text: str) -> str:
    """Casefolded text without Latin and Greek diacritics: `Žurnalas Öffnen` -> `zurnalas offnen`."""
    return unicodedata.normalize("NFKC", text).casefold().translate(_FOLD)


class _Language:
    def __init__(
        self, code: str, stemmer: str, stopword_text: str, letters: str, english: frozenset[str] = frozenset()
    ) -> None:
        self.code = code
        self.stemmer = stemmer
        self.stopwords = frozenset(fold(word) for word in stopword_text.split())
        self.letters = frozenset(letters)
        """Letters that (among these languages) only this one writes: evidence of the language."""
        self.dropped = self.stopwords | english
        """The words a text in this language drops: its stopwords and `english` (English's)."""


_ENGLISH = _Language("en", "english", stopwords.ENGLISH, "")
_OTHER_LANGUAGES = (
    _Language("lt", "lithuanian", stopwords.LITHUANIAN, "ąčęėįšųūž", _ENGLISH.stopwords),
    _Language("de", "german", stopwords.GERMAN, "äöüß", _ENGLISH.stopwords),
    _Language("es", "spanish", stopwords.SPANISH, "ñ¿¡áíóú", _ENGLISH.stopwords),
    _Language("fr", "french", stopwords.FRENCH, "àâçèêëîïôûùœ", _ENGLISH.stopwords),
)
_ANY_STOPWORD = frozenset().union(*(language.stopwords for language in (_ENGLISH, *_OTHER_LANGUAGES)))

# PyStemmer's stemmers keep per-call state: one set per thread.
_stemmers = threading.local()


def _stem(language: _Language, words: list[str]) -> list[str]:
    stemmers: dict[str, Stemmer.Stemmer] | None = getattr(_stemmers, "by_code", None)
    if stemmers is None:
        stemmers = _stemmers.by_code = {}
    stemmer = stemmers.get(language.code)
    if stemmer is None:
        stemmer = stemmers[language.code] = Stemmer.Stemmer(language.stemmer)
    stems: list[str] = stemmer.stemWords(words)
    return stems


_BY_CODE = {language.code: language for language in (_ENGLISH, *_OTHER_LANGUAGES)}


def stem(code: str, word: str) -> str | None:
    """`word`'s Snowball stem in the language of ISO 639-1 `code`; None for a language the analyzer
    does not stem (Chinese, Japanese, ...). `word` keeps its diacritics: Snowball needs them."""
    language = _BY_CODE.get(code)
    return _stem(language, [word])[0] if language is not None else None


def _guess_language(words: list[str], folded: list[str]) -> _Language:
    """The language whose stopwords and letters the words show most, English unless clearly not."""
    # Each language counts its stopwords among the words that are some language's stopword.
    stops = list(filter(_ANY_STOPWORD.__contains__, folded))
    lettered = list(itertools.filterfalse(str.isascii, words))
    if not lettered and _ENGLISH.stopwords.issuperset(stops):
        return _ENGLISH  # no other language can show more evidence than English
    best, best_evidence = _ENGLISH, sum(map(_ENGLISH.stopwords.__contains__, stops))
    for language in _OTHER_LANGUAGES:
        evidence = sum(map(language.stopwords.__contains__, stops))
        evidence += sum(not language.letters.isdisjoint(word) for word in lettered)
        if evidence > best_evidence:
            best, best_evidence = language, evidence
    return best


def _cjk_grams(run: str) -> Iterator[str]:
    if len(run) == 1:
        yield run
    for start in range(len(run) - 1):
        yield run[start : start + 2]


class Word(NamedTuple):
    terms: tuple[str, ...]
    """The word's stems: English first, then the guessed language's if different. A scorer
    counts a word once, by its best term."""
    parts: tuple[tuple[str, ...], ...] = ()
    """A camelCase word's parts, each as its stems; a query uses them when the whole is unknown."""
    variants: tuple[str, ...] = ()
    """Its stems in every other language with a stemmer: a query falls back on them when no tool
    has its terms, as a short query may show no sign of its language (`podus` -> `pod`)."""


def _forms(text: str) -> tuple[list[str], list[int], list[str]]:
    """Casefolded words, each followed by its camelCase parts; each word's part count; CJK grams."""
    grams: list[str] = []
    if text.isascii():  # nothing for NFKC to change, no CJK, no marks
        tokens = _ASCII_TOKEN.findall(text)
        words = _ASCII_TOKEN.findall(text.lower())
    else:
        tokens = []
        for cjk, token in _TOKEN.findall(unicodedata.normalize("NFKC", text)):
            if cjk:
                grams.extend(_cjk_grams(cjk))
            else:
                tokens.append(token)
        words = [token.casefold() for token in tokens]
    part_counts = [0] * len(words)
    forms: list[str] = []
    done = 0
    # Only a word that casefolding changes can have camelCase parts, and most are lower case,
    # capitalised or all capitals: no parts to look for.
    for position in itertools.compress(range(len(tokens)), map(operator.ne, tokens, words)):
        token, folded = tokens[position], words[position]
        if token[1:] == folded[1:] or token.isupper():
            continue
        parts = _CAMEL_BOUNDARY.split(token)
        if len(parts) > 1:
            forms.extend(words[done : position + 1])
            forms.extend(part.casefold() for part in parts)
            part_counts[position] = len(parts)
            done = position + 1
    if not done:
        return words, part_counts, grams
    forms.extend(words[done:])
    return forms, part_counts, grams


def split_words(text: str) -> list[str]:
    """The casefolded words of `text`, a camelCase word as its parts (`getUser` -> `get`, `user`):
    what the analyzer reads before it stems, CJK left out."""
    forms, part_counts, _ = _forms(text)
    if not any(part_counts):
        return forms
    found: list[str] = []
    position = 0
    for part_count in part_counts:
        found.extend(forms[position + 1 : position + 1 + part_count] if part_count else [forms[position]])
        position += 1 + part_count
    return found


def _folded(forms: list[str]) -> list[str]:
    # Forms hold no newline: fold them all in one call; ASCII has nothing to fold.
    joined = "\n".join(forms)
    if joined.isascii():
        return list(forms)
    return joined.translate(_FOLD).split("\n")


def language_of(text: str) -> str:
    """The ISO 639-1 code of the language `text` is guessed to be in: Japanese (any kana), Korean
    (any Hangul) or Chinese (Han alone) where those scripts carry the text (a CJK character counts
    as three letters: it is about a word), else one of those the analyzer stems (en, lt, de, es,
    fr), English when nothing points elsewhere."""
    cjk = len(_CJK_CHARACTER.findall(text))
    if cjk and 3 * cjk >= len(_OTHER_LETTER.findall(text)):
        return "ja" if _KANA.search(text) else "ko" if _HANGUL.search(text) else "zh"
    forms = _forms(text)[0]
    return _guess_language(forms, _folded(forms)).code


def spelled_words(text: str) -> list[str]:
    """The words of letters alone, four or more, outside CJK: not an identifier, a number or a code."""
    return _SPELLED_WORD.findall(text)


def cjk_words(text: str, pieces: Callable[[str], Sequence[str]]) -> list[str]:
    """The words of `text`'s CJK runs, each once, in order, for translation: a run of Katakana
    (loanwords: `クラスター`) or Hangul is a word; a run of Han is cut into words by `pieces` (a
    model's tokenizer, which has learnt the language's words) and pieces of one character are
    dropped (ambiguous alone); Hiragana is left out (particles and endings)."""
    found: list[str] = []
    for run in _SCRIPT_RUN.finditer(unicodedata.normalize("NFKC", text)):
        if run.lastgroup == "han":
            found.extend(piece for piece in pieces(run.group()) if len(piece) >= 2)
        elif run.lastgroup != "hiragana" and len(run.group()) >= 2:
            found.append(run.group())
    return list(dict.fromkeys(found))


def _stems(forms: list[str]) -> tuple[list[str], list[str] | None, list[bool]]:
    """Each form's English stem, its guessed language's stem (None for English), and whether it
    is a content word (not a stopword, not a single letter)."""
    folded = _folded(forms)
    language = _guess_language(forms, folded)
    dropped = language.dropped
    content = [len(form) > 1 and form not in dropped for form in folded]
    english = _stem(_ENGLISH, folded)
    if language is _ENGLISH:
        return english, None, content
    # Snowball expects the language's own letters: stem first, fold after.
    native = "\n".join(_stem(language, forms)).translate(_FOLD).split("\n")
    return english, native, content


def analyze(text: str) -> list[Word]:
    """The content words of `text` (what a query is matched by), CJK grams included."""
    forms, part_counts, grams = _forms(text)
    english, native, content = _stems(forms)
    stems = [
        (stem,) if native is None or native[index] == stem else (stem, native[index])
        for index, stem in enumerate(english)
    ]
    starts: list[int] = []
    position = 0
    for part_count in part_counts:
        starts.append(position)
        position += 1 + part_count
    variants = _variants([forms[start] for start in starts])
    analyzed: list[Word] = []
    for start, part_count, word_variants in zip(starts, part_counts, variants, strict=True):
        kept = [index for index in range(start, start + 1 + part_count) if content[index]]
        if kept and kept[0] == start:
            others = tuple(variant for variant in word_variants if variant not in stems[start])
            analyzed.append(Word(stems[start], tuple(stems[index] for index in kept[1:]), others))
        else:
            analyzed.extend(Word(stems[index]) for index in kept)
    analyzed.extend(Word((gram,)) for gram in grams)
    return analyzed


def _variants(words: list[str]) -> list[tuple[str, ...]]:
    """Each word's distinct stems by the other languages' stemmers, folded."""
    by_language = [
        "\n".join(_stem(language, words)).translate(_FOLD).split("\n") if words else []
        for language in _OTHER_LANGUAGES
    ]
    return [tuple(dict.fromkeys(stems)) for stems in zip(*by_language, strict=True)] if words else []


def terms(text: str) -> list[str]:
    """Every term of `text`, each stem of each word and part: what a document is indexed by."""
    forms, _, grams = _forms(text)
    english, native, content = _stems(forms)
    found = list(itertools.compress(english, content))
    if native is not None:
        found.extend(
            other
            for stem, other, keep in zip(english, native, content, strict=True)
            if keep and other != stem
        )
    found.extend(grams)
    return found
