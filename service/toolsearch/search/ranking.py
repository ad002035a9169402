"""Learned ranking: query adapters and a linear re-ranker over the hybrid index's signals.

The hand-set fusion (`search.signals`) stays the ranking's backbone; what is learned from training
requests (`toolsearch train`, `search.offline.training`) corrects it, and an index without a trained
`Ranker` for its models ranks by the fusion alone.

- **A query adapter.** For the first model, a linear map of the query's embedding, `q + q @ W`
  renormalised, fitted contrastively: each training request's adapted vector should be nearer to
  the tools that serve it than to every other tool of the catalog (softmax over all of them,
  the fusion's scores added: it learns what the fusion misses).
  Only the query side moves: tool vectors, and every cached tool embedding, stay valid. The
  adapted query's similarity to each tool is a signal of its own, next to the plain one.
- **Re-ranking.** The candidates of a query are the union of the best tools by the fusion, by
  each model and by BM25, and the tools it names. Each gets a row of `FEATURES`, all relative to
  the query (z-scores over the catalog, lexical scores over the best one), so that one weight
  fits every query; its score is that row times `Ranker.weights`. The weights start as the fusion
  alone (1 on `fusion`, 0 elsewhere) and are fitted with a listwise softmax loss pulled back
  toward that start (L2), so that little data moves them little. Named tools still rank first.

A ranker is data next to the models it was trained with: `ranker.json` (weights, the models'
fingerprints, the digests of its adapter file and of the data it was trained on) and
`adapter-0.npy`, the first model's adapter. `Ranker.load` refuses files that do not match their digests, and
`Ranker.fits` tells whether it was trained for the models at hand.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolsearch.embedding.manifest import ModelError, sha256_file
from toolsearch.search.dictionaries import Dictionaries, digest_of
from toolsearch.search.selection import best_positions, named_first
from toolsearch.search.signals import Signals, relative, standardised

RANKER_FILE = "ranker.json"
FORMAT_VERSION = 1
FEATURES = (
    "fusion",
    "lexical",
    "dense",
    "companion",
    "server_dense",
    "server_lexical",
    "server_bm25",
    "one_word_name_lexical",
    "english_lexical",
    "english_dense",
    "adapted_dense",
    "server_adapted_dense",
)
"""What the re-ranker reads of each candidate. `server_*` are the best value among the tools of the
candidate's server (which product the request is about); `one_word_name_lexical` is the lexical
score of a tool whose name is one word (such names match long requests by accident); `english_*`
let the weights differ for English requests, whose words the catalog shares. `companion` is the
first companion model's similarity; a profile with more companions reads one `companion_N` each
after these (`feature_names`)."""
CANDIDATES_BY_FUSION = 50
CANDIDATES_BY_MODEL = 30
CANDIDATES_BY_LEXICAL = 30
CANDIDATES_BY_COMPANION = 20


class ServerGroups:
    """Tools grouped by server, for per-server maxima in one vectorised pass. A tool without a
    server is a group of its own."""

    def __init__(self, servers: Sequence[str]) -> None:
        keys = [server or f"\0{position}" for position, server in enumerate(servers)]
        _, group = np.unique(np.array(keys, dtype=object), return_inverse=True)
        self._group = group.ravel()
        self._order = np.argsort(self._group, kind="stable")
        sorted_groups = self._group[self._order]
        self._starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])

    def best(self, values: np.ndarray) -> np.ndarray:
        """Per tool, the largest of `values` among the tools of its server."""
        if not len(values):
            return values
        return np.maximum.reduceat(values[self._order], self._starts)[self._group]


def feature_names(companions: int) -> tuple[str, ...]:
    """What the re-ranker reads of each candidate for a profile with `companions` companion models."""
    return FEATURES + tuple(f"companion_{number}" for number in range(2, companions + 1))


def candidates(signals: Signals) -> np.ndarray:
    """The tools worth re-ranking: the best by each signal, and the named ones (sorted positions)."""
    return np.unique(
        np.concatenate(
            [
                best_positions(signals.fusion, CANDIDATES_BY_FUSION),
                best_positions(signals.dense, CANDIDATES_BY_MODEL),
                best_positions(signals.lexical, CANDIDATES_BY_LEXICAL),
                # A companion that sat out the query has no best tools.
                *(best_positions(each, CANDIDATES_BY_COMPANION) for each in signals.companions if each.any()),
                signals.named,
            ]
        ).astype(np.int64)
    )


def feature_rows(
    signals: Signals, chosen: np.ndarray, groups: ServerGroups, one_word_names: np.ndarray
) -> np.ndarray:
    """One row of `feature_names(len(signals.companions))` per chosen tool."""
    fusion = standardised(signals.fusion)
    lexical = relative(signals.lexical)
    dense = standardised(signals.dense)
    # Zeros stay zeros: a model sitting out adds nothing.
    first, *others = [standardised(each)[chosen] for each in signals.companions] or [np.zeros(len(chosen))]
    adapted = standardised(signals.adapted_dense) if signals.adapted_dense is not None else dense
    english = float(signals.english)
    columns = (
        fusion[chosen],
        lexical[chosen],
        dense[chosen],
        first,
        groups.best(dense)[chosen],
        groups.best(lexical)[chosen],
        relative(signals.server_lexical)[chosen],
        one_word_names[chosen] * lexical[chosen],
        english * lexical[chosen],
        english * dense[chosen],
        adapted[chosen],
        groups.best(adapted)[chosen],
        *others,
    )
    return np.stack(columns, axis=1)


def adapt(vector: np.ndarray, adapter: np.ndarray) -> np.ndarray:
    """The query vector moved by its model's adapter (`q + q @ W`), renormalised."""
    moved: np.ndarray = vector + vector @ adapter
    return moved / max(float(np.linalg.norm(moved)), 1e-9)


def initial_weights(width: int = len(FEATURES)) -> np.ndarray:
    """The fusion alone, over `width` features: where training starts and what L2 pulls back toward."""
    weights = np.zeros(width)
    weights[FEATURES.index("fusion")] = 1.0
    return weights


@dataclass(frozen=True, slots=True)
class Ranker:
    """Trained weights and query adapters for one list of models (first model, then companions)."""

    weights: np.ndarray
    adapters: tuple[np.ndarray, ...]
    """The first model's (dimensions x dimensions) map."""
    models: tuple[str, ...]
    """Fingerprints of the models it was trained with (`Embedder.fingerprint`)."""
    training: dict[str, Any]
    """How it was trained: data digests, settings, figures (recorded, not used to rank)."""
    dictionaries: str | None = None
    """The digest of the dictionaries that translated its training requests (`Dictionaries.digest`),
    None for none: its weights count on what they translate."""

    @property
    def features(self) -> tuple[str, ...]:
        return feature_names(len(self.models) - 1)

    @property
    def digest(self) -> str:
        """What ranks: its weights as saved, its adapters, models and dictionaries (an abstention
        model records it: it reads the scores)."""
        digest = hashlib.sha256(json.dumps([rounded(self.weights), self.models, self.dictionaries]).encode())
        for adapter in self.adapters:
            digest.update(np.ascontiguousarray(adapter, dtype=np.float32).tobytes())
        return digest.hexdigest()

    def fits(self, fingerprints: Sequence[str], dictionaries: Dictionaries | None = None) -> bool:
        """Whether it was trained for exactly these models, in this order, and these dictionaries
        (None: none)."""
        return tuple(fingerprints) == self.models and digest_of(dictionaries) == self.dictionaries

    def scores(self, signals: Signals, groups: ServerGroups, one_word_names: np.ndarray) -> np.ndarray:
        """Every tool's learned score: candidates by their features, the rest below them all, and
        named tools above everything."""
        chosen = candidates(signals)
        scores = np.full(len(signals.fusion), -np.inf)
        scores[chosen] = feature_rows(signals, chosen, groups, one_word_names) @ self.weights
        return named_first(scores, signals.named)

    def contributions(
        self, signals: Signals, positions: np.ndarray, groups: ServerGroups, one_word_names: np.ndarray
    ) -> np.ndarray:
        """What each feature adds to the score of each tool at `positions` (rows), for explaining."""
        contributions: np.ndarray = feature_rows(signals, positions, groups, one_word_names) * self.weights
        return contributions

    def save(self, directory: Path) -> None:
        """Write `ranker.json` and the adapter files into `directory` (created if missing)."""
        directory.mkdir(parents=True, exist_ok=True)
        files = []
        for number, adapter in enumerate(self.adapters):
            name = f"adapter-{number}.npy"
            np.save(directory / name, adapter.astype(np.float32), allow_pickle=False)
            files.append({"file": name, "sha256": sha256_file(directory / name)})
        document = {
            "format": FORMAT_VERSION,
            "features": list(self.features),
            "weights": rounded(self.weights),
            "models": list(self.models),
            "dictionaries": self.dictionaries,
            "adapters": files,
            "training": self.training,
        }
        write_document(directory / RANKER_FILE, document)

    @classmethod
    def load(cls, directory: Path) -> Ranker:
        """Read a ranker directory, checking the digests of its document and of every adapter file."""
        path = directory / RANKER_FILE
        document = read_document(path, "a ranker", FORMAT_VERSION, _reads_its_features)
        adapters = []
        for entry in document["adapters"]:
            file = directory / entry["file"]
            if not file.is_file() or sha256_file(file) != entry["sha256"]:
                raise ModelError(f"{file}: missing, or its sha256 is not the one {path} records")
            adapters.append(np.load(file, allow_pickle=False))
        return cls(
            np.asarray(document["weights"], dtype=np.float64),
            tuple(adapters),
            tuple(document["models"]),
            document.get("training", {}),
            document.get("dictionaries"),
        )


def _reads_its_features(document: dict[str, Any]) -> bool:
    """Whether the document's features are what this version reads for its models, a weight each."""
    models, weights = document.get("models"), document.get("weights")
    if not isinstance(models, list) or not isinstance(weights, list):
        return False
    features = list(feature_names(len(models) - 1))
    return document.get("features") == features and len(weights) == len(features)


def _document_digest(document: dict[str, Any]) -> str:
    body = {key: value for key, value in document.items() if key != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def write_document(path: Path, document: dict[str, Any]) -> None:
    """Write a trained artifact's JSON document with the digest of its contents (`sha256`)."""
    document["sha256"] = _document_digest(document)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def read_document(
    path: Path, what: str, version: int, reads_its_features: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """A trained artifact's JSON document, refused unless it is of `version`, matches its digest
    and `reads_its_features` (those this version computes)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ModelError(f"{path}: cannot read {what} ({error})") from None
    if not isinstance(document, dict) or document.get("format") != version:
        raise ModelError(f"{path}: not {what} of format {version}")
    if document.get("sha256") != _document_digest(document):
        raise ModelError(f"{path}: its contents do not match its sha256; train it again")
    if not reads_its_features(document):
        raise ModelError(f"{path}: trained on other features than this version reads; train it again")
    return document


def rounded(values: np.ndarray) -> list[float]:
    """Weights as a trained artifact's document keeps them."""
    return [round(float(value), 8) for value in values]


def one_word_names(bare_names: Sequence[str]) -> np.ndarray:
    """1.0 for each tool whose name (without its server) is one word, else 0.0."""
    return np.array(
        [float(len([part for part in name.replace("-", "_").split("_") if part]) <= 1) for name in bare_names]
    )
