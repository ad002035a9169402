"""Search quality and latency, toolsearch versus the peer, through HTTP.

    python -m bench.quality [--quick] [--model-dir DIR[,DIR...]]...

Quality: the dev queries over the whole recorded catalog, each sent as a `search_tools` call by
the MCP SDK client to the peer (FastMCP's BM25SearchTransform, 10 results), toolsearch in bm25
mode and in hybrid mode once per hybrid profile (each --model-dir; 10 results each): recall@1/5/10
and MRR@10 overall and per language (requests no tool serves are left out), and the latency the
client saw.

Latency versus catalog size: the same servers over the first 100, 500, 1,500 recorded tools and
the whole catalog, warm (the caller's catalog and its index are built before timing), searched
with raw `tools/call` POSTs on one keep-alive connection, one at a time. The peer takes about a
second per search over the whole catalog, so it answers fewer of the queries there.

The hybrid servers share one `--vector-cache-dir` for the run: a tool is embedded once per model
(by the first server whose catalog holds it), not once per server and size. Only index building
is faster for it; the searches timed are warm either way.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.clients import PEER, TOOLSEARCH, Dialect, RawClient, result_text, sdk_client, tools_call_request
from bench.options import Options, profiles_note
from bench.peer import peer_server, peer_version
from bench.processes import Server, running, toolsearch_server, upstream_server, with_vector_cache
from bench.report import Floor, Section, Table
from bench.stats import dev_queries, latency, quality
from toolsearch.testing import recorded_tools

LIMIT = 10
TOKEN = "bench-quality"
WARM_TIMEOUT = 900.0
"""Seconds the first search may take: hybrid mode embeds the whole catalog then."""
RECALL_MARGIN_HYBRID = 0.10
BM25_P50_MS = 3.0
HYBRID_P50_MS = 10.0
FLOOR_SIZE = 1500
QUICK_EVERY = 13
"""A quick run asks every 13th dev query: the peer takes about a second per search."""


@dataclass(frozen=True)
class Target:
    name: str
    server: Server
    dialect: Dialect


def _targets(options: Options, upstream: Server, size: int | None, vectors: Path) -> list[Target]:
    targets = [
        Target("peer (fastmcp bm25)", peer_server(size, max_results=LIMIT), PEER),
        Target("toolsearch bm25", toolsearch_server(upstream, service_dir=options.service_dir), TOOLSEARCH),
    ]
    for profile in options.measured_profiles:
        hybrid = toolsearch_server(
            upstream, service_dir=options.service_dir, model_dir=profile.model_dir, name=profile.target
        )
        targets.append(Target(profile.target, with_vector_cache(hybrid, vectors), TOOLSEARCH))
    return targets


def _search_request(target: Target, query: str) -> tuple[dict, bytes]:
    return tools_call_request(
        target.dialect.search_tool, target.dialect.search_arguments(query, LIMIT), TOKEN
    )


def _warm(target: Target, queries: list[str]) -> None:
    with RawClient(target.server.mcp_url, timeout=WARM_TIMEOUT) as client:
        for query in queries[: 1 if target.dialect is PEER else 3]:
            client.post(*_search_request(target, query))


def _raw_latency(target: Target, queries: list[str]) -> dict[str, float]:
    with RawClient(target.server.mcp_url) as client:
        return latency([client.post(*_search_request(target, query))[0] for query in queries])


async def _sdk_rankings(target: Target, queries: list[str]) -> tuple[list[list[str]], list[float]]:
    rankings, samples = [], []
    async with sdk_client(target.server.mcp_url, token=TOKEN) as client:
        for query in queries:
            arguments = target.dialect.search_arguments(query, LIMIT)
            started = time.perf_counter()
            result = await client.call_tool(target.dialect.search_tool, arguments)
            samples.append((time.perf_counter() - started) * 1000)
            if result.is_error:
                raise RuntimeError(f"{target.name} failed a search: {result_text(result)[:300]}")
            rankings.append(target.dialect.ranked_names(result_text(result)))
    return rankings, samples


def run(options: Options) -> Section:
    full_size = len(recorded_tools())
    sizes = [*options.pick((FLOOR_SIZE,), (100, 500, FLOOR_SIZE)), full_size]
    queries = dev_queries(every=options.pick(QUICK_EVERY, 1))
    texts = [query["query"] for query in dev_queries()]
    peer_share = {size: options.pick(10, 60) if size <= FLOOR_SIZE else options.pick(5, 40) for size in sizes}
    by_size: dict[str, dict[str, Any]] = {}
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-quality-vectors-") as vectors:
        for size in sizes:
            upstream = upstream_server(size)
            targets = _targets(options, upstream, size, Path(vectors))
            print(f"bench: quality: {size:,} tools", file=sys.stderr, flush=True)
            with running(upstream, *(target.server for target in targets)):
                for target in targets:
                    _warm(target, texts)
                    timed = texts[: peer_share[size]] if target.dialect is PEER else texts
                    by_size.setdefault(target.name, {})[str(size)] = _raw_latency(target, timed)
                if size == full_size:
                    for target in targets:
                        rankings, samples = asyncio.run(_sdk_rankings(target, [q["query"] for q in queries]))
                        figures[target.name] = {
                            "quality": quality(queries, rankings),
                            "latency_sdk": latency(samples),
                        }
    return _section(options, sizes, queries, by_size, figures)


def _section(
    options: Options,
    sizes: list[int],
    queries: list[dict[str, Any]],
    by_size: dict[str, dict[str, Any]],
    figures: dict[str, dict[str, Any]],
) -> Section:
    full_size = sizes[-1]
    names = list(figures)
    gaps = options.hybrid_gaps
    quality_rows = [
        [
            name,
            figures[name]["quality"]["all"]["queries"],
            figures[name]["quality"]["all"]["recall@1"],
            figures[name]["quality"]["all"]["recall@5"],
            figures[name]["quality"]["all"]["recall@10"],
            figures[name]["quality"]["all"]["mrr@10"],
            figures[name]["latency_sdk"]["p50"],
            figures[name]["latency_sdk"]["p99"],
        ]
        for name in names
    ]
    quality_rows += [[f"toolsearch {label}", reason, *([None] * 6)] for label, reason in gaps]
    languages = sorted({lang for name in names for lang in figures[name]["quality"] if lang != "all"})
    lang_rows = [
        [name, *(figures[name]["quality"].get(lang, {}).get("recall@5") for lang in languages)]
        for name in names
    ]
    size_rows = [
        [size, *(value for name in names for value in _p50_p99(by_size[name].get(str(size))))]
        for size in sizes
    ]
    size_columns = ["tools", *(f"{name} {p}" for name in names for p in ("p50 ms", "p99 ms"))]
    notes = [
        f"Peer: {peer_version()}, BM25SearchTransform(max_results={LIMIT}), stateless HTTP, JSON responses.",
        "Latency: raw tools/call POSTs, one at a time on a keep-alive connection, caller's catalog warm. "
        f"The peer answers the first {', '.join(f'{n}' for n in sorted(set(_counts(by_size, sizes))))} "
        "queries (it is slow); toolsearch all 260.",
    ]
    notes += [f"toolsearch {label}: {reason}." for label, reason in gaps]
    if options.measured_profiles:
        notes.append(
            "toolsearch hybrid embeds each query once per model (an LRU keeps query vectors): these are "
            "first-time queries; in the quality table above the same queries come again, so its SDK "
            "latency there is that of repeated queries."
        )
    data = {
        "catalog_tools": full_size,
        "queries": len(queries),
        "query_sample": f"every {QUICK_EVERY}th dev query" if options.quick else "all dev queries",
        "limit": LIMIT,
        "peer": peer_version(),
        "figures": figures,
        "latency_by_size": by_size,
        "hybrid": {f"toolsearch {label}": reason for label, reason in gaps}
        | {profile.target: "measured" for profile in options.measured_profiles},
    }
    return Section(
        name="quality",
        data=data,
        tables=[
            Table(
                f"Search quality over the whole catalog ({full_size:,} tools), {len(queries)} dev queries",
                [
                    "server",
                    "queries with gold",
                    "recall@1",
                    "recall@5",
                    "recall@10",
                    "MRR@10",
                    "SDK p50 ms",
                    "SDK p99 ms",
                ],
                quality_rows,
                [
                    "Each query sent as search_tools through the MCP SDK client (mcp.Client, auto mode); "
                    "latency as the client saw it (client work included).",
                    *profiles_note(options.hybrid_profiles),
                    *(
                        [f"Quick run: every {QUICK_EVERY}th dev query, so figures move by several points."]
                        if options.quick
                        else []
                    ),
                ],
            ),
            Table("recall@5 by language", ["server", *languages], lang_rows),
            Table("Warm search latency versus catalog size, through HTTP", size_columns, size_rows, notes),
        ],
        floors=_floors(options, figures, by_size),
    )


def _p50_p99(figures: dict[str, float] | None) -> tuple[Any, Any]:
    return (figures["p50"], figures["p99"]) if figures else (None, None)


def _counts(by_size: dict[str, dict[str, Any]], sizes: list[int]) -> list[int]:
    peer = next((figures for name, figures in by_size.items() if name.startswith("peer")), {})
    return [peer[str(size)]["n"] for size in sizes if str(size) in peer]


def _floors(
    options: Options, figures: dict[str, dict[str, Any]], by_size: dict[str, dict[str, Any]]
) -> list[Floor]:
    def recall(name: str) -> float:
        return figures[name]["quality"]["all"]["recall@5"]

    def verdict(met: bool) -> bool | None:
        # A quick run's 20 queries move recall by several points: a figure, not a verdict.
        return None if options.quick else met

    sample = f" (quick run: every {QUICK_EVERY}th dev query, no verdict)" if options.quick else ""

    peer = recall("peer (fastmcp bm25)")
    bm25 = recall("toolsearch bm25")
    bm25_p50 = by_size["toolsearch bm25"][str(FLOOR_SIZE)]["p50"]
    floors = [
        Floor(
            "toolsearch bm25 recall@5 at least the peer's",
            f"{bm25:.3f} vs {peer:.3f} ({(bm25 - peer) * 100:+.1f} points){sample}",
            verdict(bm25 >= peer),
        ),
        Floor(
            f"warm search at {FLOOR_SIZE:,} tools through HTTP, bm25: p50 <= {BM25_P50_MS:g} ms",
            f"p50 {bm25_p50:.2f} ms",
            bm25_p50 <= BM25_P50_MS,
        ),
    ]
    measured, gaps = options.measured_profiles, options.hybrid_gaps
    for profile in measured:
        hybrid = recall(profile.target)
        floors.append(
            Floor(
                _hybrid_recall_floor(profile.label),
                f"{hybrid:.3f} vs {peer:.3f} ({(hybrid - peer) * 100:+.1f} points){sample}",
                verdict(hybrid - peer >= RECALL_MARGIN_HYBRID - 1e-9),
            )
        )
    floors += [Floor(_hybrid_recall_floor(label), reason, None) for label, reason in gaps]
    for profile in measured:
        hybrid_p50 = by_size[profile.target][str(FLOOR_SIZE)]["p50"]
        met = hybrid_p50 <= HYBRID_P50_MS
        floors.append(Floor(_hybrid_latency_floor(profile.label), f"p50 {hybrid_p50:.2f} ms", met))
    floors += [Floor(_hybrid_latency_floor(label), reason, None) for label, reason in gaps]
    return floors


def _hybrid_recall_floor(label: str) -> str:
    return f"toolsearch {label} recall@5 >= the peer's + 10 points"


def _hybrid_latency_floor(label: str) -> str:
    return f"warm search at {FLOOR_SIZE:,} tools through HTTP, {label}: p50 <= {HYBRID_P50_MS:g} ms"


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--sections", "quality", *sys.argv[1:]]))
