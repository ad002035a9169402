"""Every language on its merits: requests for tools described in another language than most of
their catalog's, beside requests for the catalog's English tools.

`python -m bench.mixed_language OUT.json [--model-dir DIR] [--vectors DIR]` searches the requests of
bench/data/mixed-language/ (its README says how they were made) over the recorded catalog (5,190
English-described tools) with that set's 12 servers added (101 tools described in Chinese,
Japanese, German, Spanish, French or Lithuanian), by BM25 alone and by the search profile (its
models, learned ranker and dictionaries, as `toolsearch serve` ranks). It prints recall@1/5/10 and
MRR@10 of the two parts side by side, overall and by request language: *foreign-described*, the
requests whose gold is on one of the added servers, and *English-described*, the others (gold on
recorded tools). Both parts ask in the same seven languages; a search that judges each tool on its
merits serves them alike. The JSON holds the same figures and each request's rank. Tool vectors
are kept in `--vectors` (a disk cache), so a second run embeds only what changed.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from toolsearch.backends.disk_vectors import DiskVectorCache
from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path
from toolsearch.embedding.embedder import usable_cores
from toolsearch.search import SearchIndex
from toolsearch.search.build import profile_index
from toolsearch.search.lexical import LexicalIndex
from toolsearch.search.offline.evaluation import CUTOFFS, Outcome, load_queries, run_queries, summarize
from toolsearch.search.profile import load_profile
from toolsearch.tool import Tool, ToolInterner

DATA = Path(__file__).resolve().parent / "data" / "mixed-language"
PARTS = ("foreign-described", "English-described")
_CACHE_BYTES = 2_000_000_000


def mixed_catalog() -> tuple[list[Tool], frozenset[str]]:
    """The recorded catalog with the mixed-language servers added, and the added tools' names
    (`<server>_<tool>`, as the recorded catalog qualifies them)."""
    added = [
        {**tool, "name": f"{server['server']}_{tool['name']}"}
        for server in json.loads((DATA / "catalog.json").read_text(encoding="utf-8"))["servers"]
        for tool in server["tools"]
    ]
    interner = ToolInterner()
    tools = [
        interner.intern(definition) for definition in [*load_catalog_file(recorded_catalog_path()), *added]
    ]
    return tools, frozenset(str(tool["name"]) for tool in added)


def _parts(outcomes: Sequence[Outcome], added: frozenset[str]) -> dict[str, list[Outcome]]:
    """The outcomes of requests served by an added (foreign-described) tool, and of the others."""
    foreign = [outcome for outcome in outcomes if outcome.query.gold & added]
    return {PARTS[0]: foreign, PARTS[1]: [outcome for outcome in outcomes if not outcome.query.gold & added]}


def figures(outcomes: Sequence[Outcome], added: frozenset[str]) -> dict[str, Any]:
    """Per part: `summarize`'s ranking figures, overall and by request language, and each rank."""
    result: dict[str, Any] = {}
    for part, chosen in _parts(outcomes, added).items():
        report = summarize(chosen)
        result[part] = {
            "overall": report["overall"],
            "by_lang": report["by_lang"],
            "by_kind": report["by_kind"],
            "ranks": {outcome.query.id: outcome.rank for outcome in chosen},
        }
    return result


def _table(label: str, result: dict[str, Any]) -> str:
    """Recall@k of both parts side by side, overall and per request language."""
    languages = sorted({lang for part in PARTS for lang in result[part]["by_lang"]})
    width = 8 * len(CUTOFFS)
    lines = [
        label,
        f"{'':<6}" + "".join(f"{part:>{width}}" for part in PARTS) + "   requests",
        f"{'':<6}" + "".join(f"{f'r@{k}':>8}" for _ in PARTS for k in CUTOFFS),
    ]
    for group in ("all", *languages):
        rows = [
            result[part]["overall"] if group == "all" else result[part]["by_lang"].get(group, {})
            for part in PARTS
        ]
        cells = "".join(
            f"{row[f'recall@{k}']:>8.3f}" if row else f"{'-':>8}" for row in rows for k in CUTOFFS
        )
        counts = " / ".join(str(row.get("queries", 0)) for row in rows)
        lines.append(f"{group:<6}{cells}   {counts}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.mixed_language", description=__doc__.splitlines()[0]
    )
    parser.add_argument("out", type=Path, help="JSON file to write")
    parser.add_argument("--model-dir", type=Path, default=Path("models/default"), help="search profile")
    parser.add_argument("--vectors", type=Path, default=Path("bench/results/vectors"), help="vector cache")
    args = parser.parse_args(argv)
    tools, added = mixed_catalog()
    names = [tool.name for tool in tools]
    queries = load_queries(DATA / "requests.jsonl")
    profile = load_profile([args.model_dir], threads=2)
    cache = DiskVectorCache(args.vectors, max_bytes=_CACHE_BYTES)
    results: dict[str, Any] = {"tools": len(tools), "added tools": len(added), "requests": len(queries)}
    with ThreadPoolExecutor(usable_cores(), thread_name_prefix="toolsearch-query-runs") as runs:
        builders: list[tuple[str, Callable[[], SearchIndex]]] = [
            ("bm25", lambda: LexicalIndex.build(tools)),
            ("hybrid", lambda: profile_index(tools, profile, cache=cache, query_runs=runs)),
        ]
        for label, build in builders:
            index = build()
            results[label] = figures(run_queries(index.search, names, queries), added)
            print(_table(f"{label}: {len(tools):,} tools ({len(added)} foreign-described)", results[label]))
    args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
