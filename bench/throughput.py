"""Throughput under load: wrk against one toolsearch process, two behind nginx, and the peer.

    python -m bench.throughput [--quick]

Over 1,500 tools, with many callers whose catalogs are warm: wrk (Debian package; installed with
apt-get when missing and this runs as root, else the section is skipped) POSTs prepared
`tools/call` requests through a small Lua script (bench/wrk/mcp.lua), every request with the next
caller's token and the next dev query, on N keep-alive connections for a few seconds each:
searches (`search_tools`, 8 results) and read calls (`call_read_tool` of one upstream tool; the
peer's `call_tool`). Reported: requests/s, latency p50/p99 and the share of failed responses.

The peer answers its calls itself, while toolsearch's read calls go on to the upstream, which
runs on the same two cores. One machine holds wrk, nginx, the servers and the upstream, so the
two-process row shows how far two processes get on these two cores, not on two machines.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.clients import (
    PEER,
    READ_ARGUMENTS,
    READ_TOOL,
    TOOLSEARCH,
    Dialect,
    RawClient,
    tools_call_request,
)
from bench.options import Options
from bench.peer import peer_server, peer_version
from bench.processes import (
    BENCH_DIR,
    cpu_seconds,
    nginx_balancer,
    nginx_binary,
    running,
    toolsearch_server,
    upstream_server,
)
from bench.report import Floor, Section, Table
from bench.stats import dev_queries

CATALOG = 1500
LUA_SCRIPT = BENCH_DIR / "wrk" / "mcp.lua"
KINDS = ("search", "read call")
_REQUEST_LINES = 4096


def ensure_wrk() -> str | None:
    """The wrk binary; installed from Debian when missing and apt-get can be used. None if not."""
    found = shutil.which("wrk")
    if found or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return found
    print("bench: installing wrk (Debian package) with apt-get", file=sys.stderr, flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "wrk"]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True)
        subprocess.run(install, env=env, capture_output=True)
    return shutil.which("wrk")


@dataclass(frozen=True)
class LoadTarget:
    name: str
    url: str
    dialect: Dialect
    pids: tuple[int, ...]
    """The server processes, whose CPU time is counted per answered request."""


def caller_tokens(count: int) -> list[str]:
    return [f"bench-caller-{number:04d}-{os.urandom(6).hex()}" for number in range(count)]


def _calls(dialect: Dialect, kind: str) -> list[tuple[str, dict[str, Any]]]:
    """(tool, arguments) of the requests of one kind, in the order they are sent."""
    if kind == "search":
        return [(dialect.search_tool, dialect.search_arguments(q["query"], 8)) for q in dev_queries()]
    return [(dialect.call_tool, dialect.call_arguments(READ_TOOL, READ_ARGUMENTS))]


def request_file(directory: Path, dialect: Dialect, kind: str, tokens: list[str]) -> Path:
    path = directory / f"{dialect.name}-{kind.replace(' ', '-')}.tsv"
    calls = _calls(dialect, kind)
    lines = []
    for number in range(_REQUEST_LINES):
        tool, arguments = calls[number % len(calls)]
        _, body = tools_call_request(tool, arguments)
        lines.append(f"{tool}\t{tokens[number % len(tokens)]}\t{body.decode()}")
    path.write_text("\n".join(lines) + "\n")
    return path


def warm_callers(urls: list[str], tokens: list[str]) -> None:
    """Every caller's catalog listed and indexed on every toolsearch process before the load starts."""

    def warm_one(url: str, token: str) -> None:
        with RawClient(url) as client:
            client.call(TOOLSEARCH.search_tool, {"query": "warm up", "limit": 1}, token)

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda job: warm_one(*job), [(url, token) for token in tokens for url in urls]))


def run_wrk(binary: str, url: str, requests: Path, connections: int, seconds: int) -> dict[str, Any]:
    command = [
        binary,
        "-t1",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        "30s",
        "-s",
        str(LUA_SCRIPT),
        url,
        "--",
        str(requests),
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    line = next((line for line in completed.stdout.splitlines() if line.startswith("BENCH_JSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk gave no result: {completed.stdout[-500:]} {completed.stderr[-500:]}")
    raw = json.loads(line.removeprefix("BENCH_JSON "))
    socket_errors = raw["connect_errors"] + raw["read_errors"] + raw["write_errors"] + raw["timeouts"]
    seconds_run = raw["duration_us"] / 1e6
    total = raw["requests"] + raw["timeouts"]
    return {
        "connections": connections,
        "requests": raw["requests"],
        "rps": round((raw["requests"] - raw["failed_responses"]) / seconds_run, 1),
        "p50_ms": round(raw["p50_us"] / 1000, 3),
        "p99_ms": round(raw["p99_us"] / 1000, 3),
        "max_ms": round(raw["max_us"] / 1000, 3),
        "error_rate": round((raw["failed_responses"] + socket_errors) / total, 4) if total else None,
        "wrk": raw,
    }


def run(options: Options) -> Section:
    binary = ensure_wrk()
    if binary is None:
        reason = "wrk is not installed and cannot be installed here (needs root and apt-get)"
        print(f"bench: throughput skipped: {reason}", file=sys.stderr)
        return Section(
            "throughput",
            {"skipped": reason},
            [Table("Throughput", ["skipped"], [[reason]])],
            [Floor("throughput of one process >= 2x the peer's at the same p99", reason, None)],
        )
    connections = options.pick((4, 16), (1, 4, 16, 64))
    seconds = options.pick(2, 10)
    tokens = caller_tokens(options.pick(24, 128))
    upstream = upstream_server(CATALOG)
    first = toolsearch_server(upstream, service_dir=options.service_dir, name="toolsearch-1")
    second = toolsearch_server(upstream, service_dir=options.service_dir, name="toolsearch-2")
    peer = peer_server(CATALOG, max_results=8)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with (
        running(upstream, first, second, peer) as started,
        tempfile.TemporaryDirectory(prefix="bench-wrk-") as scratch,
    ):
        upstream_pid, first_pid, second_pid, peer_pid = (entry.pid for entry in started)
        print(
            f"bench: throughput: warming {len(tokens)} callers on two processes", file=sys.stderr, flush=True
        )
        warm_callers([first.mcp_url, second.mcp_url], tokens)
        with RawClient(peer.mcp_url) as client:
            client.call(PEER.search_tool, {"query": "warm up"})
        targets = [LoadTarget("toolsearch ×1", first.mcp_url, TOOLSEARCH, (first_pid,))]
        # Without nginx the two-process rows are left out.
        with nginx_balancer([first, second]) if nginx_binary() else nullcontext() as balanced:
            if balanced is not None:
                targets.append(
                    LoadTarget("toolsearch ×2 (nginx)", balanced.mcp_url, TOOLSEARCH, (first_pid, second_pid))
                )
            targets.append(LoadTarget("peer (fastmcp bm25)", peer.mcp_url, PEER, (peer_pid,)))
            files = {
                (dialect.name, kind): request_file(Path(scratch), dialect, kind, tokens)
                for dialect in (TOOLSEARCH, PEER)
                for kind in KINDS
            }
            for kind in KINDS:
                for target in targets:
                    print(f"bench: throughput: {target.name}, {kind}", file=sys.stderr, flush=True)
                    results.setdefault(kind, {})[target.name] = [
                        _load_point(
                            binary, target, files[(target.dialect.name, kind)], count, seconds, upstream_pid
                        )
                        for count in connections
                    ]
    return _section(results, len(tokens), seconds, nginx_present=nginx_binary() is not None)


def _load_point(
    binary: str, target: LoadTarget, requests: Path, connections: int, seconds: int, upstream_pid: int
) -> dict[str, Any]:
    """One wrk run, with the CPU time the servers and the upstream spent per answered request."""
    before = cpu_seconds(target.pids), cpu_seconds([upstream_pid])
    point = run_wrk(binary, target.url, requests, connections, seconds)
    after = cpu_seconds(target.pids), cpu_seconds([upstream_pid])
    answered = max(1, point["requests"])
    point["server_cpu_ms"] = round((after[0] - before[0]) * 1000 / answered, 3)
    point["upstream_cpu_ms"] = round((after[1] - before[1]) * 1000 / answered, 3)
    return point


def best_at_p99(points: list[dict[str, Any]], p99_ms: float) -> dict[str, Any] | None:
    """The point with most requests/s whose p99 is within `p99_ms` and that had no failures."""
    fitting = [p for p in points if p["p99_ms"] <= p99_ms and not p["error_rate"]]
    return max(fitting, key=lambda p: p["rps"], default=None)


def _section(
    results: dict[str, dict[str, list[dict[str, Any]]]], callers: int, seconds: int, *, nginx_present: bool
) -> Section:
    rows = [
        [
            kind,
            target,
            p["connections"],
            p["rps"],
            p["p50_ms"],
            p["p99_ms"],
            f"{(p['error_rate'] or 0):.2%}",
            p["server_cpu_ms"],
            p["upstream_cpu_ms"] if p["upstream_cpu_ms"] else None,
        ]
        for kind, by_target in results.items()
        for target, points in by_target.items()
        for p in points
    ]
    comparisons, floors = [], []
    for kind, by_target in results.items():
        peer_points = by_target["peer (fastmcp bm25)"]
        peer_best = max(peer_points, key=lambda p: p["rps"])
        ours = best_at_p99(by_target["toolsearch ×1"], peer_best["p99_ms"])
        ratio = ours["rps"] / peer_best["rps"] if ours and peer_best["rps"] else None
        comparisons.append(
            [
                kind,
                peer_best["rps"],
                peer_best["p99_ms"],
                ours["rps"] if ours else None,
                ours["p99_ms"] if ours else None,
                f"{ratio:.1f}×" if ratio else None,
            ]
        )
        measured = (
            f"{kind}: {ours['rps']:,.0f} req/s at p99 {ours['p99_ms']:.1f} ms vs the peer's "
            f"{peer_best['rps']:,.0f} req/s at p99 {peer_best['p99_ms']:.1f} ms ({ratio:.1f}×)"
            if ratio
            else f"{kind}: no toolsearch point within the peer's p99 {peer_best['p99_ms']:.1f} ms"
        )
        floors.append(
            Floor(
                f"throughput of one process >= 2x the peer's at the same p99 ({kind})",
                measured,
                bool(ratio and ratio >= 2),
            )
        )
    notes = [
        f"{callers} distinct callers (bearer tokens), rotating with every request, catalogs warm; "
        f"{seconds} s per point, wrk -t1, keep-alive connections; 1,500 tools.",
        f"Peer: {peer_version()}, its calls answered in-process (no upstream hop); toolsearch's read "
        "calls go on to the demo upstream (a Python MCP SDK server on the same cores).",
        "CPU ms/req: CPU time (user + system, from /proc) of the server processes, and of the upstream, "
        "per answered request: what a request costs, less sensitive than req/s to other load on the "
        "machine (the capacity of one core is about 1,000 / CPU ms req/s).",
    ]
    if not nginx_present:
        notes.append("nginx is not installed: the two-process rows are left out.")
    return Section(
        name="throughput",
        data={"catalog_tools": CATALOG, "callers": callers, "seconds_per_point": seconds, "results": results},
        tables=[
            Table(
                "Throughput versus concurrency (wrk)",
                [
                    "requests",
                    "server",
                    "connections",
                    "req/s",
                    "p50 ms",
                    "p99 ms",
                    "failed",
                    "server CPU ms/req",
                    "upstream CPU ms/req",
                ],
                rows,
                notes,
            ),
            Table(
                "One toolsearch process versus the peer at the peer's best p99",
                ["requests", "peer best req/s", "at p99 ms", "toolsearch ×1 req/s", "at p99 ms", "ratio"],
                comparisons,
                [
                    "toolsearch's best point whose p99 is within the p99 of the peer's best point, "
                    "without failures."
                ],
            ),
        ],
        floors=floors,
    )


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--sections", "throughput", *sys.argv[1:]]))
