"""Answers: the characters of each `search_tools` answer an agent reads, now, at the last commit
before the answer budget, and from the peer.

    python -m bench.answers [--quick] [--model-dir DIR[,DIR...]]

Every dev query over the whole recorded catalog, at default settings (8 results; with --model-dir,
the first profile's hybrid search), sent alone, and in calls of 3 and of 5 queries (the dev queries
in file order, taken 3 or 5 at a time; the incomplete last call left out). Three servers answer:
toolsearch from this checkout's sources (or --service-dir), toolsearch from commit `BASELINE` (its
`service/` from `git archive`, the answer before the budget), and the peer (FastMCP's
BM25SearchTransform, its default 5 full definitions per search; it takes one query per call, so a
call of n queries counts n of its answers; every 4th dev query, for it is slow). Characters are
those of the answer's text as the model reads it.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from bench.clients import PEER, TOOLSEARCH, RawClient, result_text, sdk_client, tools_call_request
from bench.options import Options
from bench.peer import peer_server
from bench.processes import REPO_DIR, Server, running, toolsearch_server, upstream_server, with_vector_cache
from bench.report import Floor, Section, Table
from bench.stats import dev_queries

BASELINE = "aeb1b66"
"""The last commit whose search answer had no budget (all descriptions 240 characters, the top 3
schemas whole, twins apart)."""
CALL_SIZES = (1, 3, 5)
PEER_RESULTS = 5
PEER_STARTUP = 900.0
"""Seconds the peer may take to load the whole catalog (minutes on a busy machine)."""
PEER_EVERY = 4
"""The peer answers every 4th dev query of a full run (about a second each over the whole catalog);
a quick run, which asks every 4th, asks it all of them."""
SINGLE_P50_FLOOR = 1500
SINGLE_P90_FLOOR = 3000
FIVE_MAX_FLOOR = 10_000
WARM_TIMEOUT = 1800.0
"""Seconds the first search may take: hybrid search embeds the whole catalog then."""
TOKEN = "bench-answers"


def calls(queries: Sequence[str], size: int) -> list[list[str]]:
    """The queries in order, `size` to a call; an incomplete last call is left out."""
    return [list(queries[start : start + size]) for start in range(0, len(queries) - size + 1, size)]


async def _answer_chars(server: Server, batches: list[list[str]]) -> list[dict[str, Any]]:
    """Per call of toolsearch: its characters, and whether every query of it was answered "no match"."""
    measured = []
    async with sdk_client(server.mcp_url, token=TOKEN) as client:
        for batch in batches:
            arguments = {"query": batch[0]} if len(batch) == 1 else {"queries": batch}
            result = await client.call_tool(TOOLSEARCH.search_tool, arguments)
            text = result_text(result)
            if result.is_error:
                raise RuntimeError(f"{server.name} failed a search: {text[:300]}")
            results = orjson.loads(text)["results"]
            measured.append(
                {"chars": len(text), "unmatched": all(r.get("matched") is False for r in results)}
            )
    return measured


async def _peer_chars(server: Server, queries: list[str]) -> list[int]:
    """Characters of the peer's answer to each query (it answers one query a call)."""
    async with sdk_client(server.mcp_url, token=TOKEN) as client:
        answers = [await client.call_tool(PEER.search_tool, {"query": query}) for query in queries]
    return [len(result_text(answer)) for answer in answers]


def _figures(measured: list[dict[str, Any]]) -> dict[str, Any]:
    chars = np.array([call["chars"] for call in measured], dtype=float)
    p50, p90 = np.percentile(chars, [50, 90])
    figures: dict[str, Any] = {
        "calls": len(measured),
        "p50": round(float(p50)),
        "p90": round(float(p90)),
        "max": int(chars.max()),
    }
    if "unmatched" in measured[0]:
        figures["unmatched_share"] = round(float(np.mean([call["unmatched"] for call in measured])), 4)
    return figures


@contextmanager
def baseline_service() -> Iterator[Path | None]:
    """`service/` of commit `BASELINE` in a temporary directory (None when git cannot give it)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO_DIR), "archive", "--format=tar", BASELINE, "service"], capture_output=True
    )
    if archive.returncode != 0:
        print(f"bench: answers: no baseline: {archive.stderr.decode()[:200]}", file=sys.stderr)
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="bench-answers-baseline-") as directory:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(directory, filter="data")
        yield Path(directory) / "service"


def _served_and_measured(server: Server, texts: list[str]) -> dict[str, dict[str, Any]]:
    with running(server):
        with RawClient(server.mcp_url, timeout=WARM_TIMEOUT) as client:  # embeds the catalog
            client.post(*tools_call_request("search_tools", {"query": texts[0]}, TOKEN))
        return _measure(server, texts)


def _measure(server: Server, texts: list[str]) -> dict[str, dict[str, Any]]:
    by_size = {}
    for size in CALL_SIZES:
        print(f"bench: answers: {server.name}, calls of {size}", file=sys.stderr, flush=True)
        by_size[str(size)] = _figures(asyncio.run(_answer_chars(server, calls(texts, size))))
    return by_size


def _measure_peer(server: Server, texts: list[str]) -> dict[str, dict[str, Any]]:
    """The peer's figures: a call of n queries is n of its answers, so each query is asked once."""
    print(f"bench: answers: {server.name}, {len(texts)} queries", file=sys.stderr, flush=True)
    chars = dict(zip(texts, asyncio.run(_peer_chars(server, texts)), strict=True))
    return {
        str(size): _figures([{"chars": sum(chars[query] for query in batch)} for batch in calls(texts, size)])
        for size in CALL_SIZES
    }


def run(options: Options) -> Section:
    texts = [query["query"] for query in dev_queries(every=options.pick(4, 1))]
    profile = options.measured_profiles[0] if options.measured_profiles else None
    search = profile.label if profile else "bm25"
    upstream = upstream_server(None)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-answers-vectors-") as vectors, baseline_service() as base:
        sources = {"toolsearch": options.service_dir}
        if base is not None:
            sources[f"toolsearch at {BASELINE}"] = base
        with running(upstream):
            for name, service_dir in sources.items():
                model_dir = profile.model_dir if profile else None
                server = toolsearch_server(upstream, service_dir=service_dir, model_dir=model_dir, name=name)
                server = with_vector_cache(server, Path(vectors)) if profile else server
                try:
                    results[name] = _served_and_measured(server, texts)
                except RuntimeError as error:
                    if name == "toolsearch":
                        raise
                    # An old commit may not read today's model directories (their manifests grew).
                    print(f"bench: answers: {name} left out: {str(error)[-200:]}", file=sys.stderr)
            peer = peer_server(None, max_results=PEER_RESULTS)
            with running(peer, startup_timeout=PEER_STARTUP):
                peer_texts = texts[:: options.pick(1, PEER_EVERY)]
                peer_queries = len(peer_texts)
                results[f"peer (fastmcp bm25, {PEER_RESULTS} definitions)"] = _measure_peer(peer, peer_texts)
    ours = results["toolsearch"]
    rows = [
        [
            name,
            figures["1"]["p50"],
            figures["1"]["p90"],
            figures["1"]["max"],
            figures["3"]["p50"],
            figures["3"]["max"],
            figures["5"]["p50"],
            figures["5"]["max"],
            figures["1"].get("unmatched_share"),
        ]
        for name, figures in results.items()
    ]
    return Section(
        name="answers",
        data={"search": search, "queries": len(texts), "baseline": BASELINE, "chars": results},
        tables=[
            Table(
                f"search_tools answer characters, dev queries over the whole recorded catalog ({search})",
                [
                    "server",
                    "1 query p50",
                    "1 query p90",
                    "1 query max",
                    "3 queries p50",
                    "3 queries max",
                    "5 queries p50",
                    "5 queries max",
                    "no-match share",
                ],
                rows,
                [
                    f"{len(texts)} dev queries; calls of 3 and 5: the queries in file order, 3 or 5 a call.",
                    "Default settings (8 results). The peer takes one query per call: a call of n "
                    f"queries counts n of its answers; it answers {peer_queries} "
                    "of the queries (every 4th of a full run: it is slow), grouped alike.",
                    "No-match share: single-query answers whose every result says matched: false.",
                ],
            )
        ],
        floors=[
            Floor(
                f"single-query answer median <= {SINGLE_P50_FLOOR:,} characters",
                f"{ours['1']['p50']:,}",
                ours["1"]["p50"] <= SINGLE_P50_FLOOR,
            ),
            Floor(
                f"single-query answer p90 <= {SINGLE_P90_FLOOR:,} characters",
                f"{ours['1']['p90']:,}",
                ours["1"]["p90"] <= SINGLE_P90_FLOOR,
            ),
            Floor(
                f"5-query call at most {FIVE_MAX_FLOOR:,} characters",
                f"{ours['5']['max']:,}",
                ours["5"]["max"] <= FIVE_MAX_FLOOR,
            ),
        ],
    )


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--sections", "answers", *sys.argv[1:]]))
