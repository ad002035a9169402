"""Profiles of toolsearch's hot paths under load: warm search at 1,500 tools, and a proxied tools/call.

    python -m bench.profile [--service-dir DIR]

py-spy samples the toolsearch server process (CPU time of its threads) while wrk (or, without
wrk, four Python threads) sends warm `search_tools` calls of many callers, then `call_read_tool`
calls. The raw stacks go to bench/results/profiles/<date>-<workload>.txt (collapsed format, for
speedscope or flamegraph.pl); the tables show the frames with the most time of their own, the
toolsearch functions with the most time inclusive, and the time by layer.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.clients import READ_ARGUMENTS, READ_TOOL, TOOLSEARCH, RawClient
from bench.options import Options
from bench.processes import Running, running, toolsearch_server, upstream_server
from bench.report import Section, Table
from bench.throughput import caller_tokens, ensure_wrk, request_file, run_wrk, warm_callers

CATALOG = 1500
CONNECTIONS = 4
RATE_HZ = 250
TOP = 12
_IDLE = {"_worker (concurrent/futures/thread.py)"}
"""A thread-pool worker with nothing deeper is waiting for work (py-spy counts its lock wait as busy)."""
_ROOTS = ("(toolsearch/cli.py)", "(toolsearch/commands/serve.py)", "(toolsearch/__main__.py)")
"""The process's own frames, under every sample."""
WORKLOADS = {"warm search": "search", "proxied tools/call": "read call"}
LAYERS = (
    ("toolsearch", ("toolsearch/",)),
    ("fastapi / starlette", ("fastapi/", "starlette/")),
    ("uvicorn / httptools", ("uvicorn/", "httptools/")),
    ("httpx / httpcore (upstream client)", ("httpx/", "httpcore/", "h11/")),
    ("opentelemetry", ("opentelemetry/",)),
    ("pydantic", ("pydantic/", "pydantic_core/")),
    ("jsonschema / referencing", ("jsonschema/", "referencing/", "rpds/")),
    ("numpy / scipy", ("numpy/", "scipy/")),
    ("event loop (uvloop, asyncio, anyio)", ("anyio/", "asyncio/", "uvloop/")),
    ("logging", ("logging/",)),
)


def py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


@dataclass(frozen=True)
class Profile:
    samples: int
    own: Counter[str]
    inclusive: Counter[str]
    layers: Counter[str]


def read_collapsed(path: Path) -> Profile:
    """Self time per frame, inclusive time per frame, and self time per layer, in samples."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    layers: Counter[str] = Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        if _function(frames[-1]) in _IDLE:
            continue
        weight = int(count)
        samples += weight
        own[_function(frames[-1])] += weight
        for frame in {_function(frame) for frame in frames}:
            inclusive[frame] += weight
        layers[_layer(frames[-1])] += weight
    return Profile(samples, own, inclusive, layers)


def _function(frame: str) -> str:
    """`name (path/to/module.py:line)` without the line, so a function's lines add up."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rpartition(":")[0]
    for marker in ("site-packages/", "service/", "/lib/python3.11/", "/lib/python3.12/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})" if path else name


def _layer(frame: str) -> str:
    return next((name for name, markers in LAYERS if any(m in frame for m in markers)), "other (stdlib, C)")


def _drive_with_threads(url: str, calls: list[tuple[str, dict[str, Any], str]], seconds: float) -> None:
    deadline = time.monotonic() + seconds

    def loop(offset: int) -> None:
        with RawClient(url) as client:
            number = offset
            while time.monotonic() < deadline:
                tool, arguments, token = calls[number % len(calls)]
                client.call(tool, arguments, token)
                number += 1

    with ThreadPoolExecutor(CONNECTIONS) as pool:
        list(pool.map(loop, range(CONNECTIONS)))


def _profile(server: Running, drive: Callable[[], None], seconds: int, output: Path) -> Profile:
    command = [
        py_spy(),
        "record",
        "-p",
        str(server.pid),
        "-d",
        str(seconds),
        "-r",
        str(RATE_HZ),
        "-f",
        "raw",
        "--full-filenames",
        "-o",
        str(output),
    ]
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    load = threading.Thread(target=drive)
    time.sleep(0.5)  # py-spy attaches
    load.start()
    load.join()
    _, errors = recorder.communicate(timeout=seconds + 60)
    if recorder.returncode != 0 or not output.exists():
        raise RuntimeError(f"py-spy failed: {errors.decode(errors='replace')[-500:]}")
    return read_collapsed(output)


def run(options: Options) -> Section:
    if py_spy() is None:
        reason = "py-spy is not installed (pip install py-spy)"
        return Section("profile", {"skipped": reason}, [Table("Profiles", ["skipped"], [[reason]])])
    seconds = options.pick(5, 12)
    wrk = ensure_wrk()
    tokens = caller_tokens(16)
    upstream = upstream_server(CATALOG)
    toolsearch = toolsearch_server(upstream, service_dir=options.service_dir)
    profiles: dict[str, Profile] = {}
    directory = options.results_dir / "profiles"
    directory.mkdir(parents=True, exist_ok=True)
    with (
        running(upstream, toolsearch) as started,
        tempfile.TemporaryDirectory(prefix="bench-profile-") as scratch,
    ):
        warm_callers([toolsearch.mcp_url], tokens)
        for workload, kind in WORKLOADS.items():
            output = directory / f"{dt.date.today().isoformat()}-{kind.replace(' ', '-')}.txt"
            if wrk is not None:
                requests = request_file(Path(scratch), TOOLSEARCH, kind, tokens)

                def drive(requests: Path = requests) -> None:
                    run_wrk(wrk, toolsearch.mcp_url, requests, CONNECTIONS, seconds)
            else:
                calls = _thread_calls(kind, tokens)

                def drive(calls: list[tuple[str, dict[str, Any], str]] = calls) -> None:
                    _drive_with_threads(toolsearch.mcp_url, calls, seconds)

            print(f"bench: profile: {workload}", file=sys.stderr, flush=True)
            profiles[workload] = _profile(started[1], drive, seconds + 1, output)
    return _section(profiles, seconds, "wrk" if wrk else "4 Python threads")


def _thread_calls(kind: str, tokens: list[str]) -> list[tuple[str, dict[str, Any], str]]:
    from bench.stats import dev_queries

    if kind == "search":
        queries = [q["query"] for q in dev_queries()]
        return [
            (TOOLSEARCH.search_tool, {"query": q, "limit": 8}, tokens[n % len(tokens)])
            for n, q in enumerate(queries)
        ]
    arguments = {"name": READ_TOOL, "arguments": READ_ARGUMENTS}
    return [(TOOLSEARCH.call_tool, arguments, token) for token in tokens]


def _share(count: int, total: int) -> str:
    return f"{count / total:.1%}" if total else "–"


def _section(profiles: dict[str, Profile], seconds: int, driver: str) -> Section:
    tables = []
    data: dict[str, Any] = {}
    for workload, profile in profiles.items():
        total = profile.samples
        own = [[frame, _share(count, total)] for frame, count in profile.own.most_common(TOP)]
        ours = [
            [frame, _share(count, total)]
            for frame, count in profile.inclusive.most_common()
            if "(toolsearch/" in frame and not frame.endswith(_ROOTS)
        ][:TOP]
        layers = [[layer, _share(count, total)] for layer, count in profile.layers.most_common()]
        load = f"{seconds} s of load ({driver}, {CONNECTIONS} connections)"
        note = [
            f"{total:,} busy samples at {RATE_HZ} Hz over {load}; idle thread-pool workers left out. "
            "Runner.run as a leaf is the event loop's own C code (uvloop: socket I/O, callbacks); a "
            "process waiting for a core counts as busy, so on a loaded machine socket writes look costly."
        ]
        tables += [
            Table(f"{workload}: frames with the most time of their own", ["frame", "share"], own, note),
            Table(f"{workload}: toolsearch functions, time inclusive", ["function", "share"], ours),
            Table(f"{workload}: time by layer (own time)", ["layer", "share"], layers),
        ]
        data[workload] = {
            "samples": total,
            "own": dict(profile.own.most_common(40)),
            "inclusive": dict(profile.inclusive.most_common(80)),
            "layers": dict(profile.layers),
        }
    return Section("profile", data, tables)


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--sections", "profile", *sys.argv[1:]]))
