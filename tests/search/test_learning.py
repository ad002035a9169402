"""Search that learns from use (`search.learning`): the aggregates' arithmetic on synthetic vectors."""

from __future__ import annotations

import numpy as np
import pytest

from toolsearch.search.learning import (
    MAX_CONTRIBUTORS,
    LearnedCatalog,
    LearningPolicy,
    ToolAggregate,
    contribute,
    contributor,
    strength,
)

POLICY = LearningPolicy(k=3, half_life=100.0, weight=0.06, floor=0.5, saturation=3.0)
TOOLS = [("a", "digest-a"), ("b", "digest-b"), ("c", "digest-c")]
INTENT = np.array([1.0, 0.0, 0.0], dtype=np.float32)
ELSEWHERE = np.array([0.0, 1.0, 0.0], dtype=np.float32)


def taught(
    callers: int, *, tool_digest: str = "digest-b", vector: np.ndarray = INTENT, now: float = 0.0
) -> ToolAggregate:
    aggregate = None
    for caller in range(callers):
        aggregate = contribute(
            aggregate, vector, contributor("catalog", f"caller-{caller}"), tool_digest, now, POLICY
        )
    assert aggregate is not None
    return aggregate


def test_a_caller_counts_once_however_often_it_calls() -> None:
    once = taught(1)
    again = contribute(once, INTENT, contributor("catalog", "caller-0"), "digest-b", 5.0, POLICY)
    assert again is None
    assert once.mass == 1.0 and len(once.contributors) == 1


def test_contributor_hashes_of_one_caller_differ_between_catalogs_and_hold_no_identity() -> None:
    first, second = contributor("catalog-1", "caller"), contributor("catalog-2", "caller")
    assert first != second
    assert "caller" not in first and len(first) == 16


def test_an_aggregate_has_no_effect_below_k_callers() -> None:
    assert strength(taught(2), 0.0, POLICY) == 0.0
    assert LearnedCatalog.of({"b": taught(2)}, TOOLS, (), 0.0, POLICY) is None
    assert strength(taught(3), 0.0, POLICY) == 1.0


def test_learned_evidence_goes_to_the_taught_tool_for_requests_like_the_taught_ones() -> None:
    learned = LearnedCatalog.of({"b": taught(3)}, TOOLS, (), 0.0, POLICY)
    assert learned is not None
    bonus = learned.bonus(np.array([0.9, 0.1, 0.0], dtype=np.float32), len(TOOLS))
    assert bonus[0] == bonus[2] == 0.0
    assert 0.0 < bonus[1] <= POLICY.weight


def test_requests_unlike_the_taught_ones_gain_nothing() -> None:
    learned = LearnedCatalog.of({"b": taught(3)}, TOOLS, (), 0.0, POLICY)
    assert learned is not None
    assert not learned.bonus(ELSEWHERE, len(TOOLS)).any()


def test_learned_evidence_is_bounded_by_the_weight() -> None:
    learned = LearnedCatalog.of({"b": taught(50)}, TOOLS, (), 0.0, POLICY)
    assert learned is not None
    assert float(learned.bonus(INTENT, len(TOOLS)).max()) == pytest.approx(POLICY.weight)


def test_contributions_decay_with_the_half_life() -> None:
    aggregate = taught(3)
    assert strength(aggregate, POLICY.half_life, POLICY) == pytest.approx(0.5)
    assert aggregate.decayed(2 * POLICY.half_life, POLICY.half_life).mass == pytest.approx(0.75)


def test_a_flagged_tool_gains_nothing() -> None:
    assert LearnedCatalog.of({"b": taught(10)}, TOOLS, ("b",), 0.0, POLICY) is None


def test_what_was_learned_is_dropped_when_the_tools_definition_changes() -> None:
    aggregate = taught(3)
    assert LearnedCatalog.of({"b": aggregate}, [("b", "digest-b2")], (), 0.0, POLICY) is None
    relearned = contribute(aggregate, INTENT, contributor("catalog", "new"), "digest-b2", 0.0, POLICY)
    assert relearned is not None and relearned.mass == 1.0 and relearned.definition == "digest-b2"


def test_the_aggregate_is_a_sum_of_unit_vectors_not_any_one_request() -> None:
    aggregate = contribute(taught(1), ELSEWHERE * 7, contributor("catalog", "other"), "digest-b", 0.0, POLICY)
    assert aggregate is not None
    np.testing.assert_allclose(aggregate.total, INTENT + ELSEWHERE)


def test_contributor_hashes_are_bounded() -> None:
    assert len(taught(MAX_CONTRIBUTORS + 10).contributors) == MAX_CONTRIBUTORS


@pytest.mark.parametrize(("field", "value"), [("k", 0), ("half_life", 0.0), ("floor", 1.0)])
def test_a_policy_out_of_range_is_refused_clearly(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field.replace("_", "-")):
        LearningPolicy(**{field: value})
