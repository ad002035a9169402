"""Search outcomes: what a caller does after each search is counted (followed at a rank, by another
tool, retried, unfollowed; calls without search; unknown names), from a real MCP client session
through the proxy, and nothing of a query is kept or shown."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import TOKEN_X, call_json, call_text, connect, running_proxy
from toolsearch.backends.memory import MemoryOutcomes
from toolsearch.commands.stats import fetch_report, format_report
from toolsearch.mcp.caller import CallerHeaders
from toolsearch.outcomes import SearchOutcomes, merge_counts, report
from toolsearch.runtime import Supervisor
from toolsearch.telemetry import Telemetry

WINDOW = 2.0
SECRET_QUERY = "QUERY-SECRET-zebra current time in a timezone"


def names(answer: dict[str, Any]) -> list[str]:
    return [tool["name"] for result in answer["results"] for tool in result["tools"]]


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one Prometheus sample, 0 when it is absent."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{key}="{value}"' in line for key, value in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def scripted_session(url: str, x_names: set[str]) -> dict[str, str]:
    """One caller's session; the comments say how each search ends."""
    async with connect(url, TOKEN_X) as client:
        first = names(await call_json(client, "search_tools", {"query": SECRET_QUERY, "limit": 5}))
        await call_text(client, "call_write_tool", {"name": first[1], "arguments": {}})  # followed, rank 2

        slack = names(
            await call_json(client, "search_tools", {"query": "send a message to slack", "limit": 3})
        )
        github = names(await call_json(client, "search_tools", {"query": "list github issues", "limit": 3}))
        # The slack search was retried; the github one is followed by a tool it did not show.
        other = sorted(x_names - set(first) - set(github))[0]
        await call_text(client, "call_write_tool", {"name": other, "arguments": {}})

        await call_text(client, "call_write_tool", {"name": first[0], "arguments": {}})  # shown earlier
        unsearched = sorted(x_names - set(first) - set(slack) - set(github) - {other})[0]
        await call_text(client, "call_write_tool", {"name": unsearched, "arguments": {}})  # without search
        await call_text(client, "call_write_tool", {"name": "time_get_curent_time", "arguments": {}})  # typo
        await call_text(client, "call_write_tool", {"name": "qqq_zzz_nothing", "arguments": {}})  # missing

        best = names(await call_json(client, "search_tools", {"query": "slack channels"}))[0]
        await call_text(client, "call_write_tool", {"name": best, "arguments": {}})  # followed, rank 1

        await call_json(client, "search_tools", {"query": "qqqzzzxx wwvvyy"})  # empty, then unfollowed
    await asyncio.sleep(WINDOW + 1.0)  # the last search's window passes with no call
    return {"first": first[1], "other": other, "unsearched": unsearched, "best": best}


@pytest.fixture(scope="module")
def session(upstream, x_names) -> Iterator[tuple[str, dict[str, str]]]:
    """A proxy serving /stats, after one scripted session of one caller."""
    with running_proxy(upstream[0], stats=True, search_outcome_window=WINDOW) as url:
        yield url.removesuffix("/mcp"), asyncio.run(scripted_session(url, x_names))


def test_a_scripted_session_produces_the_expected_counts(session) -> None:
    base, tools = session
    counts = httpx.get(f"{base}/stats").json()["counts"]

    assert counts["searches"] == 5
    assert counts["ended"] == {"followed": 2, "not_in_results": 1, "retried": 1, "unfollowed": 1}
    assert counts["followed_by_rank"] == {"1": 1, "2": 1}
    assert (counts["empty"], counts["abstained"]) == (1, 0)
    assert counts["calls"] == 5  # of tools in the catalog
    assert counts["unknown_tool"] == {"typo": 1, "missing": 1}
    assert counts["called_without_search"] == {tools["unsearched"]: 1}
    assert counts["called_not_in_results"] == {tools["other"]: 1}


def test_the_metrics_count_outcomes_without_tool_names(session) -> None:
    base, tools = session
    text = httpx.get(f"{base}/metrics").text

    assert metric(text, "toolsearch_search_followed_count", toolsearch_outcome="followed") == 2
    assert metric(text, "toolsearch_search_followed_bucket", toolsearch_outcome="followed", le="1") == 1
    assert metric(text, "toolsearch_search_followed_count", toolsearch_outcome="not_in_results") == 1
    assert metric(text, "toolsearch_search_retried_total") == 1
    assert metric(text, "toolsearch_search_unfollowed_total") == 1
    assert metric(text, "toolsearch_search_empty_total") == 1
    assert metric(text, "toolsearch_call_without_search_total") == 1
    assert metric(text, "toolsearch_call_unknown_tool_total", toolsearch_outcome="typo") == 1
    assert metric(text, "toolsearch_call_unknown_tool_total", toolsearch_outcome="missing") == 1
    outcomes = "\n".join(line for line in text.splitlines() if "_search_" in line or "_call_" in line)
    for name in tools.values():
        assert name not in outcomes


def test_stats_and_metrics_never_show_a_query(session) -> None:
    base, _ = session
    shown = httpx.get(f"{base}/stats").text + httpx.get(f"{base}/metrics").text

    assert "SECRET" not in shown and "zebra" not in shown and "qqqzzzxx" not in shown


def test_the_stats_command_adds_up_running_proxies(session) -> None:
    base, _ = session

    summary = fetch_report([base, f"{base}/stats"])  # one proxy twice: every count doubled
    printed = format_report(summary)

    assert summary["counts"]["searches"] == 10
    assert summary["followed_by_a_result"] == 0.4
    assert summary["followed_by_rank"] == {"1": 0.2, "2": 0.2}
    assert re.search(r"followed by a call of a result +4 +40\.0%", printed)


def test_stats_are_off_by_default(upstream) -> None:
    with running_proxy(upstream[0]) as url:
        assert httpx.get(url.removesuffix("/mcp") + "/stats").status_code == 404


def _results(*answers: list[str], matched: bool = True) -> list[dict[str, Any]]:
    return [
        {"tools": [{"name": name} for name in answer], **({} if matched else {"matched": False})}
        for answer in answers
    ]


async def test_a_tool_shown_by_several_queries_counts_at_its_best_rank(supervisor: Supervisor) -> None:
    outcomes = SearchOutcomes.in_process(Telemetry(use_environment=False), supervisor)
    caller = CallerHeaders(authorization="Bearer t")

    await outcomes.searched(caller, _results(["a", "b", "c"], ["c", "d"]))
    await outcomes.called(caller, "c")

    assert outcomes.counts()["followed_by_rank"] == {"1": 1}


async def test_a_search_whose_every_answer_is_weak_counts_as_abstained(supervisor: Supervisor) -> None:
    outcomes = SearchOutcomes.in_process(Telemetry(use_environment=False), supervisor)
    caller = CallerHeaders(authorization="Bearer t")

    await outcomes.searched(caller, _results(["a"], ["b"], matched=False))
    await outcomes.searched(caller, [*_results(["a"], matched=False), *_results(["b"])])

    counts = outcomes.counts()
    assert (counts["abstained"], counts["empty"]) == (1, 0)
    assert report(counts)["abstention_rate"] == 0.5


async def test_callers_are_judged_apart(supervisor: Supervisor) -> None:
    outcomes = SearchOutcomes(
        MemoryOutcomes(), _Tokens(), Telemetry(use_environment=False), supervisor=supervisor
    )
    one, two = CallerHeaders(authorization="Bearer 1"), CallerHeaders(authorization="Bearer 2")

    await outcomes.searched(one, _results(["a"]))
    await outcomes.called(two, "a")

    counts = outcomes.counts()
    assert counts["ended"]["followed"] == 0
    assert counts["called_without_search"] == {"a": 1}


def test_replica_counts_add_up() -> None:
    one = {"window_seconds": 300.0, "searches": 2, "ended": {"followed": 1}, "followed_by_rank": {"1": 1}}
    two = {"window_seconds": 300.0, "searches": 3, "ended": {"followed": 2}, "followed_by_rank": {"2": 2}}

    assert merge_counts([one, two]) == {
        "window_seconds": 300.0,
        "searches": 5,
        "ended": {"followed": 3},
        "followed_by_rank": {"1": 1, "2": 2},
    }


class _Tokens:
    async def identify(self, authorization: str | None) -> Any:
        from toolsearch.identity import token_identity

        return token_identity(authorization)

    async def aclose(self) -> None:
        return None
