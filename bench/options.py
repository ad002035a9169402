"""What a benchmark run is asked to do: quick or full, which toolsearch sources, which hybrid profiles."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from bench.processes import SERVICE_DIR, split_serve_flags
from bench.report import RESULTS_DIR
from toolsearch.embedding.manifest import ModelError
from toolsearch.search.profile import ProfilePaths, profile_paths

NO_MODEL = "not available: no --model-dir given"


def profile_directories(model_dir: str) -> list[Path]:
    """The model directories of one `--model-dir` value (comma-separated, the primary model first,
    or a profile directory: its models)."""
    paths = _profile_paths(model_dir)
    return list(paths.models) if paths is not None else _named(model_dir)


def profile_label(model_dir: str) -> str:
    """`hybrid (e5+use)` for `models/e5,models/use`: the directories' last components; `hybrid
    (e5+use, learned)` for a profile directory with a ranker; serve flags after it are named too."""
    names = "+".join(directory.name for directory in profile_directories(model_dir))
    paths = _profile_paths(model_dir)
    flags = "".join(f", {flag.removeprefix('--')}" for flag in split_serve_flags(model_dir)[1])
    learned = ", learned" if paths is not None and paths.ranker else ""
    return f"hybrid ({names}{learned}{flags})"


def _named(model_dir: str) -> list[Path]:
    directories = split_serve_flags(model_dir)[0]
    return [Path(part.strip()) for part in directories.split(",") if part.strip()]


def _profile_paths(model_dir: str) -> ProfilePaths | None:
    try:
        return profile_paths(_named(model_dir))
    except ModelError:
        return None  # reported as not available


@dataclass(frozen=True)
class HybridProfile:
    """One hybrid profile: the `--model-dir` value `toolsearch serve` gets, unchanged."""

    model_dir: str
    unavailable: str | None
    """Why this profile cannot be measured in this run, or None when it can."""

    @property
    def label(self) -> str:
        return profile_label(self.model_dir)

    @property
    def target(self) -> str:
        return f"toolsearch {self.label}"


def profiles_note(profiles: Sequence[HybridProfile]) -> list[str]:
    """A table note saying which models each profile runs (none when there is no profile)."""
    if not profiles:
        return []
    listed = "; ".join(f"{profile.label} = `{profile.model_dir}`" for profile in profiles)
    return [f"Hybrid profiles (toolsearch serve --model-dir, primary model first): {listed}."]


@dataclass(frozen=True)
class Options:
    quick: bool = False
    model_dirs: tuple[str, ...] = ()
    """One `toolsearch serve --model-dir` value per hybrid profile (each may list several models)."""
    service_dir: Path = SERVICE_DIR
    """The toolsearch sources to run (a patched copy measures a fix before it lands)."""
    results_dir: Path = RESULTS_DIR

    def pick(self, quick: Any, full: Any) -> Any:
        return quick if self.quick else full

    @cached_property
    def hybrid_profiles(self) -> tuple[HybridProfile, ...]:
        """Every profile asked for, in the order given, each with its availability."""
        return tuple(HybridProfile(value, self._unavailable(value)) for value in self.model_dirs)

    @property
    def measured_profiles(self) -> tuple[HybridProfile, ...]:
        return tuple(profile for profile in self.hybrid_profiles if profile.unavailable is None)

    @property
    def hybrid_gaps(self) -> list[tuple[str, str]]:
        """The hybrid rows this run cannot measure, as (label, reason): every unavailable profile, or a
        plain `hybrid` when no --model-dir was given."""
        if not self.model_dirs:
            return [("hybrid", NO_MODEL)]
        return [(p.label, p.unavailable) for p in self.hybrid_profiles if p.unavailable is not None]

    def _unavailable(self, model_dir: str) -> str | None:
        directories = profile_directories(model_dir)
        if not directories:
            return f"not available: --model-dir {model_dir!r} names no directory"
        missing = [str(directory) for directory in directories if not (directory / "model.onnx").exists()]
        if missing:
            return f"not available: no model.onnx in {', '.join(missing)}"
        return self._serve_unavailable

    @cached_property
    def _serve_unavailable(self) -> str | None:
        env = {**os.environ, "PYTHONPATH": str(self.service_dir)}
        usage = subprocess.run(
            [sys.executable, "-m", "toolsearch", "serve", "--help"], capture_output=True, text=True, env=env
        ).stdout
        if "--model-dir" not in usage:
            return "not available: `toolsearch serve` has no --model-dir yet"
        return None

    def as_dict(self) -> dict[str, Any]:
        values = asdict(self)
        return {key: str(value) if isinstance(value, Path) else value for key, value in values.items()}
