"""In-process search, one source tree against another, taking turns: the code before a change
beside the code after it.

    python -m bench.trees --model-dir PROFILE --service-dir DIR --label NAME ... [--tools 1500]
                          [--rounds 13]

Each `--service-dir` (repeatable, with a `--label` each) runs in a process of its own, its tree
first on the path, set up as `serve` sets itself up (`processes.set_up_as_serve`): it indexes the
first `--tools` recorded tools with the profile (its learned ranking where it has one; the tool
vectors from one disk cache that the trees share, so only the first tree embeds them) and then
searches when told to. The dev queries are cut into `--rounds`
slices; slice by slice, each tree in turn searches the slice's queries for the first time (no
query vector cached) and then again (cached), so whatever else the machine does falls on every
tree alike. Prints p50 / p99 per tree; writes bench/results/trees-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.processes import python_path, set_up_as_serve
from bench.report import RESULTS_DIR, machine
from bench.stats import dev_queries, latency

_CACHE_BYTES = 4 * 2**30


def _searcher(model_dir: str, tools: int, cache_dir: str) -> None:
    """The process of one tree: index, say so, then answer each line of queries with their
    first-time and cached latencies."""
    from toolsearch.backends.disk_vectors import DiskVectorCache
    from toolsearch.catalog_file import load_catalog_tools, recorded_catalog_path
    from toolsearch.search.build import profile_index
    from toolsearch.search.profile import load_profile

    set_up_as_serve()
    profile = load_profile(model_dir.split(","))
    catalog = load_catalog_tools(recorded_catalog_path())[:tools]
    index = profile_index(catalog, profile, cache=DiskVectorCache(cache_dir, _CACHE_BYTES))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        queries = json.loads(line)
        times: dict[str, list[float]] = {"first": [], "cached": []}
        for kind in times:
            for query in queries:
                started = time.perf_counter()
                index.search(query, 10)
                times[kind].append((time.perf_counter() - started) * 1000)
        print(json.dumps(times), flush=True)


def _start(service_dir: Path, model_dir: str, tools: int, cache_dir: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "bench.trees", "--searcher", model_dir, str(tools), cache_dir]
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **python_path(service_dir)},
    )
    assert process.stdout is not None
    if not process.stdout.readline():  # the first tree embeds the catalog: minutes
        raise RuntimeError(f"the searcher of {service_dir} ended before it was ready")
    return process


def _ask(process: subprocess.Popen[str], queries: Sequence[str]) -> dict[str, list[float]]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(list(queries)) + "\n")
    process.stdin.flush()
    answer: dict[str, list[float]] = json.loads(process.stdout.readline())
    return answer


def measure(
    trees: Sequence[tuple[str, Path]], model_dir: str, tools: int, rounds: int
) -> dict[str, dict[str, Any]]:
    queries = [query["query"] for query in dev_queries()]
    slices = [queries[start::rounds] for start in range(rounds)]
    times = {label: {"first": [], "cached": []} for label, _ in trees}
    with tempfile.TemporaryDirectory(prefix="bench-trees-") as cache_dir:
        searchers = {label: _start(tree, model_dir, tools, cache_dir) for label, tree in trees}
        try:
            for chosen in slices:
                for label, searcher in searchers.items():
                    for kind, samples in _ask(searcher, chosen).items():
                        times[label][kind].extend(samples)
        finally:
            for searcher in searchers.values():
                searcher.kill()
                searcher.wait()
    return {label: {kind: latency(each) for kind, each in found.items()} for label, found in times.items()}


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["--searcher"]:
        _searcher(arguments[1], int(arguments[2]), arguments[3])
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m bench.trees",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model-dir", required=True, help="the profile (as serve's --model-dir)")
    parser.add_argument("--service-dir", type=Path, action="append", default=[], help="a source tree")
    parser.add_argument("--label", action="append", default=[], help="its name in the table")
    parser.add_argument("--tools", type=int, default=1500, help="recorded tools to index (default: 1500)")
    parser.add_argument("--rounds", type=int, default=13, help="slices of the dev queries (default: 13)")
    parser.add_argument("--out", type=Path, default=None, help="JSON output (default: bench/results/)")
    args = parser.parse_args(arguments)
    if not args.service_dir or len(args.label) != len(args.service_dir):
        parser.error("give each --service-dir a --label")
    trees = [(label, tree.resolve()) for label, tree in zip(args.label, args.service_dir, strict=True)]
    results = {
        "machine": machine(),
        "model_dir": args.model_dir,
        "tools": args.tools,
        "trees": {label: str(tree) for label, tree in trees},
        "search_ms": measure(trees, args.model_dir, args.tools, args.rounds),
    }
    print(f"\n{'tree':<24}{'first p50':>11}{'first p99':>11}{'cached p50':>12}{'cached p99':>12}")
    for label, figures in results["search_ms"].items():
        first, cached = figures["first"], figures["cached"]
        row = f"{first['p50']:>11.2f}{first['p99']:>11.2f}{cached['p50']:>12.2f}{cached['p99']:>12.2f}"
        print(f"{label:<24}{row}")
    out = args.out or RESULTS_DIR / f"trees-{dt.date.today().isoformat()}.json"
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
