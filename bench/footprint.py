"""Memory of a toolsearch process with a search profile: RSS after start, with a catalog, after searches.

    python -m bench.footprint --model-dir PROFILE [--service-dir DIR --label NAME]... [--tools 1500]

Each `--service-dir` (repeatable, with a `--label` each; default: this checkout's service/) is one
toolsearch source tree, measured side by side in one run: the code before a change beside the code
after it. For each one, `toolsearch serve --model-dir PROFILE` starts in front of a demo upstream
serving the first `--tools` recorded tools; its RSS (/proc/PID/status VmRSS) is read once it is
ready (the models loaded), after one caller's catalog is indexed (hybrid, its vectors embedded),
and after every dev query has been searched once. Each tree embeds the catalog itself (no vector
cache is shared: embedding is part of what a process holds memory for). Prints a table; writes
bench/results/footprint-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

from bench.clients import RawClient, tools_call_request
from bench.memory import rss_bytes
from bench.processes import SERVICE_DIR, running, toolsearch_server, upstream_server
from bench.report import RESULTS_DIR, machine
from bench.stats import dev_queries

TOKEN = "bench-footprint"
EMBEDDING_TIMEOUT = 1800.0
"""Seconds the first search may take: the catalog is embedded then."""


def rss_mb(pid: int) -> float:
    return rss_bytes(pid) / 2**20


def _search(client: RawClient, query: str) -> None:
    client.post(*tools_call_request("search_tools", {"query": query, "limit": 10}, TOKEN))


def measure(service_dir: Path, model_dir: str, tools: int) -> dict[str, float]:
    upstream = upstream_server(tools)
    server = toolsearch_server(upstream, service_dir=service_dir, model_dir=model_dir)
    queries = [query["query"] for query in dev_queries()]
    with running(upstream, server) as (_, proxy):
        figures = {"ready": rss_mb(proxy.pid)}
        with RawClient(server.mcp_url, timeout=EMBEDDING_TIMEOUT) as client:
            _search(client, queries[0])
            figures["catalog indexed"] = rss_mb(proxy.pid)
            for query in queries:
                _search(client, query)
        figures["after searches"] = rss_mb(proxy.pid)
    return {stage: round(value, 1) for stage, value in figures.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True, help="the profile (serve's --model-dir value)")
    parser.add_argument("--service-dir", type=Path, action="append", default=[], help="a source tree")
    parser.add_argument("--label", action="append", default=[], help="a name for each --service-dir")
    parser.add_argument("--tools", type=int, default=1500, help="catalog size (default: 1500)")
    args = parser.parse_args(argv)
    service_dirs = args.service_dir or [SERVICE_DIR]
    labels = args.label or [str(directory) for directory in service_dirs]
    if len(labels) != len(service_dirs):
        parser.error("give one --label per --service-dir")
    results = {
        label: measure(directory.resolve(), args.model_dir, args.tools)
        for label, directory in zip(labels, service_dirs, strict=True)
    }
    stages = list(next(iter(results.values())))
    print(
        f"| toolsearch ({args.tools:,} tools, {args.model_dir}) | "
        + " | ".join(f"{s} MB" for s in stages)
        + " |"
    )
    print("|---|" + "---|" * len(stages))
    for label, figures in results.items():
        print(f"| {label} | " + " | ".join(f"{figures[stage]:,.1f}" for stage in stages) + " |")
    day = dt.date.today().isoformat()
    report = {
        "date": day,
        "machine": machine(),
        "model_dir": args.model_dir,
        "tools": args.tools,
        "rss_mb": results,
    }
    (RESULTS_DIR / f"footprint-{day}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
