"""Abstention as a learned decision: the features of a request's evidence, and the model's verdict
on them, as pure functions; the model's file checked before it is trusted."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from toolsearch.embedding import ModelError
from toolsearch.search.abstention import FEATURES, Abstainer, Words, request_features
from toolsearch.search.ranking import ServerGroups
from toolsearch.search.signals import Signals

TOOLS = 40


def _signals(dense: np.ndarray, lexical: np.ndarray) -> Signals:
    return Signals(
        fusion=dense,
        lexical=lexical,
        server_lexical=np.zeros(TOOLS),
        dense=dense,
        companions=(dense,),
        named=np.array([], np.int64),
        english=True,
        vector=np.zeros(4),
    )


def _abstainer(**changes: object) -> Abstainer:
    """Abstains when the top score is low: a weight on `top_score` alone."""
    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("top_score")] = -4.0
    fields: dict[str, object] = {
        "centre": np.zeros(len(FEATURES)),
        "scale": np.ones(len(FEATURES)),
        "weights": weights,
        "bias": 0.0,
        "threshold": 0.5,
        "models": ("first", "second"),
        "dictionaries": None,
        "ranker": "ranker-digest",
        "training": {"data": "generated"},
    }
    fields.update(changes)
    return Abstainer(**fields)  # type: ignore[arg-type]


GROUPS = ServerGroups([f"server{position // 4}" for position in range(TOOLS)])


def test_features_say_how_far_the_best_tool_stands_out() -> None:
    flat = np.full(TOOLS, 0.8) + np.linspace(0.0, 0.01, TOOLS)
    standing_out = flat.copy()
    standing_out[7] = 0.95
    words = Words(words=5, unknown=0)
    doubtful = request_features(_signals(flat, flat), flat, 0.8, GROUPS, words)
    clear = request_features(_signals(standing_out, standing_out), standing_out, 0.95, GROUPS, words)
    for feature in ("top_cosine", "dense_z", "companion_z", "top_score", "margin", "server_margin"):
        assert clear[FEATURES.index(feature)] > doubtful[FEATURES.index(feature)], feature


def test_the_margin_over_another_server_skips_the_best_tools_own_server() -> None:
    scores = np.zeros(TOOLS)
    scores[[0, 1, 4]] = [3.0, 2.9, 1.0]  # tools 0 and 1 share a server, tool 4 is another's
    row = request_features(_signals(scores, scores), scores, 0.9, GROUPS, Words(3, 0))
    assert row[FEATURES.index("margin")] == pytest.approx(0.1)
    assert row[FEATURES.index("server_margin")] == pytest.approx(2.0)


def test_tools_left_out_of_the_ranking_count_for_nothing() -> None:
    scores = np.full(TOOLS, -np.inf)
    scores[[3, 9]] = [1.5, 0.5]
    row = request_features(_signals(np.zeros(TOOLS), np.zeros(TOOLS)), scores, 0.9, GROUPS, Words(3, 0))
    assert row[FEATURES.index("top_score")] == 1.5
    assert row[FEATURES.index("margin")] == pytest.approx(1.0)
    assert np.isfinite(row).all()


def test_the_share_of_unknown_words_is_of_the_requests_words() -> None:
    row = request_features(
        _signals(np.zeros(TOOLS), np.zeros(TOOLS)), np.ones(TOOLS), 0.9, GROUPS, Words(4, 1)
    )
    assert row[FEATURES.index("unknown_share")] == 0.25
    empty = request_features(
        _signals(np.zeros(TOOLS), np.zeros(TOOLS)), np.ones(TOOLS), 0.9, GROUPS, Words(0, 0)
    )
    assert empty[FEATURES.index("unknown_share")] == 0.0


def test_a_request_is_abstained_on_above_the_threshold_only() -> None:
    abstainer = _abstainer()
    weak, strong = np.zeros(len(FEATURES)), np.zeros(len(FEATURES))
    weak[FEATURES.index("top_score")] = -1.0  # probability 0.98
    strong[FEATURES.index("top_score")] = 1.0  # 0.02
    assert abstainer.abstains(weak)
    assert not abstainer.abstains(strong)
    assert not _abstainer(threshold=0.99).abstains(weak)


def test_the_same_evidence_gets_the_same_verdict() -> None:
    rows = np.random.default_rng(0).normal(size=(20, len(FEATURES)))
    abstainer = _abstainer()
    assert [abstainer.abstains(row) for row in rows] == [abstainer.abstains(row.copy()) for row in rows]
    assert np.array_equal(abstainer.probabilities(rows) > 0.5, [abstainer.abstains(row) for row in rows])


def test_a_saved_abstainer_loads_as_it_was(tmp_path: Path) -> None:
    _abstainer().save(tmp_path)
    loaded = Abstainer.load(tmp_path)
    assert np.array_equal(loaded.weights, _abstainer().weights)
    assert (loaded.threshold, loaded.models, loaded.ranker) == (0.5, ("first", "second"), "ranker-digest")


def test_an_abstainer_whose_threshold_was_edited_is_refused(tmp_path: Path) -> None:
    _abstainer().save(tmp_path)
    document = json.loads((tmp_path / "abstention.json").read_text())
    document["threshold"] = 0.99
    (tmp_path / "abstention.json").write_text(json.dumps(document))
    with pytest.raises(ModelError, match="do not match its sha256"):
        Abstainer.load(tmp_path)


def test_an_abstainer_applies_only_to_the_profile_it_was_trained_for() -> None:
    abstainer = _abstainer()
    assert abstainer.fits(["first", "second"], None, "ranker-digest")
    assert not abstainer.fits(["first", "second"], None, "another ranker")
    assert not abstainer.fits(["second", "first"], None, "ranker-digest")
    assert not abstainer.fits(["first", "second"], "some dictionaries", "ranker-digest")


def test_a_companion_sitting_out_the_language_reads_as_the_first_model() -> None:
    dense = np.linspace(0.0, 1.0, TOOLS)
    sitting_out = dataclasses.replace(_signals(dense, dense), companions=(np.zeros(TOOLS),), english=False)
    row = request_features(sitting_out, dense, 0.9, GROUPS, Words(3, 0))
    assert row[FEATURES.index("companion_z")] == row[FEATURES.index("dense_z")]
