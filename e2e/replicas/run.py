"""End to end: three toolsearch replicas sharing Redis, behind nginx in round-robin, in front of one upstream.

Starts a redis-server, a demo upstream (per-token catalogs, counting its listings), three replicas
(`toolsearch serve --redis-url ...`) and nginx (Debian's, config in a temporary directory, on a free
loopback port), then drives MCP SDK clients through the balancer: several callers, a few hundred
requests (searches, descriptions, read calls), in three phases: Redis up, Redis killed, Redis
restarted. Prints the upstream listings per caller, the requests each replica answered, errors and
latency, and exits non-zero when a request failed or a caller's catalog was listed more than once.
Everything it starts, it stops.

    python e2e/replicas/run.py [--callers 8] [--requests 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

SERVICE_DIR = Path(__file__).resolve().parents[2] / "service"
sys.path.insert(0, str(SERVICE_DIR))

from toolsearch.testing import (  # noqa: E402
    DEMO_SERVERS,
    DemoUpstream,
    RedisServer,
    base_url,
    bearer_visibility,
    free_port,
    nginx_binary,
    nginx_command,
    recorded_tools,
    serve_app,
    serve_process,
    serve_proxy_process,
    write_round_robin_config,
)

QUERIES = (
    "create an issue",
    "send a message",
    "current time",
    "list pods",
    "stock price",
    "search documents",
)


def _nginx_binary() -> str:
    found = nginx_binary()
    if found is None:
        raise SystemExit("nginx not found: install Debian's nginx (scripts/system-packages.sh)")
    return found


@contextmanager
def running_nginx(backends: list[int]) -> Iterator[tuple[str, Path]]:
    """nginx in the foreground, round-robin over `backends`; yields its URL and its access log."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="toolsearch-nginx-") as directory:
        root = Path(directory)
        config = write_round_robin_config(root, port, backends, access_log=True)
        with serve_process(nginx_command(_nginx_binary(), root, config), url=base_url("127.0.0.1", port)):
            yield base_url("127.0.0.1", port), root / "access.log"


@contextmanager
def running_replicas(upstream_url: str, redis_url: str, count: int) -> Iterator[list[int]]:
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            served = stack.enter_context(
                serve_proxy_process(
                    upstream_url, f"--redis-url={redis_url}", env={"PYTHONPATH": str(SERVICE_DIR)}
                )
            )
            ports.append(int(served.url.rsplit(":", 1)[1]))
        yield ports


async def run_caller(url: str, token: str, requests: int, latencies: list[float], errors: list[str]) -> None:
    """One MCP client session through the balancer: searches, descriptions and read-only calls in turn."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto") as client,
    ):
        found: list[str] = []
        for number in range(requests):
            started = time.perf_counter()
            try:
                if number % 3 == 0 or not found:
                    result = await client.call_tool("search_tools", {"query": QUERIES[number % len(QUERIES)]})
                    answer = json.loads(result.content[0].text) if not result.is_error else {}
                    found = [tool["name"] for item in answer.get("results", []) for tool in item["tools"]]
                elif number % 3 == 1:
                    result = await client.call_tool("describe_tool", {"names": found[:2]})
                else:
                    result = await client.call_tool(
                        "call_read_tool", {"name": "time_get_current_time", "arguments": {"timezone": "UTC"}}
                    )
                if result.is_error:
                    errors.append(f"{token}: {result.content[0].text[:200]}")
            except Exception as exc:
                errors.append(f"{token}: {type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - started)


async def phase(url: str, tokens: list[str], requests: int) -> tuple[list[float], list[str]]:
    latencies: list[float] = []
    errors: list[str] = []
    await asyncio.gather(*(run_caller(url, token, requests, latencies, errors) for token in tokens))
    return latencies, errors


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000


def report(
    name: str, latencies: list[float], errors: list[str], access_log: Path, replicas: list[int]
) -> None:
    lines = access_log.read_text().splitlines()
    answered = Counter(line.split()[0] for line in lines)
    access_log.write_text("")
    shares = ", ".join(f":{port} {answered.get(f'127.0.0.1:{port}', 0)}" for port in replicas)
    print(
        f"{name:<15} requests {len(latencies):>4}  errors {len(errors):>2}  latency ms"
        f" p50 {percentile(latencies, 0.5):6.1f}  p95 {percentile(latencies, 0.95):6.1f}"
        f"  p99 {percentile(latencies, 0.99):6.1f}  max {max(latencies) * 1000:6.1f}"
        f"  | HTTP requests per replica {shares}"
    )
    for error in errors[:10]:
        print(f"    error: {error}")


async def main(callers: int, requests: int) -> int:
    tokens = [f"caller-{number}" for number in range(callers)]
    # Each caller sees the time tools and its own mix of the demo servers: some callers see exactly the
    # same tools (they share one toolset), others overlap.
    catalogs = {
        token: {
            tool["name"]
            for tool in recorded_tools(
                servers=list(dict.fromkeys(["time", *DEMO_SERVERS[number % 3 :: 2 + number % 2]]))
            )
        }
        for number, token in enumerate(tokens)
    }
    upstream = DemoUpstream(
        recorded_tools(servers=list(DEMO_SERVERS)), visibility=bearer_visibility(catalogs)
    )
    failed = False
    with (
        RedisServer() as redis_server,
        serve_app(upstream.app()) as upstream_base,
        running_replicas(f"{upstream_base}/mcp", redis_server.url, 3) as replicas,
        running_nginx(replicas) as (balancer, access_log),
    ):
        url = f"{balancer}/mcp"
        print(f"redis {redis_server.url}, replicas {replicas}, nginx {balancer}, {callers} callers\n")
        latencies, errors = await phase(url, tokens, requests)
        report("redis up", latencies, errors, access_log, replicas)
        failed |= bool(errors)

        redis_server.kill()
        latencies, errors = await phase(url, tokens, max(6, requests // 3))
        report("redis killed", latencies, errors, access_log, replicas)
        failed |= bool(errors)

        redis_server.start()
        ready = [httpx.get(f"http://127.0.0.1:{port}/readyz").json()["catalog_store"] for port in replicas]
        while any(state["status"] != "up" for state in ready):
            await asyncio.sleep(0.2)
            ready = [
                httpx.get(f"http://127.0.0.1:{port}/readyz").json()["catalog_store"] for port in replicas
            ]
        latencies, errors = await phase(url, tokens, max(6, requests // 3))
        report("redis restarted", latencies, errors, access_log, replicas)
        failed |= bool(errors)

        listings = {token: upstream.list_calls[f"Bearer {token}"] for token in tokens}
        print(f"\nupstream tools/list per caller: {listings}")
        print(f"Redis outages seen by each replica: {[state['outages'] for state in ready]}")
    repeated = {token: count for token, count in listings.items() if count != 1}
    if repeated:
        print(f"FAIL: catalogs listed more than once (sharing broken): {repeated}")
    if failed:
        print("FAIL: some requests failed")
    if not (failed or repeated):
        print("OK: no failed request; each caller's catalog listed once for all replicas")
    return 1 if failed or repeated else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callers", type=int, default=8, help="distinct tokens (default 8)")
    parser.add_argument(
        "--requests", type=int, default=40, help="requests per caller with Redis up (default 40)"
    )
    options = parser.parse_args()
    sys.exit(asyncio.run(main(options.callers, options.requests)))
