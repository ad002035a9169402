"""Hostile tools may not win searches, and look-alikes are named: the fixed BM25 slice of
bench/adversarial.py.

The whole recorded catalog (5,190 tools) plus the hostile tools of `bench.adversarial_attacks`
(seed 33: keyword stuffing, claims of every capability, instructions to the model, look-alikes,
copies with a line added, stuffed parameters, names of requested verbs, other languages), each
side (development, held-out) in the catalog at once, every dev request, BM25 (hybrid is measured
by the bench section). Deterministic: no timing.
"""

from __future__ import annotations

import pytest

from bench.adversarial import DEV_QUERIES, Figures, measure, rankings, recall_at_5
from bench.adversarial_attacks import HostileTool, Side, hostile_tools
from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path
from toolsearch.integrity.flags import integrity
from toolsearch.search.lexical import LexicalIndex
from toolsearch.search.offline.evaluation import load_queries
from toolsearch.tool import Tool, ToolInterner

RECALL_AT_5_BEFORE_DEFENCES = 131 / 248
"""BM25 recall@5 on the dev set over the recorded catalog before issue 33's defences (aeb1b66)."""
HELD_OUT_TOP1_RECORDED = 1 / 260
HELD_OUT_TOP5_RECORDED = 13 / 260
"""BM25 with every defence (docs/security.md): what the held-out families still win, a ceiling."""


@pytest.fixture(scope="module")
def catalog() -> list[Tool]:
    interner = ToolInterner()
    return [interner.intern(definition) for definition in load_catalog_file(recorded_catalog_path())]


@pytest.fixture(scope="module")
def hostile() -> list[HostileTool]:
    return hostile_tools(load_catalog_file(recorded_catalog_path()))


@pytest.fixture(scope="module")
def measured(catalog: list[Tool], hostile: list[HostileTool]) -> dict[Side, dict[str, Figures]]:
    queries = load_queries(DEV_QUERIES)
    return {
        side: measure(catalog, [tool for tool in hostile if tool.side == side], queries, LexicalIndex.build)
        for side in ("development", "held-out")
    }


def test_no_development_hostile_tool_ranks_first(measured: dict[Side, dict[str, Figures]]) -> None:
    assert measured["development"]["all"].top1 == 0.0


def test_development_hostile_tools_reach_the_top_5_of_at_most_1_percent_of_requests(
    measured: dict[Side, dict[str, Figures]],
) -> None:
    assert measured["development"]["all"].top5 <= 0.01


def test_held_out_hostile_tools_win_no_more_than_recorded(measured: dict[Side, dict[str, Figures]]) -> None:
    held = measured["held-out"]["all"]
    assert held.top1 <= HELD_OUT_TOP1_RECORDED + 1e-9
    assert held.top5 <= HELD_OUT_TOP5_RECORDED + 1e-9


@pytest.mark.parametrize("side", ["development", "held-out"])
def test_every_look_alike_is_flagged_naming_the_tool_it_imitates(
    measured: dict[Side, dict[str, Figures]], side: Side
) -> None:
    assert measured[side]["look-alike"].named == 1.0


@pytest.mark.parametrize("side", ["development", "held-out"])
def test_every_instruction_to_the_model_is_flagged(
    measured: dict[Side, dict[str, Figures]], side: Side
) -> None:
    assert measured[side]["instructions"].flagged == 1.0


def test_at_most_1_percent_of_the_recorded_catalogs_real_tools_are_flagged(catalog: list[Tool]) -> None:
    assert len(integrity(catalog).reasons) <= 0.01 * len(catalog)


def test_the_defences_keep_dev_recall_at_5_within_half_a_point(catalog: list[Tool]) -> None:
    queries = load_queries(DEV_QUERIES)
    names = [tool.name for tool in catalog]
    ranked = rankings(
        LexicalIndex.build(catalog), names, queries, flagged=frozenset(integrity(catalog).reasons)
    )
    assert abs(recall_at_5(ranked, queries) - RECALL_AT_5_BEFORE_DEFENCES) <= 0.005 + 1e-9
