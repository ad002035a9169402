"""Search speed by catalog size: query latency of bm25, dense and hybrid, and index build time.

    python -m bench.search [--model-dir DIR[,COMPANION...] ...] [--sizes 500,1500,5000] [--queries N]
                           [--threads N]

Each --model-dir is one profile, as `serve --model-dir` takes it: a model, then its companions, or
a profile directory (then its learned ranking is measured too, as `learned`); `@embedding-workers=N`
after it embeds catalogs with N parallel model runs (default: the usable cores, as serve). The
profile's ranking is measured once more with each request's model runs one after another instead
of at once (`model runs in turn`).
For each profile (and once for bm25 alone) and each size, the first `size` tools of the recorded
catalog are indexed twice: cold (every tool and catalog word embedded, as for a catalog no caller
had before) and warm (the vectors cached, as for a new catalog of known tools: only the arrays
are assembled). Then every dev query is searched once untimed, to fill the query-vector cache
as agents' repeated queries do, and once per mode timed with a cold query cache (first time this
query is seen) and once with it warm. Prints a table; writes bench/results/search-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.processes import split_serve_flags
from bench.report import RESULTS_DIR, machine
from bench.stats import dev_queries, latency
from toolsearch.catalog_file import load_catalog_tools, recorded_catalog_path
from toolsearch.embedding.embedder import usable_cores
from toolsearch.search import SearchIndex
from toolsearch.search.hybrid import Companion, DenseIndex, HybridIndex, QueryVectors
from toolsearch.search.lexical import LexicalIndex
from toolsearch.search.profile import Profile, load_profile
from toolsearch.search.semantic import SemanticIndex
from toolsearch.search.vectors import MemoryVectorCache
from toolsearch.tool import Tool

SIZES = (500, 1500, 5000)
SEQUENTIAL = "model runs in turn"
"""The profile's ranking (learned where it has a ranker) with a request's model runs one after
another, as before they ran at once (`embed_at_once`)."""


def _timed(action: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = action()
    return result, (time.perf_counter() - started) * 1000


def search_latencies(search: Callable[[str, int], Any], queries: Sequence[str]) -> list[float]:
    """Milliseconds of `search(query, 10)` for each query, one after another."""
    return [_timed(lambda query=query: search(query, 10))[1] for query in queries]


def _bm25_row(tools: Sequence[Tool], queries: Sequence[str]) -> dict[str, Any]:
    # Tool documents stay cached while an index holds them: the second build finds them all.
    cold_index, cold_ms = _timed(lambda: LexicalIndex.build(tools))
    index, warm_ms = _timed(lambda: LexicalIndex.build(tools))
    del cold_index
    return {
        "index_ms": {"cold": round(cold_ms, 1), "cached": round(warm_ms, 1)},
        "search_ms": {"bm25": latency(search_latencies(index.search, queries))},
    }


def _model_row(tools: Sequence[Tool], queries: Sequence[str], profile: Profile) -> dict[str, Any]:
    cache = MemoryVectorCache()
    embedder, *companions = profile.models
    ranker = profile.ranker

    def build() -> tuple[LexicalIndex, SemanticIndex, list[SemanticIndex]]:
        return (
            LexicalIndex.build(tools),
            SemanticIndex.build(tools, embedder, cache),
            [SemanticIndex.build(tools, companion, cache, words=False) for companion in companions],
        )

    cold_indexes, cold_ms = _timed(build)
    (lexical, semantic, companion_indexes), warm_ms = _timed(build)
    del cold_indexes
    search_ms: dict[str, Any] = {}
    modes = ("dense", "hybrid", *(("learned",) if ranker is not None else ()), SEQUENTIAL)
    # A request's further model runs go to these threads, as to a proxy's worker's `query_runs`.
    with ThreadPoolExecutor(usable_cores(), thread_name_prefix="toolsearch-query-runs") as query_runs:
        for mode in modes:
            vectors = QueryVectors(embedder)
            joined = [
                Companion(index, QueryVectors(companion))
                for index, companion in zip(companion_indexes, companions, strict=True)
            ]
            hybrid = HybridIndex(
                lexical,
                semantic,
                vectors,
                companions=joined if mode != "dense" else (),
                ranker=ranker if mode != "hybrid" else None,
                dictionaries=profile.dictionaries if mode != "hybrid" else None,
                query_runs=None if mode == SEQUENTIAL else query_runs,
            )
            index: SearchIndex = DenseIndex(hybrid) if mode == "dense" else hybrid
            first_seen = search_latencies(index.search, queries)
            search_ms[mode] = latency(first_seen)
            search_ms[f"{mode} (query cached)"] = latency(search_latencies(index.search, queries))
    return {
        "index_ms": {"cold": round(cold_ms, 1), "cached": round(warm_ms, 1)},
        "search_ms": search_ms,
    }


def _print(results: dict[str, Any]) -> None:
    print(f"\n{'model':<60}{'tools':>6}  {'mode':<24}{'p50 ms':>9}{'p99 ms':>9}")
    for model, by_size in results["models"].items():
        for size, row in by_size.items():
            for mode, figures in row["search_ms"].items():
                print(f"{model:<60}{size:>6}  {mode:<24}{figures['p50']:>9.2f}{figures['p99']:>9.2f}")
    print(f"\n{'model':<60}{'tools':>6}{'index cold s':>14}{'index cached s':>16}")
    for model, by_size in results["models"].items():
        for size, row in by_size.items():
            index = row["index_ms"]
            print(f"{model:<60}{size:>6}{index['cold'] / 1000:>14.2f}{index['cached'] / 1000:>16.3f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.search",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--model-dir",
        action="append",
        default=[],
        help="a profile: model directories, comma-separated, or a profile directory; "
        "@embedding-workers=N after it embeds with N parallel runs (default: as serve, the usable cores) "
        "(repeatable: side by side)",
    )
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="catalog sizes, comma-separated")
    parser.add_argument("--queries", type=int, default=0, help="use only the first N dev queries")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads (default: 1)")
    parser.add_argument("--out", type=Path, default=None, help="JSON output (default: bench/results/)")
    args = parser.parse_args(argv)

    sizes = [int(size) for size in args.sizes.split(",")]
    all_tools = load_catalog_tools(recorded_catalog_path())
    queries = [row["query"] for row in dev_queries()]
    queries = queries[: args.queries] if args.queries else queries
    results: dict[str, Any] = {"machine": machine(), "queries": len(queries), "models": {}}
    results["models"]["bm25"] = {size: _bm25_row(all_tools[:size], queries) for size in sizes}
    for value in args.model_dir:
        directories, flags = split_serve_flags(value)
        workers = int(
            dict(flag.removeprefix("--").split("=", 1) for flag in flags).get("embedding-workers", 0)
        )
        profile = load_profile(
            [part for part in directories.split(",") if part],
            threads=args.threads,
            workers=workers or usable_cores(),
        )
        name = " + ".join(embedder.name for embedder in profile.models) + "".join(
            f" {flag}" for flag in flags
        )
        rows = {}
        for size in sizes:
            rows[size] = _model_row(all_tools[:size], queries, profile)
            print(f"{name}: {size} tools done", flush=True)
        results["models"][name] = rows
    _print(results)
    out = args.out or RESULTS_DIR / f"search-{dt.date.today().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
