"""The answer's selection, alike for lexical and hybrid search: named tools first, then the best."""

from __future__ import annotations

import numpy as np

from toolsearch.search.selection import best_hits, best_positions, named_first


def test_named_tools_rank_above_every_other_by_the_span_of_the_scores() -> None:
    scores = named_first(np.array([0.5, -1.0, 2.0, 1.0]), np.array([1]))

    assert list(scores) == [0.5, 3.0, 2.0, 1.0]  # -1 + (2 - -1 + 1)
    assert int(np.argmax(scores)) == 1


def test_a_ranking_with_a_lowest_score_of_its_own_counts_the_span_from_it() -> None:
    # BM25F's lowest is 0: the named tool gets the best score and one more.
    scores = named_first(np.array([1.0, 2.0, 3.0]), np.array([0]), floor=0.0)

    assert list(scores) == [5.0, 2.0, 3.0]


def test_tools_left_out_of_a_ranking_stay_out_when_others_are_named() -> None:
    scores = named_first(np.array([1.0, -np.inf, 2.0]), np.array([0]))

    assert list(scores) == [3.0, -np.inf, 2.0]


def test_no_named_tool_leaves_the_scores_as_they_are() -> None:
    assert list(named_first(np.array([1.0, 2.0]), np.zeros(0, dtype=np.int64))) == [1.0, 2.0]


def test_the_best_come_first_and_ties_go_by_position() -> None:
    assert list(best_positions(np.array([1.0, 3.0, 1.0, 3.0, 0.5]), 3)) == [1, 3, 0]


def test_matching_only_leaves_out_the_tools_that_match_nothing() -> None:
    assert list(best_positions(np.array([0.0, 2.0, 0.0, 1.0]), 10, matching_only=True)) == [1, 3]
    assert list(best_positions(np.array([0.0, 2.0, 0.0, 1.0]), 10)) == [1, 3, 0, 2]


def test_no_hit_for_a_limit_of_none() -> None:
    assert best_hits(np.array([1.0, 2.0]), 0) == []


def test_hits_carry_their_score_and_whether_they_are_weak() -> None:
    hits = best_hits(np.array([1.0, 2.0]), 1, weak=True)

    assert [(hit.position, hit.score, hit.weak) for hit in hits] == [(1, 2.0, True)]
