"""Hostile tools may not win searches: the quick slice of bench/adversarial.py.

The whole recorded catalog (5,190 tools) plus the seeded hostile tools (`bench.adversarial`:
keyword stuffing, claims of every capability, instructions to the model, look-alike names,
oversized descriptions), every dev query, BM25 (hybrid is measured by the bench section).
Deterministic: no timing.
"""

from __future__ import annotations

import pytest

from bench.adversarial import DEV_QUERIES, Figures, hostile_tools, measure
from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path
from toolsearch.evaluation import load_queries
from toolsearch.search.lexical import LexicalIndex
from toolsearch.tool import ToolInterner

RECALL_AT_5_BEFORE_DEFENCES = 130 / 248
"""BM25 recall@5 on the dev set over the recorded catalog before the defences (README figure)."""
RECORDED_ATTACK_COST = 2 / 248


@pytest.fixture(scope="module")
def measured() -> tuple[float, Figures]:
    definitions = load_catalog_file(recorded_catalog_path())
    interner = ToolInterner()
    catalog = [interner.intern(definition) for definition in definitions]
    return measure(catalog, hostile_tools(definitions), load_queries(DEV_QUERIES), LexicalIndex.build)


def test_no_hostile_tool_ranks_first(measured: tuple[float, Figures]) -> None:
    assert measured[1].hostile_top1 == 0.0


def test_hostile_tools_reach_the_top_5_of_at_most_1_percent_of_requests(
    measured: tuple[float, Figures],
) -> None:
    assert measured[1].hostile_top5 <= 0.01


def test_the_defences_keep_dev_recall_at_5_within_half_a_point(measured: tuple[float, Figures]) -> None:
    clean, _ = measured
    assert abs(clean - RECALL_AT_5_BEFORE_DEFENCES) <= 0.005 + 1e-9


def test_hostile_tools_cost_real_tools_no_more_recall_at_5_than_recorded(
    measured: tuple[float, Figures],
) -> None:
    # Recorded: 2 of 248 requests lose their gold tool from the top 5, not to a hostile tool but
    # because the hostile texts shift the catalog's term statistics (see docs/search-quality.md).
    clean, figures = measured
    assert clean - figures.recall_at_5 <= RECORDED_ATTACK_COST + 1e-9


def test_flagged_tools_hidden_leave_no_hostile_tool_in_the_top_5_more_often(
    measured: tuple[float, Figures],
) -> None:
    assert measured[1].hidden_top5 <= measured[1].hostile_top5
