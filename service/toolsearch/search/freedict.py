"""FreeDict's dictionaries read into `search.dictionaries`, offline.

FreeDict (https://freedict.org) publishes free bilingual dictionaries in the dictd format, and
Debian packages them (`dict-freedict-deu-eng`, ...: `DEBIAN_PACKAGES`), installed under
`/usr/share/dictd`. A dictionary is `freedict-XXX-YYY.index`, lines `headword TAB offset TAB
length` (numbers in base 64) into `freedict-XXX-YYY.dict.dz`, gzip-compatible text in which an
entry is its headword line followed by lines of translations, notes and cross-references.

Each language takes its dictionary into English and, where FreeDict's is small, the one from
English read backwards (`SOURCES`): a word is given the English of its first `ALTERNATIVES`
translations (those of its own entry first), as the words of three letters or more that are not
English stopwords. Notes, examples, cross-references and bracketed labels are left out. The
dictionaries' licences (GPL; JMdict's CC BY-SA for Japanese) are the packages' own: toolsearch
carries none of their text, and makes its tables where the packages are installed (`toolsearch
model install`, which puts Debian's copyright file beside them).
"""

from __future__ import annotations

import gzip
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from toolsearch.embedding.manifest import ModelError
from toolsearch.search import stopwords
from toolsearch.search.dictionaries import Dictionaries, Dictionary, Table, normalised
from toolsearch.search.text import stem

SOURCES: Mapping[str, tuple[str, ...]] = {
    "de": ("deu-eng",),
    "es": ("spa-eng", "eng-spa"),
    "fr": ("fra-eng", "eng-fra"),
    "ja": ("jpn-eng",),
    "lt": ("lit-eng", "eng-lit"),
}
"""Per language, the FreeDict dictionaries read: into English first, then from English."""
LICENCES = {"deu-eng": "GPL-3+", "jpn-eng": "CC-BY-SA-3.0"}
"""Each dictionary's licence where it is not FreeDict's GPL-2+ (Debian's copyright file says)."""
COPYRIGHT_FILE = Path("/usr/share/doc/dict-freedict-deu-eng/copyright")
"""Debian's copyright file of the FreeDict packages (one source package: every one has the same)."""
DEBIAN_PACKAGES = tuple(f"dict-freedict-{name}" for names in SOURCES.values() for name in names)
INSTALL_COMMAND = "apt-get install " + " ".join(DEBIAN_PACKAGES)
DEFAULT_DIRECTORY = Path("/usr/share/dictd")
ALTERNATIVES = 2
"""How many of a word's translations give its English (chosen on the dev set: 1, 2 and 3 tried)."""

_BASE64 = {
    letter: value
    for value, letter in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
}
_NOT_TRANSLATIONS = ("see also", "synonym", "antonym", "note", "see:", "example", '"')
_LABELS = re.compile(r"\(.*?\)|\[.*?\]|<.*?>|\{.*?\}|/.*?/")
_SENSE_NUMBER = re.compile(r"^\d+\.\s*")
_ALTERNATIVE_SEPARATOR = re.compile(r"[,;]")
_ENGLISH_WORD = re.compile(r"[a-z]{3,}")


def _number(encoded: str) -> int:
    value = 0
    for letter in encoded:
        value = value * 64 + _BASE64[letter]
    return value


def entries(directory: Path, name: str) -> Iterator[tuple[str, list[str]]]:
    """The (headword, lines after it) of each entry of FreeDict dictionary `name` (`deu-eng`) in
    `directory`, in index order, without the dictionary's own `00-database-*` entries."""
    stem_path = directory / f"freedict-{name}"
    index, data = stem_path.with_suffix(".index"), stem_path.with_suffix(".dict.dz")
    try:
        text = gzip.decompress(data.read_bytes())
        lines = index.read_text(encoding="utf-8").splitlines()
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as error:
        raise ModelError(f"cannot read the FreeDict dictionary {stem_path}: {error}") from None
    for line in lines:
        try:
            headword, offset, length = line.split("\t")
            start = _number(offset)
            entry = text[start : start + _number(length)].decode("utf-8")
        except (ValueError, KeyError, UnicodeDecodeError):
            raise ModelError(f"{index}: not a dictd index line: {line[:80]!r}") from None
        if not headword.startswith("00"):
            yield headword, [part.strip() for part in entry.split("\n")[1:] if part.strip()]


def translations(lines: Sequence[str], limit: int) -> list[str]:
    """The first `limit` distinct translations an entry's lines give, labels left out."""
    found: list[str] = []
    for line in lines:
        if line.lower().startswith(_NOT_TRANSLATIONS):
            continue
        for alternative in _ALTERNATIVE_SEPARATOR.split(_LABELS.sub(" ", _SENSE_NUMBER.sub("", line))):
            alternative = " ".join(alternative.split())
            if alternative and alternative not in found:
                found.append(alternative)
        if len(found) >= limit:
            break
    return found[:limit]


def english_words(alternatives: Sequence[str]) -> list[str]:
    """The words of `alternatives` (English) worth searching for, each once, in order."""
    words: list[str] = []
    for alternative in alternatives:
        for word in _ENGLISH_WORD.findall(alternative.lower()):
            if word not in stopwords.ENGLISH and word not in words:
                words.append(word)
    return words


def language_dictionary(directory: Path, language: str) -> Dictionary:
    """`language`'s dictionary into English from the FreeDict files in `directory`."""
    alternatives: dict[str, list[str]] = defaultdict(list)
    names = SOURCES[language]
    for name in names:
        into_english = name.endswith("-eng")
        for headword, lines in entries(directory, name):
            if into_english:
                known = alternatives[normalised(headword)]
                known.extend(each for each in translations(lines, ALTERNATIVES) if each not in known)
                continue
            for foreign in translations(lines, 3 * ALTERNATIVES):
                word = normalised(foreign)
                if " " not in word and headword not in alternatives[word]:
                    alternatives[word].append(headword)
    forms: dict[str, str] = {}
    for form, found in alternatives.items():
        words = english_words(found[:ALTERNATIVES])
        if words and not any(character.isspace() for character in form):
            forms[form] = " ".join(words)
    stems: dict[str, str] = {}
    for form in sorted(forms, key=lambda each: (len(each), each)):
        stemmed = stem(language, form)
        if stemmed and stemmed not in stems:
            stems[stemmed] = forms[form]
    sources = tuple(f"freedict-{name} ({LICENCES.get(name, 'GPL-2+')})" for name in names)
    return Dictionary(Table.of(forms), Table.of(stems), sources)


def missing_files(directory: Path) -> list[str]:
    """The FreeDict files of `SOURCES` that `directory` lacks."""
    return [
        f"freedict-{name}{suffix}"
        for names in SOURCES.values()
        for name in names
        for suffix in (".index", ".dict.dz")
        if not (directory / f"freedict-{name}{suffix}").is_file()
    ]


def build_dictionaries(directory: Path = DEFAULT_DIRECTORY) -> Dictionaries:
    """Every language of `SOURCES` from the FreeDict files in `directory`; a missing file is an
    error that names the Debian packages to install."""
    missing = missing_files(directory)
    if missing:
        raise ModelError(
            f"{directory} lacks {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}: "
            f"install the FreeDict dictionaries ({INSTALL_COMMAND})"
        )
    return Dictionaries({language: language_dictionary(directory, language) for language in SOURCES})
