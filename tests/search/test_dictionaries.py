"""Bilingual dictionaries: how a word is looked up, and what is written and checked on disk."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from toolsearch.embedding.manifest import ModelError
from toolsearch.search.dictionaries import MANIFEST_FILE, Dictionaries, Dictionary, Table, languages_of
from toolsearch.search.text import stem


def _lithuanian() -> Dictionaries:
    forms = {"lentelė": "table", "parodyti": "show display", "užduotis": "task"}
    stems = {stem("lt", form): english for form, english in forms.items()}
    return Dictionaries({"lt": Dictionary(Table.of(forms), Table.of(stems), ("freedict-lit-eng",))})


def test_a_word_is_found_as_the_dictionary_lists_it() -> None:
    assert _lithuanian().english("lt", "lentelė") == ("table",)


def test_case_does_not_matter() -> None:
    assert _lithuanian().english("lt", "Lentelė") == ("table",)


def test_an_imperative_is_found_by_its_infinitive() -> None:
    assert _lithuanian().english("lt", "parodyk") == ("show", "display")
    assert _lithuanian().english("lt", "parodykite") == ("show", "display")


def test_an_inflected_word_is_found_by_its_stem() -> None:
    assert _lithuanian().english("lt", "lentelę") == ("table",)


def test_an_unknown_word_has_no_english() -> None:
    assert _lithuanian().english("lt", "pizzą") == ()


def test_a_language_without_a_dictionary_has_no_english() -> None:
    assert _lithuanian().english("de", "lentelė") == ()


def test_a_table_finds_every_key_and_no_other() -> None:
    entries = {f"word{number}": f"english{number}" for number in range(200)}
    table = Table.of(entries)
    assert all(table.get(key) == value for key, value in entries.items())
    assert table.get("word") is None
    assert table.get("word999") is None
    assert table.get("") is None


def test_saved_dictionaries_load_whole(tmp_path: Path) -> None:
    dictionaries = _lithuanian()
    dictionaries.save(tmp_path)
    loaded = Dictionaries.load(tmp_path)
    assert loaded.digest == dictionaries.digest
    assert loaded.languages == {"lt"}
    assert loaded.english("lt", "užduotį") == ("task",)


def test_the_digest_is_of_the_content_not_of_the_files(tmp_path: Path) -> None:
    _lithuanian().save(tmp_path / "first")
    _lithuanian().save(tmp_path / "second")
    assert Dictionaries.load(tmp_path / "first").digest == Dictionaries.load(tmp_path / "second").digest


def test_other_content_has_another_digest() -> None:
    other = Dictionaries({"lt": Dictionary(Table.of({"lentelė": "desk"}), Table.of({}))})
    assert other.digest != _lithuanian().digest


def test_a_table_that_does_not_match_the_manifest_is_refused(tmp_path: Path) -> None:
    _lithuanian().save(tmp_path)
    Dictionaries({"lt": Dictionary(Table.of({"lentelė": "desk"}), Table.of({}))}).save(tmp_path / "other")
    (tmp_path / "other" / "lt.npz").replace(tmp_path / "lt.npz")
    with pytest.raises(ModelError, match="the tables of lt do not match"):
        Dictionaries.load(tmp_path)


def test_a_manifest_whose_set_digest_was_changed_is_refused(tmp_path: Path) -> None:
    _lithuanian().save(tmp_path)
    document = json.loads((tmp_path / MANIFEST_FILE).read_text())
    document["sha256"] = "0" * 64
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(document))
    with pytest.raises(ModelError, match="do not match"):
        Dictionaries.load(tmp_path)


def test_a_missing_table_is_refused_with_the_manifest_named(tmp_path: Path) -> None:
    _lithuanian().save(tmp_path)
    (tmp_path / "lt.npz").unlink()
    with pytest.raises(ModelError, match="not a dictionaries directory"):
        Dictionaries.load(tmp_path)


def test_a_directory_without_a_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=MANIFEST_FILE):
        Dictionaries.load(tmp_path)


def test_tables_are_stored_without_pickles(tmp_path: Path) -> None:
    _lithuanian().save(tmp_path)
    with np.load(tmp_path / "lt.npz", allow_pickle=False) as arrays:
        assert {array.dtype.kind for array in arrays.values()} <= {"u", "i"}


def test_the_languages_translated_are_named_in_order_and_none_without_dictionaries() -> None:
    empty = Table.of({})
    both = Dictionaries({"lt": Dictionary(empty, empty), "de": Dictionary(empty, empty)})
    assert languages_of(both) == "de, lt"
    assert languages_of(None) == "none"


def test_a_table_written_compressed_is_refused_since_it_cannot_be_mapped(tmp_path: Path) -> None:
    _lithuanian().save(tmp_path)
    with np.load(tmp_path / "lt.npz") as arrays:
        np.savez_compressed(tmp_path / "lt.npz", **dict(arrays))
    with pytest.raises(ModelError, match=r"not a dictionaries directory.*not a stored \.npy member"):
        Dictionaries.load(tmp_path)
