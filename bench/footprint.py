"""Memory of a toolsearch process with a search profile: the served process's RSS after start, with
a catalog and after searches, and a breakdown of what it holds, part by part.

    python -m bench.footprint --model-dir PROFILE [--service-dir DIR --label NAME]... [--tools 1500]

Each `--service-dir` (repeatable, with a `--label` each; default: this checkout's service/) is one
toolsearch source tree, measured side by side in one run: the code before a change beside the code
after it. For each one:

- served: `toolsearch serve --model-dir PROFILE` starts in front of a demo upstream serving the
  first `--tools` recorded tools; its memory is read once it is ready (the models loaded), after
  one caller's catalog is indexed (hybrid, its vectors embedded), and after every dev query has been
  searched once. Each tree embeds the catalog itself (no vector cache is shared: embedding is part
  of what a process holds memory for).
- breakdown: a process of its own, the tree first on the path, takes the same steps one part at a
  time (imports; each model's tokenizer, then the model whole; the ranker; the dictionaries; the
  catalog's hybrid index, embedded; the dev queries), reading its memory after each, so that the
  growth at each step is what that part holds (a tokenizer counted in its step is dropped before
  its model loads its own).

Memory is read from /proc/PID/status: VmRSS (resident), RssAnon (the heap: what the process
allocated), RssFile (mapped files: shared libraries, and any data mapped rather than read) and
VmHWM (the highest VmRSS so far: what a memory limit must leave room for). Prints tables; writes
bench/results/footprint-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.clients import RawClient, tools_call_request
from bench.processes import (
    REPO_DIR,
    SERVICE_DIR,
    python_path,
    running,
    set_up_as_serve,
    toolsearch_server,
    upstream_server,
)
from bench.report import RESULTS_DIR, machine
from bench.stats import dev_queries

TOKEN = "bench-footprint"
EMBEDDING_TIMEOUT = 1800.0
"""Seconds the first search may take: the catalog is embedded then."""
FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")
"""The /proc/PID/status lines read, each in MB."""

Figures = dict[str, float]


def memory(pid: int | str = "self") -> Figures:
    """A process's `FIELDS` in MB (2**20 bytes), from /proc/PID/status."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in FIELDS:
            found[name] = round(int(value.split()[0]) / 1024, 1)
    return found


def _search(client: RawClient, query: str) -> None:
    client.post(*tools_call_request("search_tools", {"query": query, "limit": 10}, TOKEN))


def served(service_dir: Path, model_dir: str, tools: int) -> dict[str, Figures]:
    """The served process's memory at each stage."""
    upstream = upstream_server(tools)
    server = toolsearch_server(upstream, service_dir=service_dir, model_dir=model_dir)
    queries = [query["query"] for query in dev_queries()]
    with running(upstream, server) as (_, proxy):
        stages = {"ready": memory(proxy.pid)}
        with RawClient(server.mcp_url, timeout=EMBEDDING_TIMEOUT) as client:
            _search(client, queries[0])
            stages["catalog indexed"] = memory(proxy.pid)
            for query in queries:
                _search(client, query)
        stages["after searches"] = memory(proxy.pid)
    return stages


def _parts(model_dir: str, tools: int) -> None:
    """The breakdown process: each step's memory, one JSON line each."""
    import gc

    def step(name: str) -> None:
        gc.collect()
        print(json.dumps({"step": name, **memory()}), flush=True)

    step("python, bench (its imports)")
    import toolsearch.proxy
    import toolsearch.transport.http  # noqa: F401  (what `serve` imports)

    step("toolsearch imported")
    from toolsearch.catalog_file import load_catalog_tools, recorded_catalog_path
    from toolsearch.embedding.embedder import load_model
    from toolsearch.embedding.manifest import TOKENIZER_FILE, read_manifest
    from toolsearch.embedding.tokenizer import load_tokenizer
    from toolsearch.search.build import profile_index
    from toolsearch.search.dictionaries import Dictionaries
    from toolsearch.search.profile import Profile, profile_paths
    from toolsearch.search.ranking import Ranker

    set_up_as_serve()
    paths = profile_paths([model_dir])
    catalog = load_catalog_tools(recorded_catalog_path())[:tools]
    step("catalog read")
    models = []
    for path in paths.models:
        tokenizer = load_tokenizer(path / TOKENIZER_FILE, read_manifest(path).max_tokens)
        step(f"{path.name} tokenizer")
        del tokenizer
        models.append(load_model(path, threads=1, workers=2))
        step(f"{path.name} model (tokenizer, ONNX sessions)")
    ranker = Ranker.load(paths.ranker) if paths.ranker else None
    step("ranker")
    dictionaries = Dictionaries.load(paths.dictionaries) if paths.dictionaries else None
    step("dictionaries")
    index = profile_index(catalog, Profile(tuple(models), ranker, dictionaries))
    step(f"catalog indexed ({len(catalog):,} tools)")
    for query in dev_queries():
        index.search(query["query"], 10)
    step("after searches")
    for model in models:
        model.close()


def breakdown(service_dir: Path, model_dir: str, tools: int) -> dict[str, Figures]:
    """Each step's memory in a process running `service_dir`'s tree."""
    command = [
        sys.executable,
        "-m",
        "bench.footprint",
        "--model-dir",
        model_dir,
        "--tools",
        str(tools),
        "--parts",
    ]
    output = subprocess.run(
        command,
        cwd=REPO_DIR,
        env={**os.environ, **python_path(service_dir)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    steps = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    return {entry.pop("step"): entry for entry in steps}


def _cell(figures: Figures) -> str:
    return "{VmRSS:,.0f} ({RssAnon:,.0f} anon, {RssFile:,.0f} file)".format(**figures)


def _table(title: str, results: dict[str, dict[str, Figures]]) -> None:
    print(f"\n| {title} | " + " | ".join(results) + " |")
    print("|---|" + "---|" * len(results))
    stages = list(next(iter(results.values())))
    for stage in stages:
        cells = []
        for figures in results.values():
            each = figures.get(stage)
            cells.append("" if each is None else _cell(each))
        print(f"| {stage} | " + " | ".join(cells) + " |")
    peaks = [max(figures["VmHWM"] for figures in stages_of.values()) for stages_of in results.values()]
    print("| peak (VmHWM) | " + " | ".join(f"{peak:,.0f}" for peak in peaks) + " |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True, help="the profile (serve's --model-dir value)")
    parser.add_argument("--service-dir", type=Path, action="append", default=[], help="a source tree")
    parser.add_argument("--label", action="append", default=[], help="a name for each --service-dir")
    parser.add_argument("--tools", type=int, default=1500, help="catalog size (default: 1500)")
    parser.add_argument("--parts", action="store_true", help=argparse.SUPPRESS)  # the breakdown's process
    args = parser.parse_args(argv)
    if args.parts:
        _parts(args.model_dir, args.tools)
        return 0
    service_dirs = args.service_dir or [SERVICE_DIR]
    labels = args.label or [str(directory) for directory in service_dirs]
    if len(labels) != len(service_dirs):
        parser.error("give one --label per --service-dir")
    trees = dict(zip(labels, (directory.resolve() for directory in service_dirs), strict=True))
    results = {label: served(directory, args.model_dir, args.tools) for label, directory in trees.items()}
    parts = {label: breakdown(directory, args.model_dir, args.tools) for label, directory in trees.items()}
    _table(f"served, {args.tools:,} tools: MB", results)
    _table(f"breakdown, {args.tools:,} tools: MB after each step", parts)
    day = dt.date.today().isoformat()
    report = {
        "date": day,
        "machine": machine(),
        "model_dir": args.model_dir,
        "tools": args.tools,
        "memory_mb": results,
        "breakdown_mb": parts,
    }
    (RESULTS_DIR / f"footprint-{day}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
