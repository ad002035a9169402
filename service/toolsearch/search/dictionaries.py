"""Bilingual dictionaries: the English of a request's words that no tool of the catalog has.

Tools are described in English while people ask in their own language. Hybrid search translates
the words of a request that the catalog lacks (`HybridIndex.translations`); a dictionary knows
far more words than the embedding model does one word at a time (e5 reads `lentelę`, Lithuanian
for `table`, as `len`), so a word the dictionary has is translated by it and only the others are
left to the model's nearest catalog word.

A language's dictionary is two sorted tables: inflected forms (as the dictionary lists them,
casefolded) and Snowball stems (`text.stem`; each the stem of one or more forms, giving the
English of the shortest). A word is looked up as written, then as its infinitive where the language marks
imperatives plainly (Lithuanian `parodyk` -> `parodyti`), then by its stem. Each table is one
UTF-8 blob of keys and one of values with their offsets (numpy), searched by bisection: a few
hundred thousand German forms cost their bytes, not a Python object each. Loaded tables are the
files' bytes mapped read-only, not copies: a lookup reads a few pages of them, which the kernel
shares between processes and may drop and read again (36 MB of the process's heap otherwise).

On disk (`toolsearch model install` writes it from FreeDict, `search.freedict`):

    DIR/dictionaries.json   {"format": 1, "languages": {"de": {"file": "de.npz", "sha256": ...,
                            "forms": N, "stems": N, "sources": [...]}, ...}, "sha256": ...}
    DIR/<language>.npz      the tables

Digests are of the tables' content, so the same dictionaries made on two machines have the same
one; `Dictionaries.load` checks each table's and the set's. The set's digest names it, so that a
ranker records which dictionaries it was trained with (`Ranker.dictionaries`).
"""

from __future__ import annotations

import bisect
import hashlib
import io
import json
import mmap
import struct
import unicodedata
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolsearch.embedding.manifest import ModelError
from toolsearch.search import text

MANIFEST_FILE = "dictionaries.json"
FORMAT_VERSION = 1
IMPERATIVES = {"lt": (("kite", "ti"), ("k", "ti"))}
"""Endings of a language's imperatives and of its infinitives, which dictionaries list."""
_MIN_IMPERATIVE_STEM = 3


Blob = bytes | memoryview
"""A table's keys or values: bytes made in memory, or a view of a mapped file."""
_LOCAL_HEADER = struct.Struct("<4s22xHH")
"""A zip member's local header: its signature, then the lengths of its name and its extra field."""
_MOST_NPY_HEADER_BYTES = 4096


class _Keys(Sequence[bytes]):
    """The keys of a table as a sequence, for `bisect`, without splitting the blob."""

    def __init__(self, blob: Blob, offsets: np.ndarray) -> None:
        self._blob = blob
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, index: int) -> bytes:  # type: ignore[override]
        return bytes(self._blob[int(self._offsets[index]) : int(self._offsets[index + 1])])


@dataclass(frozen=True, slots=True)
class Table:
    """Sorted keys and their values, each a UTF-8 blob with `len + 1` offsets."""

    keys: Blob
    key_offsets: np.ndarray
    values: Blob
    value_offsets: np.ndarray

    @classmethod
    def of(cls, entries: Mapping[str, str]) -> Table:
        """The table of `entries` (key -> value)."""
        items = sorted((key.encode(), value.encode()) for key, value in entries.items())
        keys, values = [key for key, _ in items], [value for _, value in items]
        return cls(b"".join(keys), _offsets(keys), b"".join(values), _offsets(values))

    def __len__(self) -> int:
        return len(self.key_offsets) - 1

    def get(self, key: str) -> str | None:
        encoded = key.encode()
        keys = _Keys(self.keys, self.key_offsets)
        index = bisect.bisect_left(keys, encoded)
        if index == len(keys) or keys[index] != encoded:
            return None
        start, end = int(self.value_offsets[index]), int(self.value_offsets[index + 1])
        return bytes(self.values[start:end]).decode()


def _offsets(parts: Sequence[bytes]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum([len(part) for part in parts], dtype=np.int64)]).astype(np.int64)


@dataclass(frozen=True, slots=True)
class Dictionary:
    """One language's words, in English."""

    forms: Table
    stems: Table
    sources: tuple[str, ...] = ()


def normalised(word: str) -> str:
    """How dictionaries key a word: NFKC, casefolded (diacritics kept: Snowball needs them)."""
    return unicodedata.normalize("NFKC", word).casefold()


def digest_of(dictionaries: Dictionaries | None) -> str | None:
    """What a ranker records of the dictionaries it was trained with: their digest, None for none."""
    return dictionaries.digest if dictionaries is not None else None


def languages_of(dictionaries: Dictionaries | None) -> str:
    """The languages the dictionaries translate, as logs and messages name them (`none` for none)."""
    return ", ".join(sorted(dictionaries.languages)) if dictionaries is not None else "none"


def _infinitives(language: str, word: str) -> Iterable[str]:
    for ending, infinitive in IMPERATIVES.get(language, ()):
        if word.endswith(ending) and len(word) - len(ending) >= _MIN_IMPERATIVE_STEM:
            yield word[: -len(ending)] + infinitive


class Dictionaries:
    """The dictionaries of a few languages into English; immutable and safe to share."""

    def __init__(self, languages: Mapping[str, Dictionary]) -> None:
        self._languages = dict(languages)
        self._digests = {language: _content_digest(each) for language, each in self._languages.items()}
        self.digest = _set_digest(self._digests)
        """Names this set of dictionaries by their content (not by how the files were written)."""

    @property
    def languages(self) -> frozenset[str]:
        return frozenset(self._languages)

    def english(self, language: str, word: str) -> tuple[str, ...]:
        """The English words `language`'s dictionary gives for `word`, best first; none when it
        does not know the word (or the language)."""
        dictionary = self._languages.get(language)
        if dictionary is None:
            return ()
        word = normalised(word)
        for form in (word, *_infinitives(language, word)):
            found = dictionary.forms.get(form)
            if found is not None:
                return tuple(found.split())
        stemmed = text.stem(language, word)
        found = dictionary.stems.get(stemmed) if stemmed else None
        return tuple(found.split()) if found is not None else ()

    def save(self, directory: Path) -> None:
        """Write the tables and the manifest to `directory` (created if missing)."""
        directory.mkdir(parents=True, exist_ok=True)
        languages: dict[str, Any] = {}
        for language, dictionary in sorted(self._languages.items()):
            path = directory / f"{language}.npz"
            with path.open("wb") as stream:
                np.savez(stream, allow_pickle=False, **_arrays(dictionary))
            languages[language] = {
                "file": path.name,
                "sha256": self._digests[language],
                "forms": len(dictionary.forms),
                "stems": len(dictionary.stems),
                "sources": list(dictionary.sources),
            }
        document = {"format": FORMAT_VERSION, "languages": languages, "sha256": self.digest}
        (directory / MANIFEST_FILE).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> Dictionaries:
        """Read a dictionaries directory, checking every table and the set against the manifest."""
        document, entries, languages, maps = _read(directory)
        dictionaries = cls(languages)
        digests = dictionaries._digests
        altered = sorted(each for each, entry in entries.items() if digests[each] != entry["sha256"])
        if altered or dictionaries.digest != document.get("sha256"):
            raise ModelError(
                f"{directory}: the tables of {', '.join(altered) or 'the set'} do not match {MANIFEST_FILE}; "
                "make the dictionaries again with `toolsearch model install`"
            )
        for mapped in maps:  # checking read every page: the lookups will read back the few they need
            mapped.madvise(mmap.MADV_DONTNEED)
        return dictionaries


def _read(
    directory: Path,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Dictionary], list[mmap.mmap]]:
    """The manifest of a dictionaries directory, its entries by language, their tables, and the
    files they map."""
    maps: list[mmap.mmap] = []
    path = directory / MANIFEST_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("format") != FORMAT_VERSION:
            raise ValueError(f"format {document.get('format')!r}, expected {FORMAT_VERSION}")
        entries = {str(language): dict(entry) for language, entry in document["languages"].items()}
        languages = {}
        for language, entry in entries.items():
            arrays = _mapped_arrays(directory / str(entry["file"]), maps)
            languages[language] = _dictionary(arrays, tuple(entry.get("sources", ())))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, zipfile.BadZipFile) as error:
        raise ModelError(f"{path}: not a dictionaries directory ({error})") from None
    return document, entries, languages, maps


def _arrays(dictionary: Dictionary) -> dict[str, np.ndarray]:
    arrays = {}
    for name, table in (("forms", dictionary.forms), ("stems", dictionary.stems)):
        arrays[f"{name}_keys"] = np.frombuffer(table.keys, dtype=np.uint8)
        arrays[f"{name}_key_offsets"] = table.key_offsets
        arrays[f"{name}_values"] = np.frombuffer(table.values, dtype=np.uint8)
        arrays[f"{name}_value_offsets"] = table.value_offsets
    return arrays


def _mapped_arrays(path: Path, maps: list[mmap.mmap]) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` file that `save` wrote (members stored, not compressed), each a
    read-only view of the file mapped into memory (the map added to `maps`)."""
    with path.open("rb") as stream, zipfile.ZipFile(stream) as archive:
        maps.append(mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ))
        mapped = memoryview(maps[-1])
        arrays = {}
        for member in archive.infolist():
            if member.compress_type != zipfile.ZIP_STORED or not member.filename.endswith(".npy"):
                raise ValueError(f"{member.filename} is not a stored .npy member")
            start = member.header_offset
            signature, name_length, extra_length = _LOCAL_HEADER.unpack(
                mapped[start : start + _LOCAL_HEADER.size]
            )
            if signature != b"PK\x03\x04":
                raise ValueError(f"no local header for {member.filename}")
            start += _LOCAL_HEADER.size + name_length + extra_length
            arrays[member.filename.removesuffix(".npy")] = _npy(mapped[start : start + member.file_size])
    return arrays


def _npy(data: memoryview) -> np.ndarray:
    """The array an `.npy` file's bytes hold (one-dimensional, as `save` writes), without a copy."""
    stream = io.BytesIO(data[:_MOST_NPY_HEADER_BYTES])
    version = np.lib.format.read_magic(stream)
    read_header = (
        np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    )
    shape, fortran_order, dtype = read_header(stream)
    if fortran_order or len(shape) != 1:
        raise ValueError(f"not a one-dimensional array: shape {shape}")
    return np.frombuffer(data, dtype=dtype, count=shape[0], offset=stream.tell())


def _dictionary(arrays: Mapping[str, np.ndarray], sources: tuple[str, ...]) -> Dictionary:
    def table(name: str) -> Table:
        return Table(
            arrays[f"{name}_keys"].data,
            arrays[f"{name}_key_offsets"],
            arrays[f"{name}_values"].data,
            arrays[f"{name}_value_offsets"],
        )

    return Dictionary(table("forms"), table("stems"), sources)


def _content_digest(dictionary: Dictionary) -> str:
    digest = hashlib.sha256()
    for table in (dictionary.forms, dictionary.stems):
        for part in (table.keys, table.key_offsets.tobytes(), table.values, table.value_offsets.tobytes()):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
    return digest.hexdigest()


def _set_digest(digests: Mapping[str, str]) -> str:
    body = {"format": FORMAT_VERSION, "languages": dict(sorted(digests.items()))}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
