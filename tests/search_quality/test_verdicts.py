"""The verdict "no match" (`search_tools` answers `matched: false` when search marks its best hit
weak), as the shipped profile gives it today over the regression slice of the recorded catalog
(conftest): a request and its translation get the same verdict, and requests for what no tool of
the recorded catalog does are told so. A verdict the profile does not give yet is marked
`xfail(strict=True)`, so that the day it is given shows (not strict where a score sits at a
threshold's edge, which another CPU's kernels may cross).
"""

from __future__ import annotations

import pytest

from toolsearch.embedding import Embedder
from toolsearch.search import SearchIndex
from toolsearch.search.build import build_index
from toolsearch.search.dictionaries import Dictionaries
from toolsearch.search.hybrid import QueryVectors
from toolsearch.search.ranking import Ranker
from toolsearch.search.vectors import MemoryVectorCache
from toolsearch.tool import Tool

NOT_YET = (
    "not yet: the best tool's cosine or lexical score clears the calibrated thresholds "
    "(docs/search-quality.md, Abstention)"
)


@pytest.fixture(scope="module")
def shipped(
    tools: list[Tool],
    models: list[Embedder],
    cache: MemoryVectorCache,
    shipped_ranker: Ranker,
    dictionaries: Dictionaries,
) -> SearchIndex:
    return build_index(
        tools,
        models[0],
        companions=[QueryVectors(models[1])],
        cache=cache,
        ranker=shipped_ranker,
        dictionaries=dictionaries,
    )


def _no_match(index: SearchIndex, request: str) -> bool:
    hits = index.search(request, 10)
    return not hits or hits[0].weak


@pytest.mark.parametrize(
    ("german", "english"),
    [
        pytest.param(
            "Richte eine Stummschaltung für alertname=DiskFull, instance=db-3 bis heute 18:00 ein, "
            "während wir die Festplatte vergrößern",
            "Add a silence for alertname=DiskFull, instance=db-3 until 18:00 today while we grow the disk",
            id="grafana-silence",
        ),
        pytest.param(
            "Öffne meine Notizen „Project Atlas“ und „Weekly review 2025-W20“ aus dem Vault",
            'Open my notes "Project Atlas" and "Weekly review 2025-W20" from the vault',
            id="vault-notes",
        ),
        pytest.param(
            "Poste das Foto vom Teamevent auf unserem Instagram-Account mit dem Text „Danke an alle!“",
            "Post the photo from the team event on our Instagram account "
            "with the caption “Thanks, everyone!”",
            id="instagram-post",
        ),
        pytest.param(
            "Hol mir bitte einen Cappuccino aus der Kantine, bevor das Meeting um 10 anfängt.",
            "Please get me a cappuccino from the canteen before the meeting starts at 10.",
            id="cappuccino",
            # Not strict: the English request's best cosine is 0.806, 0.002 under the threshold
            # (2026-12-06, an AVX-512 Xeon), near enough that another CPU's kernels may cross it.
            marks=pytest.mark.xfail(strict=False, reason=NOT_YET),
        ),
    ],
)
def test_a_german_request_gets_the_verdict_of_its_english_original(
    shipped: SearchIndex, german: str, english: str
) -> None:
    assert _no_match(shipped, german) == _no_match(shipped, english)


@pytest.mark.parametrize(
    "request_text",
    [
        pytest.param(request_text, marks=pytest.mark.xfail(strict=True, reason=NOT_YET))
        for request_text in (
            "send a fax",
            "approve a leave request in BambooHR",
            "print shipping labels on a Zebra printer",
        )
    ],
)
def test_what_no_tool_of_the_recorded_catalog_does_is_no_match(
    shipped: SearchIndex, request_text: str
) -> None:
    assert _no_match(shipped, request_text)
