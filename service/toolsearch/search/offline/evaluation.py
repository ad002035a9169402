"""Search quality, measured: a query set ranked over a catalog, scored (what `toolsearch eval` prints).

Queries are JSON lines `{"id", "query", "lang", "gold": [qualified tool names], "kind"}`; `gold`
lists every tool that would serve the request and is empty for a request no tool serves. A
servable query is a hit at k when any gold tool is in the top k; MRR@10 counts the first gold
tool's reciprocal rank (0 past 10). Abstention is judged apart: search abstains when it finds
nothing or marks its best hit weak, which is right on an unservable query and wrong on a
servable one. Recall and MRR cover servable queries only, abstained or not (the weak hits are
still shown).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolsearch.search import SearchHit

CUTOFFS = (1, 5, 10)
DEPTH = max(CUTOFFS)
Search = Callable[[str, int], list[SearchHit]]


class QueryFileError(ValueError):
    """The query file is not what `toolsearch eval` reads; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str
    lang: str
    gold: frozenset[str]
    kind: str = ""
    family: str = ""
    """Of an unservable request: why no tool serves it (`absent`, `near-miss`, `physical`,
    `word-overlap`)."""
    pair: str = ""
    """Requests with the same `pair` say the same in different languages (translations)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    query: Query
    rank: int | None
    """0-based rank of the first gold tool within the top `DEPTH`; None when none is there."""
    abstained: bool
    latency_ms: float
    top: tuple[str, ...] = ()
    """Names of the top `DEPTH` tools, best first."""


def load_queries(path: str | Path) -> list[Query]:
    """The queries of a JSON-lines file (blank lines skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise QueryFileError(f"{path}: cannot read it ({error.strerror or error})") from None
    queries = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            gold = row.get("gold", [])
            if not isinstance(row["query"], str) or not isinstance(gold, list):
                raise TypeError
            queries.append(
                Query(
                    id=str(row.get("id", number)),
                    text=row["query"],
                    lang=str(row.get("lang", "unknown")),
                    gold=frozenset(map(str, gold)),
                    kind=str(row.get("kind", "")),
                    family=str(row.get("family", "")),
                    pair=str(row.get("pair", "")),
                )
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            raise QueryFileError(
                f'{path}:{number}: expected a JSON object {{"query": text, "lang": code, "gold": [names]}}'
            ) from None
    return queries


def run_queries(search: Search, names: Sequence[str], queries: Iterable[Query]) -> list[Outcome]:
    """Search each query once (timed) and note where its first gold tool came."""
    outcomes = []
    for query in queries:
        started = time.perf_counter()
        hits = search(query.text, DEPTH)
        latency_ms = (time.perf_counter() - started) * 1000
        ranked = tuple(names[hit.position] for hit in hits)
        rank = next((rank for rank, name in enumerate(ranked) if name in query.gold), None)
        abstained = not hits or hits[0].weak
        outcomes.append(Outcome(query, rank, abstained, latency_ms, ranked))
    return outcomes


def _ranking(outcomes: Sequence[Outcome]) -> dict[str, float | int]:
    ranks = [outcome.rank for outcome in outcomes]
    row: dict[str, float | int] = {"queries": len(ranks)}
    for k in CUTOFFS:
        row[f"recall@{k}"] = _share(rank is not None and rank < k for rank in ranks)
    row["mrr@10"] = float(np.mean([0.0 if r is None else 1.0 / (r + 1) for r in ranks])) if ranks else 0.0
    return row


def _share(flags: Iterable[bool]) -> float:
    values = list(flags)
    return sum(values) / len(values) if values else 0.0


def _grouped(outcomes: Sequence[Outcome], key: Callable[[Query], str]) -> dict[str, dict[str, float | int]]:
    groups = sorted({key(outcome.query) for outcome in outcomes})
    return {group: _ranking([o for o in outcomes if key(o.query) == group]) for group in groups}


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """The report: ranking quality overall, per language and per kind, abstention, latency (JSON-ready)."""
    servable = [outcome for outcome in outcomes if outcome.query.gold]
    unservable = [outcome for outcome in outcomes if not outcome.query.gold]
    latencies = [outcome.latency_ms for outcome in outcomes]
    p50, p99 = np.percentile(latencies, [50, 99]) if latencies else (0.0, 0.0)
    return {
        "overall": _ranking(servable),
        "by_lang": _grouped(servable, lambda query: query.lang),
        "by_kind": _grouped([o for o in servable if o.query.kind], lambda query: query.kind),
        "abstention": {
            **_abstention(servable, unservable),
            "by_lang": {
                lang: _abstention(
                    [o for o in servable if o.query.lang == lang],
                    [o for o in unservable if o.query.lang == lang],
                )
                for lang in sorted({o.query.lang for o in outcomes})
            },
            "by_family": {
                family: _abstention([], [o for o in unservable if o.query.family == family])
                for family in sorted({o.query.family for o in unservable if o.query.family})
            },
            **_agreement(outcomes),
        },
        "latency_ms": {"p50": float(p50), "p99": float(p99)},
    }


def _abstention(servable: Sequence[Outcome], unservable: Sequence[Outcome]) -> dict[str, float | int]:
    return {
        "unservable_queries": len(unservable),
        "abstained_on_unservable": _share(o.abstained for o in unservable),
        "servable_queries": len(servable),
        "wrongly_abstained_on_servable": _share(o.abstained for o in servable),
    }


def _agreement(outcomes: Sequence[Outcome]) -> dict[str, float | int]:
    """Of the requests given with their translations (`Query.pair`), how many groups got one verdict."""
    verdicts: dict[str, set[bool]] = {}
    for outcome in outcomes:
        if outcome.query.pair:
            verdicts.setdefault(outcome.query.pair, set()).add(outcome.abstained)
    if not verdicts:
        return {}
    return {
        "translated_requests": len(verdicts),
        "same_verdict": _share(len(each) == 1 for each in verdicts.values()),
    }


def outcome_rows(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Each query's outcome, for error analysis: `id`, the 0-based `rank` of its first gold tool (None
    when not in the top `DEPTH`), the `top` names and whether search `abstained`."""
    return [
        {"id": o.query.id, "rank": o.rank, "top": list(o.top), "abstained": o.abstained} for o in outcomes
    ]


def format_abstention(abstention: dict[str, Any]) -> list[str]:
    """A report's abstention: overall, then per language and per family of unservable requests."""
    groups = [*abstention.get("by_lang", {}).items(), *abstention.get("by_family", {}).items()]
    agreement = (
        [
            f"  a request and its translation: the same verdict for {abstention['same_verdict']:.0%} of "
            f"{abstention['translated_requests']}"
        ]
        if "same_verdict" in abstention
        else []
    )
    return [
        f"abstained on {abstention['abstained_on_unservable']:.0%} of {abstention['unservable_queries']} "
        f"unservable queries, wrongly on {abstention['wrongly_abstained_on_servable']:.1%} of "
        f"{abstention['servable_queries']} servable ones",
        *(
            f"  {label:<12} unservable {row['abstained_on_unservable']:>4.0%} of "
            f"{row['unservable_queries']:>3}"
            + (
                f", wrongly {row['wrongly_abstained_on_servable']:>5.1%} of {row['servable_queries']}"
                if row["servable_queries"]
                else ""
            )
            for label, row in groups
        ),
        *agreement,
    ]


def format_report(report: dict[str, Any], title: str = "") -> str:
    columns = ["queries", *(f"recall@{k}" for k in CUTOFFS), "mrr@10"]
    lines = [title] if title else []
    lines.append(f"{'':<12}" + "".join(f"{column:>10}" for column in columns))
    rows = [
        ("overall", report["overall"]),
        *report["by_lang"].items(),
        *report.get("by_kind", {}).items(),
    ]
    for label, row in rows:
        cells = [f"{row['queries']:>10}", *(f"{row[column]:>10.3f}" for column in columns[1:])]
        lines.append(f"{label:<12}" + "".join(cells))
    lines.extend(format_abstention(report["abstention"]))
    latency = report["latency_ms"]
    lines.append(f"search latency: p50 {latency['p50']:.1f} ms, p99 {latency['p99']:.1f} ms")
    return "\n".join(lines)
