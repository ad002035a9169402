"""Cold start: from a new caller's first request to its answer, at 1,500 and 5,000 tools.

    python -m bench.coldstart [--quick] [--model-dir DIR[,DIR...]]...

The first request is a `search_tools` call (raw POST, new connection) with a token toolsearch has
never seen, so the answer waits for the upstream listing, and for whatever else is not cached:

- fresh process: the first caller of a toolsearch process just started (nothing cached: every
  tool is interned and the index built; with a model, every tool embedded);
- new catalog, known tools: a new caller whose catalog differs from every earlier one by one tool
  (a new index over tools already interned, and embedded when there is a model);
- known catalog: a new caller whose catalog equals an earlier caller's (listing only: the index is
  shared);
- restart with --vector-cache-dir (hybrid only): a new process on the vector cache directory the
  last fresh process filled (each fresh hybrid process writes to its own new, empty one), from
  readiness and from the process's start; without the directory (and without Redis) a restart is
  a fresh process.

Each case is measured for bm25 and for every hybrid profile (each --model-dir); a quick run
measures the first profile only (and those naming its models with other serve flags, which the
run is then comparing), since a fresh hybrid process embeds the whole catalog (minutes on two
cores, more with companions). For reference, the upstream listing alone (a raw `tools/list`
to the upstream), and the peer's first search after it starts (it builds its index then; full
runs only, its start is slow).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.clients import PEER, TOOLSEARCH, RawClient, list_request
from bench.options import HybridProfile, Options, profiles_note
from bench.peer import peer_server
from bench.processes import (
    Server,
    running,
    split_serve_flags,
    toolsearch_server,
    upstream_server,
    with_vector_cache,
)
from bench.report import Section, Table
from bench.stats import latency
from bench.upstream_server import DROP_PREFIX

SIZES = (1500, 5000)
QUERY = "create an issue in a repository"
FIRST_TIMEOUT = 900.0
HYBRID_FRESH_PROCESSES = 2


def _first_search(url: str, token: str, dialect: Any = TOOLSEARCH) -> float:
    with RawClient(url, timeout=FIRST_TIMEOUT) as client:
        return client.call(dialect.search_tool, dialect.search_arguments(QUERY, 8), token)[0]


def _process_cases(
    options: Options, upstream: Server, processes: int, samples: int, model_dir: str | None
) -> dict[str, list[float]]:
    """First-request times of the three cases: the first caller of each of `processes` new processes,
    then in the last one `samples` new callers of a known catalog and `samples` of new catalogs.

    Hybrid processes wait for embedding (`toolsearch_server`): these are the times to a hybrid
    answer. `_first_answer` measures the default, BM25 while the catalog embeds."""
    cases: dict[str, list[float]] = {"fresh process": []}
    with tempfile.TemporaryDirectory(prefix="bench-vectors-") as vectors:
        for number in range(processes):
            server = toolsearch_server(upstream, service_dir=options.service_dir, model_dir=model_dir)
            if model_dir:
                server = with_vector_cache(server, Path(vectors) / str(number))
            with running(server):
                cases["fresh process"].append(_first_search(server.mcp_url, f"bench-fresh-{number}"))
                if number == processes - 1:
                    cases["new catalog, known tools"] = [
                        _first_search(server.mcp_url, f"{DROP_PREFIX}{n}-bench") for n in range(samples)
                    ]
                    cases["known catalog"] = [
                        _first_search(server.mcp_url, f"bench-known-{n}") for n in range(samples)
                    ]
        if model_dir:
            filled = Path(vectors) / str(processes - 1)
            cases.update(_restarts(options, upstream, model_dir, filled, samples))
    return cases


def _restarts(
    options: Options, upstream: Server, model_dir: str, vectors: Path, samples: int
) -> dict[str, list[float]]:
    """`samples` new processes on the vector cache directory a fresh process filled: each one's first
    (hybrid) search after it is ready, and the time from its start to that answer."""
    after_ready, after_start = [], []
    for number in range(samples):
        server = toolsearch_server(upstream, service_dir=options.service_dir, model_dir=model_dir)
        started = time.perf_counter()
        with running(with_vector_cache(server, vectors)):
            after_ready.append(_first_search(server.mcp_url, f"bench-restart-{number}"))
            after_start.append((time.perf_counter() - started) * 1000)
    return {
        "restart with --vector-cache-dir": after_ready,
        "restart with --vector-cache-dir, from process start": after_start,
    }


def _first_answer(options: Options, upstream: Server, model_dir: str) -> list[float]:
    """A fresh hybrid process's first answer with the default --embedding-wait (BM25 meanwhile)."""
    server = toolsearch_server(
        upstream, service_dir=options.service_dir, model_dir=model_dir, wait_for_hybrid=False
    )
    with running(server):
        return [_first_search(server.mcp_url, "bench-first-answer")]


def _listing(upstream: Server, samples: int) -> list[float]:
    with RawClient(upstream.mcp_url) as client:
        return [client.post(*list_request())[0] for _ in range(samples)]


def run(options: Options) -> Section:
    fresh_samples, warm_samples = options.pick((1, 3), (5, 10))
    profiles, skipped = _profiles(options)
    modes = [("bm25", None), *((profile.label, profile.model_dir) for profile in profiles)]
    figures: dict[str, dict[str, Any]] = {}
    for size in SIZES:
        print(f"bench: coldstart: {size:,} tools", file=sys.stderr, flush=True)
        upstream = upstream_server(size)
        with running(upstream):
            measured = {"upstream tools/list alone": _listing(upstream, warm_samples)}
            for mode, model_dir in modes:
                # A fresh hybrid process embeds the whole catalog: minutes on two cores.
                processes = min(fresh_samples, HYBRID_FRESH_PROCESSES) if model_dir else fresh_samples
                cases = _process_cases(options, upstream, processes, warm_samples, model_dir)
                measured.update({f"{mode}: {case}": times for case, times in cases.items()})
                if model_dir:
                    measured[f"{mode}: fresh process, first answer (BM25 while embedding)"] = _first_answer(
                        options, upstream, model_dir
                    )
            if not options.quick:
                peer = peer_server(size)
                with running(peer):
                    measured["peer: first search after start"] = [_first_search(peer.mcp_url, "", PEER)]
        figures[str(size)] = {name: latency(values) for name, values in measured.items()}
    rows = [
        [case, *(figures[str(size)].get(case, {}).get(key) for size in SIZES for key in ("n", "p50", "p99"))]
        for case in dict.fromkeys(case for by_case in figures.values() for case in by_case)
    ]
    rows += [[f"{label} (all cases): {reason}", *([None] * 6)] for label, reason in options.hybrid_gaps]
    columns = [
        "first request",
        *(f"{size:,} tools {key}" for size in SIZES for key in ("n", "p50 ms", "p99 ms")),
    ]
    return Section(
        name="coldstart",
        data={"query": QUERY, "figures": figures, "hybrid": _hybrid_status(options, profiles, skipped)},
        tables=[
            Table(
                "A new caller's first search, from request to answer",
                columns,
                rows,
                [
                    "Raw search_tools POST on a new connection with a token the process has not seen. "
                    "'fresh process': toolsearch just started; 'new catalog, known tools': the caller's "
                    "catalog differs from all earlier ones (a new index); 'known catalog': equal to an "
                    "earlier caller's (the index is shared). Hybrid rows wait for the catalog's hybrid "
                    "index (--embedding-wait=3600), but 'first answer': the default, answered by BM25 "
                    "once --embedding-wait (1 s) has passed while the catalog embeds. Each fresh hybrid "
                    "process writes its vectors to a new, empty --vector-cache-dir; 'restart with "
                    "--vector-cache-dir': a new process on the last one's directory (its first search "
                    "after it is ready, and from its start: loading the models included). Without the "
                    "directory and without Redis, a restart is a fresh process.",
                    *_profile_notes(profiles, skipped),
                    *(["The peer's first search is measured in full runs only."] if options.quick else []),
                ],
            )
        ],
    )


def _profiles(options: Options) -> tuple[list[HybridProfile], list[HybridProfile]]:
    """The hybrid profiles to measure and those a quick run leaves out (all but the first, unless
    the same models are asked for with other serve flags: then they are what the run compares)."""
    measured = list(options.measured_profiles)
    if not options.quick:
        return measured, []
    if not measured:
        return [], []
    first_models = split_serve_flags(measured[0].model_dir)[0]
    same_models = [p for p in measured if split_serve_flags(p.model_dir)[0] == first_models]
    return same_models, [p for p in measured if p not in same_models]


def _profile_notes(profiles: list[HybridProfile], skipped: list[HybridProfile]) -> list[str]:
    notes = profiles_note([*profiles, *skipped])
    if skipped:
        notes.append(
            f"Quick run: hybrid measured for the first profile only; {', '.join(p.label for p in skipped)} "
            "in full runs (each fresh hybrid process embeds the whole catalog)."
        )
    return notes


def _hybrid_status(
    options: Options, profiles: list[HybridProfile], skipped: list[HybridProfile]
) -> dict[str, str]:
    return (
        dict(options.hybrid_gaps)
        | {profile.label: "measured" for profile in profiles}
        | {profile.label: "not measured in a quick run" for profile in skipped}
    )


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--sections", "coldstart", *sys.argv[1:]]))
