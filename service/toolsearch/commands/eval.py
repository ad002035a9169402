"""`toolsearch eval`: rank a query set over a catalog file and print its search quality
(the measures are `toolsearch.search.offline.evaluation`'s)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from toolsearch.commands import Subparsers, command_parser
from toolsearch.search.offline.evaluation import (
    QueryFileError,
    format_report,
    load_queries,
    outcome_rows,
    run_queries,
    summarize,
)

if TYPE_CHECKING:
    from toolsearch.search.build import Mode

_DESCRIPTION = (
    "Rank every query of a query set over a catalog file and print recall@1/5/10 and "
    "MRR@10 (overall and per language), abstention, and search latency."
)


def add_eval_command(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register `eval`; the parsed arguments' `handler(args) -> int` runs it (exit status)."""
    parser = command_parser(subparsers, "eval", _DESCRIPTION)
    parser.add_argument(
        "--catalog", type=Path, default=None, help="catalog file (default: the recorded catalog)"
    )
    parser.add_argument(
        "--queries",
        type=Path,
        required=True,
        help='JSON lines {"query", "lang", "gold": [qualified tool names]}; gold [] for unservable requests',
    )
    parser.add_argument(
        "--model-dir",
        type=Path,
        action="append",
        default=[],
        help="a profile directory, or an embedding model directory repeated to add companion models "
        "(as `serve --model-dir`)",
    )
    parser.add_argument(
        "--mode",
        choices=("bm25", "dense", "hybrid"),
        default=None,
        help="ranking to measure (default: hybrid with --model-dir, else bm25)",
    )
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads (default: 2)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write the report here")
    parser.set_defaults(handler=_run_eval_command)
    return parser


def _run_eval_command(args: argparse.Namespace) -> int:
    from toolsearch.catalog_file import CatalogFileError, load_catalog_tools, recorded_catalog_path
    from toolsearch.embedding import ModelError
    from toolsearch.embedding.embedder import usable_cores
    from toolsearch.search.build import profile_index
    from toolsearch.search.profile import Profile, load_profile

    mode: Mode = args.mode or ("hybrid" if args.model_dir else "bm25")
    if mode != "bm25" and not args.model_dir:
        print(f"toolsearch eval: error: --mode {mode} needs --model-dir", file=sys.stderr)
        return 2
    try:
        queries = load_queries(args.queries)
        tools = load_catalog_tools(args.catalog or recorded_catalog_path())
        profile = load_profile(args.model_dir, threads=args.threads) if mode != "bm25" else Profile((), None)
    except (QueryFileError, CatalogFileError, ModelError) as error:
        print(f"toolsearch eval: error: {error}", file=sys.stderr)
        return 2
    # A request's models run at once on these threads, as a proxy's do (`query_runs`).
    with ThreadPoolExecutor(usable_cores(), thread_name_prefix="toolsearch-query-runs") as runs:
        started = time.perf_counter()
        index = profile_index(tools, profile, mode=mode, query_runs=runs)
        built = time.perf_counter() - started
        outcomes = run_queries(index.search, [tool.name for tool in tools], queries)
    report = summarize(outcomes)
    report["index_seconds"] = built
    model = "".join(f", {model.name}" for model in profile.models) + (", learned" if profile.ranker else "")
    print(format_report(report, f"{mode}{model}: {len(queries)} queries over {len(tools)} tools"))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"mode": mode, **report, "queries": outcome_rows(outcomes)}, indent=2) + "\n",
            encoding="utf-8",
        )
    return 0
