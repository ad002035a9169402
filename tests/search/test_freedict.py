"""Reading FreeDict's dictd files into dictionaries, on tiny files written here."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from toolsearch.embedding.manifest import ModelError
from toolsearch.search import freedict
from toolsearch.search.dictionaries import Dictionary
from toolsearch.search.freedict import (
    DEBIAN_PACKAGES,
    build_dictionaries,
    english_words,
    entries,
    language_dictionary,
    missing_files,
    translations,
)
from toolsearch.search.text import stem

_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _number(value: int) -> str:
    digits = ""
    while True:
        value, digit = divmod(value, 64)
        digits = _BASE64[digit] + digits
        if not value:
            return digits


def write_dictd(directory: Path, name: str, articles: list[tuple[str, str]]) -> None:
    """A dictd dictionary of `articles` (headword, text after the headword line), as FreeDict's."""
    data, index = b"", []
    for headword, body in [("00-database-info", "a test dictionary"), *articles]:
        entry = f"{headword}\n{body}\n".encode()
        index.append(f"{headword}\t{_number(len(data))}\t{_number(len(entry))}")
        data += entry
    (directory / f"freedict-{name}.index").write_text("\n".join(index) + "\n", encoding="utf-8")
    (directory / f"freedict-{name}.dict.dz").write_bytes(gzip.compress(data))


def test_entries_are_headwords_with_the_lines_after_them(tmp_path: Path) -> None:
    articles = [("lentelė /lʲɛnʲtʲɛˈlʲeː/ <n, f>", "table, tablet"), ("namas", "house")]
    write_dictd(tmp_path, "lit-eng", articles)
    assert list(entries(tmp_path, "lit-eng")) == [
        ("lentelė /lʲɛnʲtʲɛˈlʲeː/ <n, f>", ["table, tablet"]),
        ("namas", ["house"]),
    ]


def test_a_damaged_dictionary_is_an_error_that_names_it(tmp_path: Path) -> None:
    write_dictd(tmp_path, "lit-eng", [("namas", "house")])
    (tmp_path / "freedict-lit-eng.dict.dz").write_bytes(b"not gzip")
    with pytest.raises(ModelError, match="freedict-lit-eng"):
        list(entries(tmp_path, "lit-eng"))


def test_translations_leave_out_notes_cross_references_and_labels() -> None:
    lines = [
        "1. (sunkiai) work, do [coll.] <v>",
        "See also: {veikti}",
        "Note: Schule",
        '"Er arbeitet." - He works.',
        "2. till",
    ]
    assert translations(lines, 4) == ["work", "do", "till"]


def test_only_the_first_translations_count() -> None:
    assert translations(["schedule, timetable, roster"], 2) == ["schedule", "timetable"]


def test_english_words_are_searchable_words_each_once() -> None:
    assert english_words(["to set up a schedule", "the schedule"]) == ["set", "schedule"]


def _language(tmp_path: Path, language: str) -> Dictionary:
    return language_dictionary(tmp_path, language)


def test_a_word_gets_the_english_of_its_own_entry_then_of_the_reverse_dictionary(tmp_path: Path) -> None:
    write_dictd(tmp_path, "lit-eng", [("lentelė", "table")])
    write_dictd(tmp_path, "eng-lit", [("chart", "lentelė, diagrama"), ("slide", "skaidrė")])
    dictionary = _language(tmp_path, "lt")
    assert dictionary.forms.get("lentelė") == "table chart"
    assert dictionary.forms.get("skaidrė") == "slide"
    assert dictionary.forms.get("diagrama") == "chart"


def test_a_stem_gives_the_english_of_its_shortest_form(tmp_path: Path) -> None:
    write_dictd(tmp_path, "deu-eng", [("Lieferungen", "deliveries"), ("Lieferung", "delivery")])
    dictionary = _language(tmp_path, "de")
    assert dictionary.stems.get(stem("de", "lieferung")) == "delivery"


def test_headwords_of_several_words_are_left_out(tmp_path: Path) -> None:
    write_dictd(tmp_path, "deu-eng", [("ins Leere laufen", "to come to nothing"), ("Leere", "void")])
    dictionary = _language(tmp_path, "de")
    assert dictionary.forms.get("ins leere laufen") is None
    assert dictionary.forms.get("leere") == "void"


def test_missing_files_are_named_with_the_packages_to_install(tmp_path: Path) -> None:
    write_dictd(tmp_path, "deu-eng", [("Leere", "void")])
    assert "freedict-deu-eng.index" not in missing_files(tmp_path)
    assert "freedict-lit-eng.index" in missing_files(tmp_path)
    with pytest.raises(ModelError, match="apt-get install dict-freedict-deu-eng") as error:
        build_dictionaries(tmp_path)
    assert all(package in str(error.value) for package in DEBIAN_PACKAGES)


def test_every_language_is_built_when_every_file_is_there(tmp_path: Path) -> None:
    for names in freedict.SOURCES.values():
        for name in names:
            write_dictd(tmp_path, name, [("wort", "word")])
    dictionaries = build_dictionaries(tmp_path)
    assert dictionaries.languages == set(freedict.SOURCES)
    assert dictionaries.english("de", "wort") == ("word",)


def test_the_setup_script_installs_every_dictionary_that_is_read() -> None:
    script = (Path(__file__).parents[2] / "scripts" / "system-packages.sh").read_text()
    listed = re.search(r"^DICTIONARIES=\((.*)\)$", script, re.MULTILINE)
    assert listed is not None
    assert sorted(f"dict-freedict-{name}" for name in listed.group(1).split()) == sorted(DEBIAN_PACKAGES)
