"""`toolsearch search`: search a catalog file offline, for tuning and for a quick look; with
`--explain`, what each signal contributed to each hit ("why this tool?")."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

from toolsearch.catalog_file import CatalogFileError, load_catalog_tools, recorded_catalog_path
from toolsearch.commands import Subparsers, command_parser
from toolsearch.embedding import ModelError
from toolsearch.search import SearchHit, SearchIndex
from toolsearch.search.lexical import LexicalIndex
from toolsearch.tool import Tool

_DESCRIPTION_WIDTH = 80
_EXPLAINED_PARTS = 5
"""How many of a hit's largest contributions `--explain` prints."""


def search_catalog_file(path: str | Path, query: str, limit: int = 10) -> list[tuple[str, float]]:
    """The best `limit` tools of the catalog file for `query` by BM25F: (name, score), best first."""
    tools = load_catalog_tools(path)
    hits = LexicalIndex.build(tools).search(query, limit)
    return [(tools[hit.position].name, hit.score) for hit in hits]


def _index(tools: Sequence[Tool], model_dirs: Sequence[Path], query_runs: Executor) -> SearchIndex:
    if not model_dirs:
        return LexicalIndex.build(tools)
    from toolsearch.search.build import profile_index
    from toolsearch.search.profile import load_profile

    return profile_index(tools, load_profile(model_dirs, threads=2), query_runs=query_runs)


def _explained(index: SearchIndex, query: str, limit: int) -> list[tuple[SearchHit, dict[str, float]]]:
    """The best hits, each with its contributions; BM25F alone has one part, its score."""
    from toolsearch.search.hybrid import HybridIndex
    from toolsearch.search.offline.inspection import explain

    if isinstance(index, HybridIndex):
        return explain(index, query, limit)
    return [(hit, {"bm25f": hit.score}) for hit in index.search(query, limit)]


def verdict(results: Sequence[tuple[SearchHit, dict[str, float]]]) -> str:
    """What the proxy's answer would say of these hits (`metatools.answer`)."""
    if not results:
        return "matched: false (no tool matches; the proxy answers so)"
    if results[0][0].weak:
        return "matched: false (the best hit is weak: the proxy answers with the nearest 3 and a note)"
    return "matched: true"


def _first_line(description: str) -> str:
    line = description.strip().partition("\n")[0].strip()
    return line if len(line) <= _DESCRIPTION_WIDTH else line[: _DESCRIPTION_WIDTH - 1] + "…"


def _why(parts: dict[str, float]) -> str:
    largest = sorted((item for item in parts.items() if item[1]), key=lambda item: -abs(item[1]))
    return ", ".join(f"{name} {value:+.2f}" for name, value in largest[:_EXPLAINED_PARTS])


_DESCRIPTION = (
    "Rank the tools of a catalog file for a query: BM25F, or hybrid with --model-dir (which "
    "embeds the whole catalog first: minutes for thousands of tools)."
)


def add_search_command(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register `search`; the parsed arguments' `handler(args) -> int` carries it out (exit status)."""
    parser = command_parser(subparsers, "search", _DESCRIPTION)
    parser.add_argument(
        "--catalog",
        type=Path,
        default=None,
        help='catalog file, JSON or gzip of JSON: {"servers": [{"server", "tools"}]} '
        "(default: the recorded catalog shipped with toolsearch)",
    )
    parser.add_argument(
        "--model-dir",
        type=Path,
        action="append",
        default=[],
        help="a profile directory, or model directories (as `serve --model-dir`): hybrid search",
    )
    parser.add_argument("--limit", type=int, default=10, help="how many tools to show (default: 10)")
    parser.add_argument(
        "--explain", action="store_true", help="show what each signal added to each hit's score"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("query", help="what to search for, in any language")
    parser.set_defaults(handler=_run_search_command)
    return parser


def _run_search_command(args: argparse.Namespace) -> int:
    if args.limit < 1:
        print("toolsearch search: error: --limit must be at least 1", file=sys.stderr)
        return 2
    try:
        tools = load_catalog_tools(args.catalog or recorded_catalog_path())
        # A request's models run at once on these threads, as a proxy's do (`query_runs`).
        with ThreadPoolExecutor(thread_name_prefix="toolsearch-query-runs") as runs:
            results = _explained(_index(tools, args.model_dir, runs), args.query, args.limit)
    except (CatalogFileError, ModelError) as error:
        print(f"toolsearch search: error: {error}", file=sys.stderr)
        return 2
    mode = f"hybrid ({', '.join(map(str, args.model_dir))})" if args.model_dir else "BM25F (no --model-dir)"
    if args.json:
        rows = []
        for hit, parts in results:
            row = {"name": tools[hit.position].name, "score": round(hit.score, 4), "weak": hit.weak}
            row["description"] = _first_line(tools[hit.position].description)
            if args.explain:
                row["contributions"] = {name: round(value, 4) for name, value in parts.items()}
            rows.append(row)
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        print(f"search: {mode}; {verdict(results)}", file=sys.stderr)
        return 0
    print(f"search: {mode}; {verdict(results)}")
    if not results:
        return 0
    width = max(len(tools[hit.position].name) for hit, _ in results)
    print(f"{'#':>3}  {'tool':<{width}}  {'score':>7}  {'why' if args.explain else 'description'}")
    for rank, (hit, parts) in enumerate(results, start=1):
        tail = _why(parts) if args.explain else _first_line(tools[hit.position].description)
        print(f"{rank:>3}  {tools[hit.position].name:<{width}}  {hit.score:>7.2f}  {tail}")
    return 0
