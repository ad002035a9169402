"""A search profile: the model directories hybrid search runs, and the ranker (and abstention
model) trained for them.

`--model-dir` takes either model directories (the first ranks, the others are companions; the
hand-set fusion ranks) or one profile directory, as `toolsearch model install` writes it:

    DIR/toolsearch-profile.json   {"format": 1, "models": ["e5", "use"], "ranker": "ranker",
                                  "dictionaries": "dictionaries", "abstention": "abstention"}
    DIR/e5/, DIR/use/             model directories
    DIR/ranker/                   the trained ranker (`search.ranking`)
    DIR/abstention/               the abstention model trained for the ranker (optional;
                                  `search.abstention`)
    DIR/dictionaries/             bilingual dictionaries that translate requests (optional;
                                  `search.dictionaries`)

A profile is loaded whole or not at all: a ranker, abstention model or dictionary whose files do
not match their digests, a ranker trained for other models or dictionaries, or an abstention
model trained for another ranker, is refused with the reason, never silently left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from toolsearch.embedding.embedder import Embedder, load_model
from toolsearch.embedding.manifest import ModelError
from toolsearch.search.abstention import Abstainer
from toolsearch.search.dictionaries import Dictionaries, digest_of
from toolsearch.search.ranking import Ranker

PROFILE_FILE = "toolsearch-profile.json"
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class ProfilePaths:
    models: tuple[Path, ...]
    ranker: Path | None
    dictionaries: Path | None = None
    abstention: Path | None = None


@dataclass(frozen=True, slots=True)
class Profile:
    models: tuple[Embedder, ...]
    """The first ranks; the others are companions."""
    ranker: Ranker | None
    dictionaries: Dictionaries | None = None
    abstainer: Abstainer | None = None

    @property
    def fingerprints(self) -> tuple[str, ...]:
        return tuple(model.fingerprint for model in self.models)


def is_profile(directory: Path) -> bool:
    return (directory / PROFILE_FILE).is_file()


def profile_paths(directories: Sequence[Path | str]) -> ProfilePaths:
    """What `--model-dir` names: one profile directory's models and ranker, or model directories."""
    paths = [Path(directory) for directory in directories]
    if len(paths) != 1 or not is_profile(paths[0]):
        if any(is_profile(path) for path in paths):
            raise ModelError("a profile directory is the whole --model-dir: name it alone")
        return ProfilePaths(tuple(paths), None)
    root = paths[0]
    try:
        document = json.loads((root / PROFILE_FILE).read_text(encoding="utf-8"))
        if document.get("format") != FORMAT_VERSION:
            raise ValueError(f"format {document.get('format')!r}, expected {FORMAT_VERSION}")
        models = tuple(root / str(name) for name in document["models"])
        ranker = root / str(document["ranker"]) if document.get("ranker") else None
        dictionaries = root / str(document["dictionaries"]) if document.get("dictionaries") else None
        abstention = root / str(document["abstention"]) if document.get("abstention") else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ModelError(f"{root / PROFILE_FILE}: not a profile ({error})") from None
    if not models:
        raise ModelError(f"{root / PROFILE_FILE}: lists no model")
    return ProfilePaths(models, ranker, dictionaries, abstention)


def load_dictionaries(paths: ProfilePaths) -> Dictionaries | None:
    """The dictionaries a profile names (checked against their digests), None when it names none."""
    return Dictionaries.load(paths.dictionaries) if paths.dictionaries is not None else None


def load_profile(directories: Sequence[Path | str], threads: int = 1, workers: int = 1) -> Profile:
    """The models (and ranker) that `--model-dir` names, each checked against its digests; `threads`
    and `workers` as `load_model` takes them."""
    paths = profile_paths(directories)
    models = tuple(load_model(path, threads=threads, workers=workers) for path in paths.models)
    ranker = Ranker.load(paths.ranker) if paths.ranker is not None else None
    abstainer = Abstainer.load(paths.abstention) if paths.abstention is not None else None
    dictionaries = load_dictionaries(paths)
    profile = Profile(models, ranker, dictionaries, abstainer)
    if ranker is not None and not ranker.fits(profile.fingerprints, dictionaries):
        what = "models" if ranker.models != profile.fingerprints else "dictionaries"
        raise ModelError(
            f"{paths.ranker} was trained for other {what} than the profile's; train it again "
            "with `toolsearch train --model-dir` on this profile"
        )
    ranked_by = ranker.digest if ranker is not None else None
    if abstainer is not None and not abstainer.fits(profile.fingerprints, digest_of(dictionaries), ranked_by):
        raise ModelError(
            f"{paths.abstention} was trained for another ranker than the profile's; train it again "
            "with `toolsearch train --model-dir` on this profile"
        )
    return profile


def write_profile(
    root: Path,
    models: Sequence[str],
    ranker: str | None,
    dictionaries: str | None = None,
    abstention: str | None = None,
) -> None:
    """Write `root`'s profile file naming its model directories (in order), ranker directory,
    dictionaries directory and abstention directory."""
    document = {
        "format": FORMAT_VERSION,
        "models": list(models),
        "ranker": ranker,
        "dictionaries": dictionaries,
        "abstention": abstention,
    }
    (root / PROFILE_FILE).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
