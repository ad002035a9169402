"""Memory per caller: one replica's RSS and Redis `used_memory` with 1, 100 and 1,000 callers sharing
a 1,500-tool catalog.

    PYTHONPATH=service python bench/memory.py [--tools 1500] [--callers 1,100,1000]

Starts a redis-server, a demo upstream serving the first 1,500 recorded tools to every token, and two
toolsearch processes: one with `--redis-url`, one keeping catalogs in process (for comparison). Each
new caller (a distinct token) runs one `search_tools` through both, so each lists and caches its
catalog; after each step the replicas' RSS (/proc/PID/status VmRSS) and Redis `used_memory` are read.
The growth per caller should be a catalog entry (a pointer to the shared tool list), not the tools.
Prints a table and writes bench/results/memory-<date>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import platform
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import orjson

from toolsearch.testing import (
    DemoUpstream,
    RedisServer,
    recorded_tools,
    serve_app,
    serve_proxy_process,
)

RESULTS = Path(__file__).parent / "results"
SERVICE_DIR = Path(__file__).resolve().parents[1] / "service"
SEARCH = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "search_tools", "arguments": {"query": "create an issue", "schemas": False}},
}


class ReplayedUpstream:
    """Answers each JSON-RPC method with the answer the demo upstream gave to it once (ids patched).

    The demo upstream (MCP SDK) takes a few hundred milliseconds to serve 1,500 tools; replaying its
    bytes lets a thousand callers list their catalogs in reasonable time, and the proxy receives
    exactly what the real upstream sent. With `listings`, each caller's tools/list answer is the one
    given for its `Authorization` header instead.
    """

    def __init__(self, upstream_url: str, listings: Mapping[str, bytes] | None = None) -> None:
        self.results: dict[str, bytes] = {}
        self.listings = 0
        self._listings = listings or {}
        """tools/list results by `Authorization` header, for callers who see catalogs of their own."""
        for method in ("server/discover", "tools/list"):
            meta = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            response = httpx.post(
                upstream_url,
                json={"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": meta}},
                headers={
                    "MCP-Protocol-Version": "2026-07-28",
                    "Mcp-Method": method,
                    "Accept": "application/json, text/event-stream",
                },
                timeout=60,
            )
            response.raise_for_status()
            self.results[method] = orjson.dumps(orjson.loads(response.content)["result"])
        self.results["ping"] = b"{}"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = orjson.loads(body)
        self.listings += request["method"] == "tools/list"
        result = self.results[request["method"]]
        if request["method"] == "tools/list" and self._listings:
            result = self._listings[dict(scope["headers"]).get(b"authorization", b"").decode()]
        answer = b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (orjson.dumps(request["id"]), result)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": answer})


def rss_bytes(pid: int) -> int:
    """A process's resident memory, from /proc/PID/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc status")


async def add_callers(urls: list[str], first: int, last: int, concurrency: int = 4) -> None:
    """Callers `first`..`last - 1` each search once through every replica."""
    limit = asyncio.Semaphore(concurrency)

    async def one(http: httpx.AsyncClient, url: str, caller: int) -> None:
        async with limit:
            response = await http.post(url, json=SEARCH, headers={"Authorization": f"Bearer caller-{caller}"})
            answer = response.json()
            if "error" in answer or answer["result"].get("isError"):
                raise RuntimeError(f"search failed: {response.text[:300]}")

    async with httpx.AsyncClient(timeout=120) as http:
        await asyncio.gather(*(one(http, url, caller) for caller in range(first, last) for url in urls))


def mib(value: float) -> str:
    return f"{value / 2**20:8.1f}"


def main(tool_count: int, steps: list[int]) -> dict[str, Any]:
    tools = recorded_tools(limit=tool_count)
    rows = []
    with ExitStack() as stack:
        redis_server = stack.enter_context(RedisServer())
        with serve_app(DemoUpstream(tools, json_response=True).app()) as recorded:
            upstream = ReplayedUpstream(f"{recorded}/mcp")
        upstream_url = f"{stack.enter_context(serve_app(upstream))}/mcp"
        replicas = {}
        for name, flags in (("redis", [f"--redis-url={redis_server.url}"]), ("memory", [])):
            replicas[name] = stack.enter_context(
                serve_proxy_process(
                    upstream_url,
                    f"--max-cached-catalogs={max(steps)}",
                    *flags,
                    env={"PYTHONPATH": str(SERVICE_DIR)},
                )
            )
        urls = [f"{served.url}/mcp" for served in replicas.values()]
        baseline = {
            "redis_used": redis_server.used_memory(),
            **{n: rss_bytes(p.process.pid) for n, p in replicas.items()},
        }
        callers = 0
        for step in steps:
            asyncio.run(add_callers(urls, callers, step))
            callers = step
            with redis_server.client() as client:
                keys = {
                    kind: len(client.keys(f"toolsearch:{kind}:*")) for kind in ("catalog", "toolset", "tool")
                }
            rows.append(
                {
                    "callers": step,
                    "replica_rss_redis_mode": rss_bytes(replicas["redis"].process.pid),
                    "replica_rss_memory_mode": rss_bytes(replicas["memory"].process.pid),
                    "redis_used_memory": redis_server.used_memory(),
                    "redis_keys": keys,
                    "upstream_listings": upstream.listings,
                    "redis_failures": httpx.get(f"{replicas['redis'].url}/readyz").json()["catalog_store"][
                        "failures"
                    ],
                }
            )
    # Between the last two steps: the first callers also pay for the heap a listing warms up.
    first, last = rows[-2], rows[-1]
    span = last["callers"] - first["callers"]
    growth = {
        "replica_rss_redis_mode": (last["replica_rss_redis_mode"] - first["replica_rss_redis_mode"]) / span,
        "replica_rss_memory_mode": (last["replica_rss_memory_mode"] - first["replica_rss_memory_mode"])
        / span,
        "redis_used_memory": (last["redis_used_memory"] - first["redis_used_memory"]) / span,
    }
    return {
        "benchmark": "memory",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "tools": len(tools),
        "tool_definitions_bytes": sum(len(json.dumps(tool)) for tool in tools),
        "baseline_before_callers": baseline,
        "rows": rows,
        "growth_per_caller_bytes": growth,
    }


def print_table(result: dict[str, Any]) -> None:
    size = result["tool_definitions_bytes"] / 2**20
    print(f"{result['tools']} tools ({size:.1f} MiB of definitions as JSON); sizes in MiB\n")
    print("callers | replica RSS, Redis mode | replica RSS, in-process | Redis used_memory | Redis keys")
    print("------: | ---------------------: | ----------------------: | ----------------: | ----------")
    for row in result["rows"]:
        keys = ", ".join(f"{count} {kind}" for kind, count in row["redis_keys"].items())
        print(
            f"{row['callers']:>7} | {mib(row['replica_rss_redis_mode']):>22} "
            f"| {mib(row['replica_rss_memory_mode']):>23} | {mib(row['redis_used_memory']):>17} | {keys}"
        )
    growth = result["growth_per_caller_bytes"]
    print(
        f"\ngrowth per added caller (last step): replica "
        f"{growth['replica_rss_redis_mode'] / 1024:.1f} KiB (Redis mode), "
        f"{growth['replica_rss_memory_mode'] / 1024:.1f} KiB (in-process); "
        f"Redis {growth['redis_used_memory']:.0f} bytes"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=1500)
    parser.add_argument("--callers", default="1,100,1000", help="comma-separated caller counts, increasing")
    options = parser.parse_args()
    result = main(options.tools, [int(count) for count in options.callers.split(",")])
    print_table(result)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"memory-{result['date'][:10]}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwritten to {path}")
