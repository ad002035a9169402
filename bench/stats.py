"""Arithmetic of the benchmarks: latency percentiles and search-quality figures."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

DEV_QUERIES = Path(__file__).resolve().parent / "data" / "queries-dev.jsonl"


def latency(samples_ms: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99 and mean in milliseconds, and the number of samples."""
    values = np.asarray(samples_ms, dtype=float)
    if values.size == 0:
        return {"n": 0}
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return {
        "n": int(values.size),
        "p50": round(float(p50), 3),
        "p90": round(float(p90), 3),
        "p99": round(float(p99), 3),
        "mean": round(float(values.mean()), 3),
    }


def dev_queries(every: int = 1) -> list[dict[str, Any]]:
    """The dev queries (`query`, `lang`, `gold`, `kind`); every `every`-th one for a quick run."""
    lines = DEV_QUERIES.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()][::every]


def first_gold_rank(ranked: Sequence[str], gold: Sequence[str]) -> int | None:
    """0-based rank of the first acceptable tool, or None when none is ranked."""
    wanted = set(gold)
    return next((rank for rank, name in enumerate(ranked) if name in wanted), None)


def quality(queries: Sequence[dict[str, Any]], rankings: Sequence[Sequence[str]]) -> dict[str, dict]:
    """recall@1/5/10 and MRR@10, overall ("all") and per language, over the queries that have gold.

    A query is a hit at k when any of its gold tools is among the first k; requests that no tool
    serves (empty gold) are left out.
    """
    ranks: dict[str, list[int | None]] = {}
    for query, ranked in zip(queries, rankings, strict=True):
        if not query["gold"]:
            continue
        rank = first_gold_rank(ranked[:10], query["gold"])
        for group in ("all", query["lang"]):
            ranks.setdefault(group, []).append(rank)
    table: dict[str, dict] = {}
    for group, found in ranks.items():
        row: dict[str, float | int] = {"queries": len(found)}
        for k in (1, 5, 10):
            row[f"recall@{k}"] = round(float(np.mean([r is not None and r < k for r in found])), 4)
        row["mrr@10"] = round(float(np.mean([1 / (r + 1) if r is not None else 0.0 for r in found])), 4)
        table[group] = row
    return table
