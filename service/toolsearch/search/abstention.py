"""Abstention: whether any tool of the catalog serves a request, decided by a small learned model.

Search always answers with its closest tools; when it judges that none serves the request it marks
them all weak (`SearchHit.weak`), and `search_tools` says "no match". The judgement reads what the
request's evidence looks like, not what the request says: a row of `FEATURES`, each chosen to mean
the same whatever the request's language (relative scores, z-scores over the catalog, shares of
words), so that a request and its translation get the same verdict:

- how far the best tool stands out by each model (its z-score over the catalog; a companion model
  that sits out the request's language counts as the first model) and by the learned ranking (its
  score, its margin over the next tool and over the best tool of another server);
- the cosine of the best tool's passage to the request (e5's cosines are multilingual);
- how much of the request the catalog's words cover: the share of its words that no tool has and
  no dictionary translates, and the best lexical score (log scale);
- the same evidence before the request's words were translated (the fusion's best tool's passage
  cosine, the best lexical score): what the calibrated thresholds judge (`weak_by_thresholds`).

A logistic regression over them gives the probability that no tool serves the request; above
`Abstainer.threshold` search abstains. It is trained (`toolsearch train`,
`toolsearch.search.offline.training`) on the training requests, which a tool serves, and on
requests no tool of the recorded catalog serves (`data/queries-unservable.jsonl`), with each
training request's scores coming from a ranker that did not see its server; the threshold is the
one that abstains wrongly on at most `WRONG_ABSTENTIONS` of the servable requests held out of
training. A request that names a tool is never abstained on.

An abstention model is data next to the ranker whose scores it reads: `abstention.json` (centre,
scale and weights of the features, threshold, and the fingerprints of the models, dictionaries and
ranker it was trained for, with its own digest). `Abstainer.load` refuses a file that does not
match its digest; `Abstainer.fits` tells whether it was trained for the profile at hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolsearch.embedding.manifest import AbstentionThreshold
from toolsearch.search.ranking import ServerGroups, read_document, rounded, write_document
from toolsearch.search.request import Words
from toolsearch.search.signals import Signals, standardised

ABSTENTION_FILE = "abstention.json"
FORMAT_VERSION = 1
FEATURES = (
    "top_cosine",
    "dense_z",
    "adapted_z",
    "companion_z",
    "top_score",
    "margin",
    "server_margin",
    "lexical",
    "unknown_share",
    "untranslated_cosine",
    "untranslated_lexical",
)
"""What the model reads of a request's evidence (`request_features`)."""
WRONG_ABSTENTIONS = 0.02
"""The share of held-out servable training requests the threshold may abstain on."""


def request_features(
    signals: Signals, scores: np.ndarray, top_cosine: float, groups: ServerGroups, words: Words
) -> np.ndarray:
    """The row of `FEATURES` for one request: its `signals` over the catalog, the final `scores`
    that rank it (the learned ranking's: candidates scored, the rest -inf), the cosine of the top
    tool's passage to it, and how much of it the catalog's words cover."""
    top = int(np.argmax(scores))
    best = float(scores[top])
    # Tools a ranking leaves out (-inf) are no competitors: with none left, the margins are nil.
    others = np.where(np.arange(len(scores)) == top, -np.inf, scores)
    other_servers = np.where(groups.best(np.eye(1, len(scores), top).ravel()) > 0, -np.inf, scores)
    runner_up = float(others.max()) if np.isfinite(others).any() else best
    other_server = float(other_servers.max()) if np.isfinite(other_servers).any() else best
    adapted = signals.adapted_dense if signals.adapted_dense is not None else signals.dense
    dense = float(standardised(signals.dense).max())
    # A companion that sits out the request's language reads as the first model does: its absence
    # says nothing of the request, and a translation would otherwise change the verdict.
    companion = max(
        (float(standardised(each).max()) for each in signals.companions if each.any()), default=dense
    )
    return np.array(
        [
            top_cosine,
            dense,
            float(standardised(adapted).max()),
            companion,
            best,
            best - runner_up,
            best - other_server,
            float(np.log1p(max(float(signals.lexical.max()), 0.0))),
            words.unknown / max(words.words, 1),
            signals.untranslated[0],
            float(np.log1p(max(signals.untranslated[1], 0.0))),
        ]
    )


def weak_by_thresholds(
    threshold: AbstentionThreshold | None,
    cosine: float,
    own_lexical: float,
    translated_lexical: float,
    *,
    translating: bool,
) -> bool:
    """Whether the best tool is a poor match by a model's calibrated thresholds (without a trained
    `Abstainer`): both rankers doubt it, its passage's `cosine` to the request and the best lexical
    score (when `translating` with dictionaries, that with the request's translated words)."""
    if threshold is None:
        return False
    if translating and threshold.translated_lexical is not None:
        return cosine < threshold.cosine and translated_lexical < threshold.translated_lexical
    return cosine < threshold.cosine and own_lexical < threshold.lexical


def _sigmoid(values: np.ndarray) -> np.ndarray:
    result: np.ndarray = 1.0 / (1.0 + np.exp(-values))
    return result


@dataclass(frozen=True, slots=True)
class Abstainer:
    """A trained abstention model for one profile (models, dictionaries, ranker)."""

    centre: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    """Of the standardised features; positive where a feature says no tool serves the request."""
    bias: float
    threshold: float
    """The probability that no tool serves a request above which search abstains."""
    models: tuple[str, ...]
    dictionaries: str | None
    ranker: str
    """The digest of the ranker whose scores it reads (`Ranker.digest`)."""
    training: dict[str, Any]
    """How it was trained: data digests, settings, held-out figures (recorded, not used)."""

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        """The probability that no tool serves each request, one row of `FEATURES` each."""
        return _sigmoid(((rows - self.centre) / self.scale) @ self.weights + self.bias)

    def abstains(self, row: np.ndarray) -> bool:
        """Whether no tool serves the request whose features are `row`."""
        return bool(self.probabilities(row[None, :])[0] > self.threshold)

    def fits(self, fingerprints: Sequence[str], dictionaries: str | None, ranker: str | None) -> bool:
        """Whether it was trained for these models (in order), dictionaries and ranker (digests)."""
        return (
            tuple(fingerprints) == self.models and dictionaries == self.dictionaries and ranker == self.ranker
        )

    def save(self, directory: Path) -> None:
        """Write `abstention.json` into `directory` (created if missing)."""
        directory.mkdir(parents=True, exist_ok=True)
        document: dict[str, Any] = {
            "format": FORMAT_VERSION,
            "features": list(FEATURES),
            "centre": rounded(self.centre),
            "scale": rounded(self.scale),
            "weights": rounded(self.weights),
            "bias": round(float(self.bias), 8),
            "threshold": round(float(self.threshold), 8),
            "models": list(self.models),
            "dictionaries": self.dictionaries,
            "ranker": self.ranker,
            "training": self.training,
        }
        write_document(directory / ABSTENTION_FILE, document)

    @classmethod
    def load(cls, directory: Path) -> Abstainer:
        """Read an abstention directory, checking its digest and that it reads this version's features."""
        document = read_document(
            directory / ABSTENTION_FILE,
            "an abstention model",
            FORMAT_VERSION,
            lambda document: document.get("features") == list(FEATURES),
        )
        return cls(
            np.asarray(document["centre"], dtype=np.float64),
            np.asarray(document["scale"], dtype=np.float64),
            np.asarray(document["weights"], dtype=np.float64),
            float(document["bias"]),
            float(document["threshold"]),
            tuple(document["models"]),
            document.get("dictionaries"),
            str(document["ranker"]),
            document.get("training", {}),
        )
