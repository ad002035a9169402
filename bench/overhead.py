"""Overhead: a tools/call through toolsearch versus the same call straight to the upstream.

    python -m bench.overhead [--quick]

One read-only upstream tool over a 1,500-tool catalog (the caller's catalog warm), called with
raw `tools/call` POSTs on keep-alive connections, one at a time, the three ways interleaved so
that drifts of the machine hit them alike: straight to the upstream, through toolsearch by the
tool's real name, and through toolsearch's `call_read_tool`. Added latency: the difference of
the percentiles of the proxied and the direct calls.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack

from bench.clients import READ_ARGUMENTS, READ_TOOL, RawClient
from bench.options import Options
from bench.processes import running, toolsearch_server, upstream_server
from bench.report import Floor, Section, Table
from bench.stats import latency

CATALOG = 1500
TOKEN = "bench-overhead"
ADDED_P50_FLOOR_MS = 2.0
_WARM_CALLS = 20


def run(options: Options) -> Section:
    calls = options.pick(300, 2000)
    upstream = upstream_server(CATALOG)
    toolsearch = toolsearch_server(upstream, service_dir=options.service_dir)
    ways = {
        "direct to the upstream": (upstream, READ_TOOL, READ_ARGUMENTS),
        "toolsearch, real name": (toolsearch, READ_TOOL, READ_ARGUMENTS),
        "toolsearch, call_read_tool": (
            toolsearch,
            "call_read_tool",
            {"name": READ_TOOL, "arguments": READ_ARGUMENTS},
        ),
    }
    samples: dict[str, list[float]] = {way: [] for way in ways}
    with running(upstream, toolsearch), ExitStack() as stack:
        clients = {
            way: stack.enter_context(RawClient(server.mcp_url)) for way, (server, _, _) in ways.items()
        }
        for number in range(_WARM_CALLS + calls):
            for way, (_, tool, arguments) in ways.items():
                elapsed, _ = clients[way].call(tool, arguments, TOKEN)
                if number >= _WARM_CALLS:
                    samples[way].append(elapsed)
    figures = {way: latency(values) for way, values in samples.items()}
    direct = figures["direct to the upstream"]
    rows, floors = [], []
    for way, figure in figures.items():
        added = None if figure is direct else (figure["p50"] - direct["p50"], figure["p99"] - direct["p99"])
        rows.append([way, figure["n"], figure["p50"], figure["p99"], *(added or (None, None))])
        if added is not None:
            floors.append(
                Floor(
                    f"added latency of a proxied tools/call ({way.removeprefix('toolsearch, ')}): "
                    f"p50 <= {ADDED_P50_FLOOR_MS:g} ms",
                    f"+{added[0]:.2f} ms p50, +{added[1]:.2f} ms p99",
                    added[0] <= ADDED_P50_FLOOR_MS,
                )
            )
    return Section(
        name="overhead",
        data={"catalog_tools": CATALOG, "tool": READ_TOOL, "latency": figures},
        tables=[
            Table(
                f"A read-only tools/call ({READ_TOOL}) through toolsearch versus straight to the upstream",
                ["way", "calls", "p50 ms", "p99 ms", "added p50 ms", "added p99 ms"],
                rows,
                [
                    "Raw tools/call POSTs (2026-07-28, stateless), keep-alive, one at a time, interleaved; "
                    "the upstream is the demo MCP SDK server answering a canned result.",
                ],
            )
        ],
        floors=floors,
    )


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--sections", "overhead", *sys.argv[1:]]))
