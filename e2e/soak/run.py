"""Soak: many callers through three replicas behind nginx, on one Redis Cluster, with faults on the way.

Starts a Redis Cluster (three masters, three replicas, `redis-cli --cluster create`), an upstream
replaying 1,500 recorded tools (each token sees its own catalog of them), three toolsearch replicas
(`--redis-url redis+cluster://...`) and nginx in round-robin, all on loopback. For `--duration`
seconds, `--concurrency` workers visit `--callers` distinct tokens in turn: most share one of a few
catalogs, `--own-catalogs` of them have one of their own. A visit is one or two `search_tools` and
one `call_read_tool`. Along the way one Redis master is killed (its replica takes over) and brought
back, and one replica is restarted (taken out of nginx first, as a rolling restart would).

Prints, per minute, requests, errors and p50/p99 latency, the RSS of each replica and the Redis
Cluster's memory; writes e2e/soak/results/soak-<date>.json and .png. Exits non-zero when a request
failed or memory did not level off (the last quarter's peak more than 10 % above the third's).
Everything it starts, it stops.

    pip install -e '.[bench]'   # matplotlib, for the plot
    python e2e/soak/run.py [--duration 600] [--callers 10000] [--concurrency 24]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import importlib.util
import itertools
import json
import os
import platform
import random
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import redis

ROOT = Path(__file__).resolve().parents[2]
SERVICE_DIR = ROOT / "service"
sys.path[:0] = [str(SERVICE_DIR), str(ROOT)]

from bench.memory import ReplayedUpstream, rss_bytes  # noqa: E402
from toolsearch.testing import (  # noqa: E402
    DemoUpstream,
    RedisClusterServer,
    ServedProcess,
    base_url,
    free_port,
    nginx_binary,
    nginx_command,
    proxy_command,
    recorded_tools,
    serve_app,
    serve_process,
    write_round_robin_config,
)

RESULTS = Path(__file__).parent / "results"
TOOLS = 1500
SHARED_CATALOGS = (slice(0, TOOLS), slice(0, 400), slice(400, 650), slice(650, 800))
"""The few catalogs most callers share (slices of the 1,500 tools; the time tools are in each)."""
OWN_CATALOG_TOOLS = 100
QUERIES = (
    "open a pull request",
    "post to a channel",
    "what time is it in Tokyo",
    "restart a deployment",
    "refund a payment",
    "calendar events tomorrow",
    "unresolved errors this week",
    "query a table",
)
CLOCK = "time_get_current_time"
SAMPLE_SECONDS = 5.0
_PROBLEM = re.compile(r" ERROR |^\w+(Error|Exception)\b")
"""A replica's log line worth showing: an error, or the exception that follows it."""


def catalogs_of(tools: list[dict[str, Any]], callers: int, own: int) -> dict[str, list[dict[str, Any]]]:
    """`callers` tokens: `own` with 100 tools of their own choice, the others sharing a few catalogs."""
    clock = [tool for tool in tools if tool["name"].startswith("time_")]
    shared = [list({tool["name"]: tool for tool in clock + tools[part]}.values()) for part in SHARED_CATALOGS]
    catalogs = {f"shared-{n}": shared[n % len(shared)] for n in range(callers - own)}
    for n in range(own):
        picked = random.Random(n).sample(tools[len(clock) :], OWN_CATALOG_TOOLS)
        catalogs[f"own-{n}"] = clock + picked
    return catalogs


@dataclass
class Load:
    """What the workers saw: one (seconds since start, latency, ok) per request, and the errors."""

    started: float = field(default_factory=time.monotonic)
    requests: list[tuple[float, float, bool]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    callers: set[str] = field(default_factory=set)

    def record(self, began: float, ok: bool) -> None:
        now = time.monotonic()
        self.requests.append((began - self.started, now - began, ok))


async def call(
    http: httpx.AsyncClient, url: str, token: str, tool: str, arguments: dict[str, Any], load: Load
) -> None:
    """One JSON-RPC tools/call through the balancer; a failure is recorded, never raised."""
    began = time.monotonic()
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    answer = None
    try:
        response = await http.post(url, json=body, headers={"Authorization": f"Bearer {token}"})
        with suppress(ValueError):
            answer = response.json()
        ok = response.status_code == 200 and answer is not None and "error" not in answer
        ok = ok and not answer["result"].get("isError")
        if not ok:
            load.errors.append(f"{tool}: HTTP {response.status_code} {response.text[:200]!r}")
    except httpx.HTTPError as exc:
        ok = False
        load.errors.append(f"{tool}: {type(exc).__name__}: {exc}")
    load.record(began, ok)


async def worker(url: str, tokens: list[str], next_visit: Iterator[int], deadline: float, load: Load) -> None:
    # A connection per request: distinct callers do not share connections to the balancer.
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_keepalive_connections=0)) as http:
        while time.monotonic() < deadline:
            visit = next(next_visit)
            token = tokens[visit % len(tokens)]
            load.callers.add(token)
            searches = 1 + visit % 2
            for number in range(searches):
                query = QUERIES[(visit + number) % len(QUERIES)]
                await call(http, url, token, "search_tools", {"query": query, "schemas": False}, load)
            await call(
                http, url, token, "call_read_tool", {"name": CLOCK, "arguments": {"timezone": "UTC"}}, load
            )


class Replicas:
    """Three toolsearch processes on fixed ports, and nginx balancing over the ones in service."""

    def __init__(
        self, stack: ExitStack, upstream_url: str, redis_url: str, count: int, flags: list[str]
    ) -> None:
        self._upstream_url = upstream_url
        self._flags = [f"--redis-url={redis_url}", *flags]
        self.ports = [free_port() for _ in range(count)]
        self._running: dict[int, tuple[Any, ServedProcess]] = {}
        self.problems: list[str] = []
        """Error lines the replicas logged, read when each stops."""
        for port in self.ports:
            self._start(port)
        stack.callback(lambda: [self._stop(port) for port in list(self._running)])
        self._directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="toolsearch-nginx-")))
        self.balancer_port = free_port()
        config = write_round_robin_config(self._directory, self.balancer_port, self.ports, access_log=False)
        command = nginx_command(_nginx_binary(), self._directory, config)
        self._nginx = stack.enter_context(
            serve_process(command, url=base_url("127.0.0.1", self.balancer_port))
        )

    @property
    def url(self) -> str:
        return f"{base_url('127.0.0.1', self.balancer_port)}/mcp"

    def rss(self) -> dict[int, int]:
        return {port: rss_bytes(served.process.pid) for port, (_, served) in self._running.items()}

    def restart(self, port: int) -> None:
        """A rolling restart of one replica: out of nginx, stopped (SIGTERM), started, back in."""
        self._balance([other for other in self.ports if other != port])
        time.sleep(1.0)  # requests nginx already sent it finish
        self._stop(port)
        self._start(port)
        self._balance(self.ports)

    def _balance(self, ports: list[int]) -> None:
        write_round_robin_config(self._directory, self.balancer_port, ports, access_log=False)
        self._nginx.process.send_signal(signal.SIGHUP)  # reload: old workers finish their requests

    def _start(self, port: int) -> None:
        context = serve_process(
            proxy_command(self._upstream_url, port, *self._flags),
            url=base_url("127.0.0.1", port),
            env={"PYTHONPATH": str(SERVICE_DIR)},
        )
        self._running[port] = (context, context.__enter__())

    def _stop(self, port: int) -> None:
        context, served = self._running.pop(port)
        problems = [line for line in served.output().splitlines() if _PROBLEM.search(line)]
        self.problems.extend(f":{port} {line}" for line in problems)
        context.__exit__(None, None, None)


def _nginx_binary() -> str:
    found = nginx_binary()
    if found is None:
        raise SystemExit("nginx not found: install Debian's nginx (scripts/system-packages.sh)")
    return found


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000 if ordered else 0.0


def per_minute(load: Load, duration: float) -> list[dict[str, Any]]:
    rows = []
    for minute in range(int(-(-duration // 60))):
        inside = [(latency, ok) for at, latency, ok in load.requests if minute * 60 <= at < (minute + 1) * 60]
        latencies = [latency for latency, _ in inside]
        rows.append(
            {
                "minute": minute + 1,
                "requests": len(inside),
                "errors": sum(not ok for _, ok in inside),
                "p50_ms": round(percentile(latencies, 0.5), 1),
                "p99_ms": round(percentile(latencies, 0.99), 1),
            }
        )
    return rows


def levelled_off(samples: list[tuple[float, int]], duration: float) -> bool:
    """The last quarter's peak is at most 10 % above the third quarter's."""
    third = [value for at, value in samples if duration / 2 <= at < duration * 3 / 4]
    last = [value for at, value in samples if at >= duration * 3 / 4]
    return not third or not last or max(last) <= 1.10 * max(third)


@contextmanager
def sampling(replicas: Replicas, cluster: RedisClusterServer, load: Load) -> Iterator[list[dict[str, Any]]]:
    """Every 5 s, in a thread: each replica's RSS and each running Redis node's used_memory."""
    samples: list[dict[str, Any]] = []
    stop = asyncio.Event()

    async def sample() -> None:
        while not stop.is_set():
            rss, redis_memory = await asyncio.gather(
                asyncio.to_thread(replicas.rss), asyncio.to_thread(cluster_memory, cluster)
            )
            samples.append({"at": time.monotonic() - load.started, "rss": rss, "redis": redis_memory})
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SAMPLE_SECONDS)

    task = asyncio.ensure_future(sample())
    try:
        yield samples
    finally:
        stop.set()
        task.cancel()


def cluster_memory(cluster: RedisClusterServer) -> dict[int, int]:
    """used_memory of each running node; a node being killed or restarted right now is left out."""
    memory = {}
    for node in cluster.nodes:
        if node.running:
            try:
                memory[node.port] = node.used_memory()
            except redis.RedisError:  # killed or restarted right now
                continue
    return memory


async def faults(
    cluster: RedisClusterServer, replicas: Replicas, duration: float, load: Load
) -> list[dict[str, Any]]:
    """Kill a Redis master at 35 % of the run, bring it back at 50 %, restart a replica at 65 %."""
    events = []

    async def at(share: float) -> None:
        await asyncio.sleep(max(0.0, load.started + share * duration - time.monotonic()))

    def note(what: str) -> None:
        events.append({"at": round(time.monotonic() - load.started, 1), "event": what})
        print(f"  [{events[-1]['at']:7.1f} s] {what}", flush=True)

    await at(0.35)
    killed = cluster.kill_master()
    note(f"Redis master :{killed.port} killed (SIGKILL)")
    await asyncio.to_thread(cluster.wait_until_serving)
    note("its replica promoted: every slot served again")
    await at(0.50)
    await asyncio.to_thread(killed.start)
    note(f"Redis node :{killed.port} restarted (rejoins as a replica)")
    await at(0.65)
    port = replicas.ports[1]
    note(f"replica :{port} restarting (out of nginx, SIGTERM, started, back in)")
    await asyncio.to_thread(replicas.restart, port)
    note(f"replica :{port} back in service")
    return events


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (traffic, memory) = plt.subplots(2, 1, figsize=(10, 7.5), sharex=True)
    minutes = [row["minute"] - 0.5 for row in result["per_minute"]]
    traffic.bar(minutes, [row["requests"] / 60 for row in result["per_minute"]], width=0.8, color="#c8d7e8")
    traffic.set_ylabel("requests / s")
    latency = traffic.twinx()
    latency.plot(minutes, [row["p50_ms"] for row in result["per_minute"]], "o-", label="p50")
    latency.plot(minutes, [row["p99_ms"] for row in result["per_minute"]], "s-", label="p99")
    latency.set_ylabel("latency (ms)")
    latency.legend(loc="upper right")
    at = [sample["at"] / 60 for sample in result["samples"]]
    for port in result["replicas"]:
        rss = [sample["rss"].get(port) for sample in result["samples"]]
        memory.plot(
            at, [None if value is None else value / 2**20 for value in rss], label=f"replica :{port} RSS"
        )
    redis_total = [sum(sample["redis"].values()) / 2**20 for sample in result["samples"]]
    memory.plot(at, redis_total, "k--", label="Redis Cluster used_memory (all nodes)")
    memory.set_ylabel("MiB")
    memory.set_xlabel("minutes")
    memory.legend(loc="upper left", fontsize="small")
    for event in result["events"]:
        for axis in (traffic, memory):
            axis.axvline(event["at"] / 60, color="#999", linestyle=":", linewidth=1)
    figure.suptitle(
        f"soak: {result['callers']:,} callers, {result['requests']:,} requests, {result['errors']} errors"
        f" ({result['date']}, {result['machine']})",
        fontsize="medium",
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


async def soak(options: argparse.Namespace) -> int:
    if importlib.util.find_spec("matplotlib") is None:
        raise SystemExit("matplotlib not installed (it draws the plot): pip install -e '.[bench]'")
    # The time tools first, so that every catalog can call one; then the recorded catalog's others.
    clock = recorded_tools(servers=["time"])
    tools = clock + [tool for tool in recorded_tools() if tool not in clock][: TOOLS - len(clock)]
    catalogs = catalogs_of(tools, options.callers, options.own_catalogs)
    tokens = list(catalogs)
    random.Random(0).shuffle(tokens)
    with ExitStack() as stack:
        demo_base = stack.enter_context(serve_app(DemoUpstream(tools).app()))
        listings = {f"Bearer {token}": orjson.dumps({"tools": tools}) for token, tools in catalogs.items()}
        upstream = ReplayedUpstream(f"{demo_base}/mcp", listings)  # replayed: the upstream costs nothing
        upstream.results["tools/call"] = orjson.dumps({"content": [{"type": "text", "text": "10:00 UTC"}]})
        # Idle connections kept longer than the replicas' pool keeps them (5 s), as a gateway would.
        upstream_base = stack.enter_context(serve_app(upstream, keep_alive=75))
        cluster = stack.enter_context(RedisClusterServer(masters=3, replicas=1))
        flags = [f"--max-cached-catalogs={options.max_cached_catalogs}"]
        replicas = Replicas(stack, f"{upstream_base}/mcp", cluster.url, 3, flags)
        print(
            f"Redis Cluster {cluster.url}\nreplicas {replicas.ports} behind nginx {replicas.url}\n"
            f"{len(tokens):,} callers ({options.own_catalogs} with their own catalog), "
            f"{options.concurrency} workers, {options.duration:g} s\n",
            flush=True,
        )
        load = Load()
        deadline = load.started + options.duration
        visits = itertools.count()
        with sampling(replicas, cluster, load) as samples:
            events, *_ = await asyncio.gather(
                faults(cluster, replicas, options.duration, load),
                *(worker(replicas.url, tokens, visits, deadline, load) for _ in range(options.concurrency)),
            )
        health = [
            httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10).json()["catalog_store"]
            for port in replicas.ports
        ]
        result = summary(options, load, samples, events, replicas.ports, upstream.listings, health)
    show(result, load.errors, replicas.problems)
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"soak-{datetime.date.today().isoformat()}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1))
    plot(result, stem.with_suffix(".png"))
    print(f"wrote {stem.with_suffix('.json')} and {stem.with_suffix('.png')}")
    print("OK: no failed request; memory levelled off" if result["passed"] else "FAIL")
    return 0 if result["passed"] else 1


def summary(
    options: argparse.Namespace,
    load: Load,
    samples: list[dict[str, Any]],
    events: list[dict[str, Any]],
    ports: list[int],
    listings: int,
    health: list[dict[str, Any]],
) -> dict[str, Any]:
    duration = options.duration
    replica_levels = {
        port: levelled_off([(s["at"], s["rss"][port]) for s in samples if port in s["rss"]], duration)
        for port in ports
    }
    redis_level = levelled_off([(s["at"], sum(s["redis"].values())) for s in samples], duration)
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "duration_s": duration,
        "callers": options.callers,
        "callers_visited": len(load.callers),
        "own_catalogs": options.own_catalogs,
        "concurrency": options.concurrency,
        "max_cached_catalogs": options.max_cached_catalogs,
        "requests": len(load.requests),
        "errors": len(load.errors),
        "error_samples": load.errors[:20],
        "upstream_listings": listings,
        "per_minute": per_minute(load, duration),
        "events": events,
        "replicas": ports,
        "store_health": health,
        "levelled_off": {"replicas": replica_levels, "redis": redis_level},
        "passed": not load.errors and redis_level and all(replica_levels.values()),
        "samples": samples,
    }


def show(result: dict[str, Any], errors: list[str], problems: list[str]) -> None:
    print(f"\n{'minute':>6} {'requests':>9} {'errors':>7} {'p50 ms':>8} {'p99 ms':>8}")
    for row in result["per_minute"]:
        print(
            f"{row['minute']:>6} {row['requests']:>9} {row['errors']:>7}"
            f" {row['p50_ms']:>8} {row['p99_ms']:>8}"
        )
    ports = result["replicas"]
    print("\nMiB     " + "".join(f"  replica :{port}" for port in ports) + "  Redis (all nodes)")
    samples = result["samples"]
    for sample in samples[:: max(1, int(60 / SAMPLE_SECONDS))] + samples[-1:]:
        rss = "".join(f"{sample['rss'].get(port, 0) / 2**20:16.1f}" for port in ports)
        print(f"{sample['at']:6.0f} s{rss}{sum(sample['redis'].values()) / 2**20:19.1f}")
    print(
        f"\n{result['requests']:,} requests, {result['errors']} errors; {result['callers_visited']:,} callers"
        f" visited, {result['upstream_listings']:,} upstream listings"
    )
    print(f"store health at the end: {result['store_health']}")
    print(f"memory levelled off: {result['levelled_off']}")
    for error in errors[:10]:
        print(f"    error: {error}")
    for line in problems[:40]:
        print(f"    logged: {line}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of load (default 600)")
    parser.add_argument("--callers", type=int, default=10_000, help="distinct tokens (default 10,000)")
    parser.add_argument(
        "--own-catalogs", type=int, default=300, help="callers with a catalog of their own (300)"
    )
    parser.add_argument("--concurrency", type=int, default=24, help="workers sending requests (default 24)")
    parser.add_argument(
        "--max-cached-catalogs", type=int, default=256, help="each replica's --max-cached-catalogs (256)"
    )
    sys.exit(asyncio.run(soak(parser.parse_args())))
