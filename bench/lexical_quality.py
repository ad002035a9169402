"""Lexical search quality and speed on the dev queries over the full recorded catalog.

    PYTHONPATH=service python bench/lexical_quality.py [--catalog FILE] [--queries FILE] [--baseline]

A query is a hit at k when any of its gold tools is in the top k; queries without gold (requests
no tool serves) are left out of recall and MRR. `--baseline` adds plain bm25s (English stemming,
English stopwords) over name, description and parameters: the reference figure of the issue.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path
from toolsearch.search.lexical import LexicalIndex
from toolsearch.tool import ToolInterner

DEV_QUERIES = Path(__file__).parent / "data" / "queries-dev.jsonl"
CUTOFFS = (1, 5, 10)

Ranker = Callable[[str], list[int]]
"""Query -> positions of the best 10 tools, best first."""


def _rank_of_first_gold(ranked: list[str], gold: set[str]) -> int | None:
    return next((rank for rank, name in enumerate(ranked) if name in gold), None)


def evaluate(
    rank: Ranker, names: Sequence[str], queries: list[dict], repeat: int = 5
) -> tuple[dict[str, dict], list[float]]:
    """Recall@k and MRR@10 overall and by language, and the latency of each query in each of
    `repeat` timed passes (after one untimed), in milliseconds."""
    firsts: dict[str, list[int | None]] = {}
    latencies: list[float] = []
    for query in queries:
        positions = rank(query["query"])
        for _ in range(repeat):
            started = time.perf_counter()
            rank(query["query"])
            latencies.append((time.perf_counter() - started) * 1000)
        if not query["gold"]:
            continue
        first = _rank_of_first_gold([names[p] for p in positions], set(query["gold"]))
        for group in ("all", query["lang"]):
            firsts.setdefault(group, []).append(first)
    table = {}
    for group, ranks in firsts.items():
        row = {f"recall@{k}": np.mean([r is not None and r < k for r in ranks]) for k in CUTOFFS}
        row["mrr@10"] = np.mean([1 / (r + 1) if r is not None else 0.0 for r in ranks])
        row["queries"] = len(ranks)
        table[group] = row
    return table, latencies


def _print_table(title: str, table: dict[str, dict], latencies: list[float]) -> None:
    print(f"\n{title}")
    columns = [*(f"recall@{k}" for k in CUTOFFS), "mrr@10"]
    print(f"{'lang':<6}{'queries':>8}" + "".join(f"{c:>11}" for c in columns))
    for group in ["all", *sorted(g for g in table if g != "all")]:
        row = table[group]
        print(f"{group:<6}{row['queries']:>8}" + "".join(f"{row[c]:>11.3f}" for c in columns))
    p50, p99 = np.percentile(latencies, [50, 99])
    print(f"latency per query: p50 {p50:.2f} ms, p99 {p99:.2f} ms")


def _bm25s_baseline(definitions: list[dict]) -> Ranker:
    import bm25s
    import Stemmer

    def document(tool: dict) -> str:
        schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        parameters = " ".join(
            f"{name} {prop.get('description', '') if isinstance(prop, dict) else ''}"
            for name, prop in properties.items()
        )
        return f"{tool['name'].replace('_', ' ')} {tool.get('description') or ''} {parameters}"

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    corpus = [document(tool) for tool in definitions]
    retriever.index(
        bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )

    def rank(query: str) -> list[int]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        results, _ = retriever.retrieve(tokens, k=10, show_progress=False)
        return [int(p) for p in results[0]]

    return rank


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--catalog", type=Path, default=recorded_catalog_path())
    parser.add_argument("--queries", type=Path, default=DEV_QUERIES)
    parser.add_argument("--baseline", action="store_true", help="also measure plain bm25s")
    args = parser.parse_args()

    definitions = load_catalog_file(args.catalog)
    queries = [json.loads(line) for line in args.queries.read_text().splitlines() if line.strip()]
    interner = ToolInterner()
    tools = [interner.intern(definition) for definition in definitions]
    names = [tool.name for tool in tools]

    started = time.perf_counter()
    index = LexicalIndex.build(tools)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    LexicalIndex.build(tools)
    warm = time.perf_counter() - started
    print(f"{len(tools)} tools, {len(queries)} queries")
    print(
        f"index build: {cold * 1000:.0f} ms cold (analysing every tool),"
        f" {warm * 1000:.0f} ms with tools analysed"
    )

    table, latencies = evaluate(lambda q: [hit.position for hit in index.search(q, 10)], names, queries)
    _print_table("toolsearch lexical (BM25F)", table, latencies)
    if args.baseline:
        table, latencies = evaluate(_bm25s_baseline(definitions), names, queries)
        _print_table(
            "baseline: plain bm25s, English stemming, name + description + parameters", table, latencies
        )


if __name__ == "__main__":
    main()
