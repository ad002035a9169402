"""`toolsearch stats`: what callers did with search answers, from the `/stats` of running replicas.

Each replica counts the searches it answered (and the calls it served) since it started; this
command adds up the replicas it is given and prints the shares an operator reads: searches followed
by a call of a result, by rank, and by anything else; abstentions; the tools most often called
without a search that showed them. It is the production counterpart of `toolsearch eval`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from toolsearch.commands import Subparsers, command_parser
from toolsearch.outcomes import merge_counts, report
from toolsearch.untrusted import clean_text


def fetch_report(urls: Sequence[str], timeout: float = 10.0) -> dict[str, Any]:
    """The report of the replicas at `urls` (base URLs, or their `/stats` URLs) taken together."""
    counts = []
    with httpx.Client(timeout=timeout) as client:
        for url in urls:
            stats_url = url if url.rstrip("/").endswith("/stats") else url.rstrip("/") + "/stats"
            response = client.get(stats_url)
            if response.status_code == 404:
                raise ValueError(f"{stats_url} is not served: start the proxy with --stats")
            response.raise_for_status()
            counts.append(response.json()["counts"])
    return report(merge_counts(counts))


def format_report(summary: Mapping[str, Any]) -> str:
    counts = summary["counts"]
    ended = counts["ended"]
    window = counts["window_seconds"]

    def row(label: str, count: int, share: float | None = None) -> str:
        shown = "" if share is None else f"{100 * share:6.1f}%"
        return f"  {label:<44}{count:>8}  {shown}".rstrip()

    lines = [
        f"searches: {counts['searches']} ({sum(ended.values())} ended, window {window:g} s)",
        row("followed by a call of a result", ended["followed"], summary["followed_by_a_result"]),
        *(
            row(f"  at rank {rank}", counts["followed_by_rank"][rank], share)
            for rank, share in summary["followed_by_rank"].items()
        ),
        row(
            "followed by a call of another tool", ended["not_in_results"], summary["followed_by_another_tool"]
        ),
        row("searched again before any call", ended["retried"], summary["retried"]),
        row("no call within the window", ended["unfollowed"], summary["unfollowed"]),
        row("abstained (no tool matches well)", counts["abstained"], summary["abstention_rate"]),
        row("answered with no tool", counts["empty"]),
        f"tool calls: {counts['calls']}",
        row("names the catalog lacks: typos", counts["unknown_tool"]["typo"]),
        row("names the catalog lacks: missing", counts["unknown_tool"]["missing"]),
    ]
    if "learning" in counts:  # replicas started with --learning
        learning = counts["learning"]
        lines.append("learning from use:")
        lines.append(row("calls after a search that did not rank the tool first", learning["lessons"]))
        lines.append(row("contributions taught (a caller once per tool)", learning["contributions"]))
    for title, key in (
        ("tools most often called without search", "most_called_without_search"),
        ("tools most often called right after a search that did not show them", "most_called_not_in_results"),
    ):
        lines.append(f"{title}:")
        lines += [row(clean_text(entry["name"]), entry["calls"]) for entry in summary[key]] or ["  none"]
    return "\n".join(lines)


_DESCRIPTION = (
    "Add up the /stats of running proxies (started with --stats) and print the share of "
    "searches followed by a call of a result, by rank, abstentions, and the tools most often called "
    "without search."
)


def add_stats_command(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register `stats`; the parsed arguments' `handler(args) -> int` carries it out (exit status)."""
    parser = command_parser(subparsers, "stats", _DESCRIPTION)
    parser.add_argument(
        "urls", nargs="+", metavar="URL", help="a proxy's base URL, e.g. http://127.0.0.1:8090"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=_run_stats_command)
    return parser


def _run_stats_command(args: argparse.Namespace) -> int:
    try:
        summary = fetch_report(args.urls)
    except (httpx.HTTPError, ValueError, KeyError) as error:
        print(f"toolsearch stats: error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(summary, ensure_ascii=False, indent=2) if args.json else format_report(summary))
    return 0
