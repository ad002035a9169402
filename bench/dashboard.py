"""The chart's Grafana dashboard, rendered from the metrics of a scripted run.

    python -m bench.dashboard                          # about 7 minutes
    python -m bench.dashboard --minutes 3 --model-dir models/use

Everything runs on 127.0.0.1: Redis, the demo upstream (recorded tools of the servers the dev
queries need), one `toolsearch serve` with `--stats`, and Prometheus (Debian's `prometheus`,
scraping the proxy every 2 s into a temporary directory). Simulated agents take dev queries: each
searches, then calls the query's gold tool with arguments made from its schema (so a call follows
the search at the gold tool's rank, or is a call of a tool the answer did not show), and some search
again, give up, mistype a name or call a tool without searching. Midway Redis is killed for 40 s and
later the upstream stops for 30 s. Then each panel of `charts/toolsearch/dashboards/toolsearch.json`
is drawn with matplotlib from Prometheus' answers to the panel's own queries (`$job` matches all,
`$__rate_interval` is 30 s) and written to `bench/results/dashboard-<date>.png`; the proxy's
`/stats` report is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import random
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench.clients import tools_call_request
from bench.processes import REPO_DIR
from toolsearch.commands.stats import fetch_report, format_report
from toolsearch.testing import (
    DemoUpstream,
    RedisServer,
    base_url,
    free_port,
    recorded_tools,
    serve_app,
    serve_process,
    serve_proxy_process,
)

DASHBOARD = REPO_DIR / "charts" / "toolsearch" / "dashboards" / "toolsearch.json"
QUERIES = REPO_DIR / "bench" / "data" / "queries-dev.jsonl"
RESULTS = REPO_DIR / "bench" / "results"
RATE_INTERVAL = "30s"
SCRAPE_SECONDS = 2
WINDOW_SECONDS = 20
AGENTS = 6
CATALOG_TOOLS = 500


def dev_queries() -> list[dict[str, Any]]:
    return [json.loads(line) for line in QUERIES.read_text().splitlines() if line.strip()]


def catalog_for(queries: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The recorded servers of the first queries' gold tools, up to about `CATALOG_TOOLS` tools, and
    the queries that catalog serves (unservable ones included)."""
    servers: list[str] = []
    tools: list[dict[str, Any]] = []
    for query in queries:
        for server in {name.split("_", 1)[0] for name in query["gold"]} - set(servers):
            servers.append(server)
            tools = recorded_tools(servers=servers)
        if len(tools) >= CATALOG_TOOLS:
            break
    names = {tool["name"] for tool in tools}
    return tools, [query for query in queries if set(query["gold"]) <= names]


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy the required properties of a simple schema."""
    samples = {"string": "x", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
    properties = schema.get("properties", {})
    arguments = {}
    for name in schema.get("required", []):
        spec = properties.get(name, {})
        kind = spec.get("type", "string")
        arguments[name] = (
            spec["enum"][0]
            if spec.get("enum")
            else samples.get(kind if isinstance(kind, str) else kind[0], "x")
        )
    return arguments


class Agent:
    """One caller (its own token) driving the proxy with raw JSON-RPC, as an MCP client would."""

    def __init__(self, url: str, token: str, schemas: dict[str, dict[str, Any]], rng: random.Random) -> None:
        self._url = url
        self._token = token
        self._schemas = schemas
        self._rng = rng

    async def call(self, http: httpx.AsyncClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        headers, body = tools_call_request(tool, arguments, self._token)
        try:
            response = await http.post(self._url, headers=headers, content=body, timeout=30)
            return response.json().get("result", {})
        except (httpx.HTTPError, ValueError):
            return {}

    async def search(self, http: httpx.AsyncClient, query: str) -> tuple[list[str], bool]:
        """The tools shown, best first, and whether the answer says they match."""
        result = await self.call(http, "search_tools", {"query": query, "schemas": False})
        try:
            answer = json.loads(result["content"][0]["text"])
        except (KeyError, IndexError, ValueError):
            return [], False
        names = [tool["name"] for part in answer["results"] for tool in part["tools"]]
        return names, all(part.get("matched", True) for part in answer["results"])

    async def use(self, http: httpx.AsyncClient, tool: str) -> None:
        arguments = arguments_for(self._schemas.get(tool, {}))
        await self.call(http, "call_write_tool", {"name": tool, "arguments": arguments})

    async def session(self, http: httpx.AsyncClient, query: dict[str, Any], others: list[str]) -> None:
        """What a model does with one request: the mix of behaviours is made up, the ranks are the
        search's own (it calls the gold tool when the answer shows it, else maybe the top one)."""
        roll = self._rng.random()
        if roll < 0.05:
            await self.use(http, self._rng.choice(others))  # a tool it remembers, no search
            return
        if roll < 0.09 and query["gold"]:
            await self.use(http, query["gold"][0][:-1])  # a name mistyped, before searching
        shown, matched = await self.search(http, query["query"])
        if roll > 0.85:
            shown, matched = await self.search(http, query["query"].split(",")[0][:60])  # rephrased
        gold = query["gold"][0] if query["gold"] else None
        if gold in shown:
            await self.use(http, gold)
        elif shown and matched and self._rng.random() < 0.5:
            await self.use(http, shown[0])  # a wrong pick: counted as followed, at rank 1
        else:
            await asyncio.sleep(WINDOW_SECONDS + 2)  # gives up; the next request comes later


async def drive(
    url: str, queries: list[dict[str, Any]], tools: list[dict[str, Any]], seconds: float, events: list
) -> None:
    """`AGENTS` agents running sessions until `seconds` pass; `events` are (at, coroutine factory)."""
    schemas = {tool["name"]: tool.get("inputSchema", {}) for tool in tools}
    names = sorted(schemas)
    rng = random.Random(14)
    started = time.monotonic()

    async def agent(index: int) -> None:
        me = Agent(url, f"agent-{index}", schemas, random.Random(index))
        async with httpx.AsyncClient() as http:
            while time.monotonic() - started < seconds:
                await me.session(http, rng.choice(queries), names)
                await asyncio.sleep(rng.uniform(0.3, 1.5))

    async def happen() -> None:
        for at, action in events:
            await asyncio.sleep(max(0.0, started + at - time.monotonic()))
            await asyncio.to_thread(action)

    await asyncio.gather(happen(), *(agent(index) for index in range(AGENTS)))


@contextmanager
def prometheus(target: str) -> Iterator[str]:
    binary = shutil.which("prometheus")
    if binary is None:
        raise SystemExit("bench.dashboard needs Prometheus: apt-get install prometheus (Debian)")
    with tempfile.TemporaryDirectory(prefix="toolsearch-prometheus-") as directory:
        config = Path(directory) / "prometheus.yml"
        config.write_text(
            f"global: {{scrape_interval: {SCRAPE_SECONDS}s, evaluation_interval: {SCRAPE_SECONDS}s}}\n"
            f"scrape_configs: [{{job_name: toolsearch, static_configs: [{{targets: ['{target}']}}]}}]\n"
        )
        port = free_port()
        command = [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={directory}/data",
            f"--web.listen-address=127.0.0.1:{port}",
        ]
        with serve_process(command, url=base_url("127.0.0.1", port), ready_path="/-/ready") as served:
            yield served.url


def query_range(prom: str, expr: str, start: float, end: float) -> list[dict[str, Any]]:
    expr = expr.replace("$__rate_interval", RATE_INTERVAL).replace("$job", ".*")
    answer = httpx.get(
        f"{prom}/api/v1/query_range",
        params={"query": expr, "start": start, "end": end, "step": SCRAPE_SECONDS},
    ).json()
    if answer.get("status") != "success":
        raise RuntimeError(f"Prometheus refused {expr}: {answer}")
    return answer["data"]["result"]


def legend(template: str, labels: dict[str, str]) -> str:
    for key, value in labels.items():
        template = template.replace("{{" + key + "}}", value)
    return template


_SCALE = {
    "percentunit": (100, "%"),
    "s": (1000, "ms"),
    "reqps": (1, "req/s"),
    "ops": (1, "/s"),
    "short": (1, ""),
}


def render(prom: str, start: float, end: float, marks: list[float], caption: str) -> Path:
    dashboard = json.loads(DASHBOARD.read_text())
    panels = [panel for panel in dashboard["panels"] if panel["type"] != "row"]
    rows = [panel for panel in dashboard["panels"] if panel["type"] == "row"]
    columns = 3
    figure, grid = plt.subplots(
        -(-len(panels) // columns), columns, figsize=(18, 3.2 * -(-len(panels) // columns))
    )
    for axes, panel in zip(grid.flat, panels, strict=False):
        factor, unit = _SCALE.get(panel["fieldConfig"]["defaults"]["unit"], (1, ""))
        for target in panel["targets"]:
            for series in query_range(prom, target["expr"], start, end):
                xs = [(float(t) - start) / 60 for t, _ in series["values"]]
                ys = [float(v) * factor for _, v in series["values"]]
                axes.plot(xs, ys, linewidth=1.2, label=legend(target["legendFormat"], series["metric"]))
        for at in marks:
            axes.axvline((at - start) / 60, color="grey", linestyle=":", linewidth=0.8)
        section = max(
            (row for row in rows if row["gridPos"]["y"] <= panel["gridPos"]["y"]),
            key=lambda r: r["gridPos"]["y"],
        )
        axes.set_title(f"{section['title']}: {panel['title']}", fontsize=9, loc="left")
        axes.set_ylabel(unit, fontsize=8)
        axes.set_ylim(bottom=0)
        axes.set_xlim(0, (end - start) / 60)
        axes.tick_params(labelsize=7)
        if axes.get_legend_handles_labels()[0]:
            axes.legend(fontsize=6.5, loc="upper left")
    for axes in grid.flat[len(panels) :]:
        axes.axis("off")
    for axes in grid[-1]:
        axes.set_xlabel("minutes into the run", fontsize=8)
    figure.suptitle(
        f"{dashboard['title']}: the chart's Grafana dashboard, drawn from Prometheus", fontsize=12
    )
    figure.text(0.01, 0.005, caption, fontsize=7, alpha=0.8)
    figure.tight_layout(rect=(0, 0.015, 1, 0.985))
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"dashboard-{datetime.date.today().isoformat()}.png"
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


class Restartable:
    """The demo upstream under uvicorn on a fixed port, stopped and started again for an outage."""

    def __init__(self, upstream: DemoUpstream, port: int) -> None:
        self._upstream = upstream
        self._port = port
        self._serving: Any = None
        self.url = f"{base_url('127.0.0.1', port)}/mcp"

    def start(self) -> None:
        self._serving = serve_app(self._upstream.app(), port=self._port)
        self._serving.__enter__()

    def stop(self) -> None:
        self._serving.__exit__(None, None, None)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=6.0, help="length of the scripted run (default 6)")
    parser.add_argument(
        "--model-dir", default="models/e5,models/use", help="serve's --model-dir ('' for BM25 only)"
    )
    args = parser.parse_args(argv)
    seconds = args.minutes * 60
    tools, queries = catalog_for(dev_queries())
    flags = [
        "--stats=true",
        f"--search-outcome-window={WINDOW_SECONDS}",
        "--catalog-ttl=30",
        "--log-level=warning",
    ]
    if args.model_dir:
        flags.append(f"--model-dir={args.model_dir}")
    upstream = Restartable(DemoUpstream(tools), free_port())
    marks: list[float] = []

    def marked(action: Any) -> Any:
        def run() -> None:
            marks.append(time.time())
            action()

        return run

    events = [
        (seconds * 0.35, marked(lambda: redis.kill())),
        (seconds * 0.35 + 40, marked(lambda: redis.start())),
        (seconds * 0.65, marked(upstream.stop)),
        (seconds * 0.65 + 30, marked(upstream.start)),
    ]
    with ExitStack() as stack:
        redis = stack.enter_context(RedisServer())
        upstream.start()
        stack.callback(lambda: upstream.stop())
        proxy = stack.enter_context(serve_proxy_process(upstream.url, *flags, f"--redis-url={redis.url}"))
        prom = stack.enter_context(prometheus(proxy.url.removeprefix("http://")))
        started = time.time()
        print(f"{len(tools)} tools, {len(queries)} dev queries; running {args.minutes:g} minutes", flush=True)
        asyncio.run(drive(f"{proxy.url}/mcp", queries, tools, seconds, events))
        time.sleep(3 * SCRAPE_SECONDS)
        report = fetch_report([proxy.url])
        print(format_report(report))
        caption = (
            f"{len(tools)} recorded tools, {AGENTS} simulated agents on dev queries, {args.minutes:g} min; "
            f"model {args.model_dir or 'none (BM25)'}; dotted lines: Redis killed and back, upstream stopped "
            f"and back. Searches followed by a call of a result: {report['followed_by_a_result']}."
        )
        path = render(prom, started, time.time(), marks, caption)
        print(f"wrote {path.relative_to(REPO_DIR)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
