"""How search cost grows with the catalog: 1,500, 5,000, 20,000 and 50,000 tools.

    python -m bench.scale [--sizes 1500,5000,20000,50000] [--model-dir DIR] [--vectors DIR] [--queries N]

A catalog past the recorded one's 5,190 tools is made of copies of it whose servers are renamed
(`github` -> `github2`, `github3`, ...): the first N tools of the recorded catalog, then of its
first copy, and so on. Each size is measured in a process of its own (its memory is its own):

- BM25F build: `LexicalIndex.build` of the catalog, its texts analysed from scratch;
- hybrid build: the whole hybrid index (`profile_index`, the shipped profile: both models, the
  dense bound's neighbours computed for the whole catalog, the ranker), the texts already analysed
  by the BM25F build, every tool vector already cached: a copy takes the vectors its original has in
  `--vectors` (a disk cache of the recorded catalog's). Only its server's name differs from the
  original's text; embedding 45,000 new passages per model would take hours on two cores, and what
  embedding costs per tool is in docs/benchmarks.md (cold start). Vectors the cache lacks (words of
  the larger catalog) are embedded, and counted;
- search: the first `--queries` dev requests, each once (its models run: a new request), through
  the BM25F index and the hybrid one; p50 and p99 in ms;
- memory: the process's RSS (/proc/self/status) with the profile, the tools and their vectors
  loaded (in memory, as a proxy's vector store holds them), once both indexes are built, and after
  the searches; and its peak (VmHWM).

Writes bench/results/scale-<date>.json and .md and prints the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench.report import RESULTS_DIR, machine
from bench.search import search_latencies
from bench.stats import dev_queries, latency
from toolsearch.backends.disk_vectors import DiskVectorCache
from toolsearch.embedding.embedder import usable_cores
from toolsearch.search.build import profile_index
from toolsearch.search.lexical import LexicalIndex
from toolsearch.search.profile import load_profile
from toolsearch.search.semantic import cached_ids
from toolsearch.search.vectors import MemoryVectorCache
from toolsearch.testing import recorded_tools
from toolsearch.tool import Tool, ToolInterner

SIZES = (1500, 5000, 20_000, 50_000)
QUERIES = 100
_CACHE_BYTES = 2_000_000_000
_SIZE_TIMEOUT = 3600.0
_REPO = Path(__file__).resolve().parents[1]


def scaled_definitions(size: int) -> list[tuple[dict[str, Any], int]]:
    """`size` tool definitions: the recorded catalog, then copies of it whose servers are renamed
    (copy k: `<server>{k + 1}`); each with the position of its original in the recorded catalog."""
    recorded = recorded_tools()
    found: list[tuple[dict[str, Any], int]] = []
    for copy in range(math.ceil(size / len(recorded))):
        for position, definition in enumerate(recorded[: size - len(found)]):
            server, _, bare = definition["name"].partition("_")
            renamed = f"{server}{copy + 1}_{bare}" if copy else definition["name"]
            found.append(({**definition, "name": renamed}, position))
    return found


class _CountingCache(MemoryVectorCache):
    """A `MemoryVectorCache` that counts the vectors a build puts in it: those it embedded."""

    def __init__(self) -> None:
        super().__init__(max_bytes=1 << 40)
        self.embedded = 0

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        self.embedded += len(vectors)
        super().put_many(model, vectors)

    def fill(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        super().put_many(model, vectors)


def _copied_vectors(
    tools: Sequence[Tool],
    originals: Sequence[Tool],
    origin: Sequence[int],
    models: Sequence[Any],
    vectors: Path,
) -> tuple[_CountingCache, int]:
    """A cache holding, for every tool, its original's vectors from the disk cache `vectors`, and
    the vectors of the catalog's words (those the disk cache lacks embedded here, before any build
    is timed); and how many words were embedded."""
    disk = DiskVectorCache(vectors, _CACHE_BYTES)
    cache = _CountingCache()
    digests = list(dict.fromkeys(tool.digest for tool in originals))
    embedded = 0
    for number, model in enumerate(models):
        for key, ids in cached_ids(tools, model, words=number == 0).items():
            held = disk.get_many(key, digests)
            if held:  # a key of tool vectors
                copied = {
                    tool.digest: held[originals[at].digest] for tool, at in zip(tools, origin, strict=True)
                }
                cache.fill(key, copied)
                continue
            found = disk.get_many(key, ids)  # words (and whole catalogs' neighbourhoods: none here)
            missing = [word for word in ids if word not in found] if key.endswith(".words") else []
            for start in range(0, len(missing), 256):
                batch = missing[start : start + 256]
                found.update(zip(batch, model.embed_passages(batch), strict=True))
            embedded += len(missing)
            cache.fill(key, found)
    return cache, embedded


def _rss_mb() -> dict[str, float]:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return {key: round(int(fields[key].split()[0]) / 1024, 1) for key in ("VmRSS", "VmHWM")}


def measure(size: int, model_dir: Path, vectors: Path, queries: int) -> dict[str, Any]:
    """One size's figures, in this process (`--one`)."""
    profile = load_profile([model_dir], threads=usable_cores())
    interner = ToolInterner()
    originals = [interner.intern(definition) for definition in recorded_tools()]
    scaled = scaled_definitions(size)
    tools = [interner.intern(definition) for definition, _ in scaled]
    cache, words_embedded = _copied_vectors(
        tools, originals, [at for _, at in scaled], profile.models, vectors
    )
    texts = [query["query"] for query in dev_queries()[:queries]]
    rss = {"profile, tools and vectors loaded": _rss_mb()["VmRSS"]}
    started = time.perf_counter()
    lexical = LexicalIndex.build(tools)
    bm25_build = (time.perf_counter() - started) * 1000
    with ThreadPoolExecutor(usable_cores(), thread_name_prefix="toolsearch-query-runs") as runs:
        started = time.perf_counter()
        hybrid = profile_index(tools, profile, cache=cache, query_runs=runs)
        hybrid_build = (time.perf_counter() - started) * 1000
        rss["indexes built"] = _rss_mb()["VmRSS"]
        hybrid.search("warm up the models", 10)
        bm25_times = search_latencies(lexical.search, texts)
        hybrid_times = search_latencies(hybrid.search, texts)
    rss |= {"after searches": _rss_mb()["VmRSS"], "peak": _rss_mb()["VmHWM"]}
    return {
        "tools": len(tools),
        "copies": math.ceil(size / len(originals)),
        "build_ms": {"bm25": round(bm25_build, 1), "hybrid": round(hybrid_build, 1)},
        "search_ms": {"bm25": latency(bm25_times), "hybrid": latency(hybrid_times)},
        "rss_mb": rss,
        "words_embedded_before": words_embedded,
        "vectors_embedded_in_build": cache.embedded,
    }


def _growth(sizes: Sequence[int], values: Sequence[float]) -> tuple[float, float]:
    """How `values` grow over `sizes`: the exponent k of size**k between the smallest and largest
    size (1: linear, 2: quadratic), and the change per 10,000 tools between the two largest."""
    exponent = (
        math.log(values[-1] / values[0]) / math.log(sizes[-1] / sizes[0]) if values[0] > 0 else math.nan
    )
    step = (values[-1] - values[-2]) / (sizes[-1] - sizes[-2]) * 10_000
    return exponent, step


def markdown(figures: Mapping[str, Mapping[str, Any]]) -> str:
    sizes = [int(size) for size in figures]
    rows = {
        "search p50, BM25F (ms)": [f["search_ms"]["bm25"]["p50"] for f in figures.values()],
        "search p99, BM25F (ms)": [f["search_ms"]["bm25"]["p99"] for f in figures.values()],
        "search p50, hybrid (ms)": [f["search_ms"]["hybrid"]["p50"] for f in figures.values()],
        "search p99, hybrid (ms)": [f["search_ms"]["hybrid"]["p99"] for f in figures.values()],
        "BM25F build (ms)": [f["build_ms"]["bm25"] for f in figures.values()],
        "hybrid build, vectors cached (ms)": [f["build_ms"]["hybrid"] for f in figures.values()],
        "RSS, indexes built (MB)": [f["rss_mb"]["indexes built"] for f in figures.values()],
        "RSS, after searches (MB)": [f["rss_mb"]["after searches"] for f in figures.values()],
        "RSS, peak (MB)": [f["rss_mb"]["peak"] for f in figures.values()],
        "RSS, profile, tools and vectors loaded (MB)": [
            f["rss_mb"]["profile, tools and vectors loaded"] for f in figures.values()
        ],
        "words embedded before timing": [f["words_embedded_before"] for f in figures.values()],
        "vectors embedded during the build": [f["vectors_embedded_in_build"] for f in figures.values()],
    }
    lines = [
        "| | "
        + " | ".join(f"{size:,} tools" for size in sizes)
        + " | grows as size^k: k | per 10,000 tools (two largest sizes) |",
        "|---|" + "---:|" * (len(sizes) + 2),
    ]
    for name, values in rows.items():
        exponent, step = _growth(sizes, values) if len(sizes) > 1 else (math.nan, math.nan)
        cells = " | ".join(f"{value:,.1f}" for value in values)
        lines.append(f"| {name} | {cells} | {exponent:.2f} | {step:+,.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated catalog sizes")
    parser.add_argument("--model-dir", type=Path, default=_REPO / "models" / "default", help="search profile")
    parser.add_argument("--vectors", type=Path, default=RESULTS_DIR / "vectors", help="vector cache")
    parser.add_argument("--queries", type=int, default=QUERIES, help="dev requests searched per size")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure(args.one, args.model_dir, args.vectors, args.queries)))
        return 0
    figures: dict[str, Any] = {}
    day = dt.date.today().isoformat()
    for size in (int(size) for size in args.sizes.split(",")):
        print(f"bench: scale: {size:,} tools", file=sys.stderr, flush=True)
        command = [sys.executable, "-m", "bench.scale", "--one", str(size)]
        command += ["--model-dir", str(args.model_dir), "--vectors", str(args.vectors)]
        command += ["--queries", str(args.queries)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=_SIZE_TIMEOUT, check=True)
        figures[str(size)] = json.loads(done.stdout.splitlines()[-1])
        # Written after each size: a larger one that does not finish leaves the smaller ones' figures.
        report = {"date": day, "machine": machine(), "model_dir": str(args.model_dir), "figures": figures}
        (RESULTS_DIR / f"scale-{day}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        (RESULTS_DIR / f"scale-{day}.md").write_text(markdown(figures), encoding="utf-8")
    print(markdown(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
