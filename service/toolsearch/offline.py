"""`toolsearch search`: lexical search over a catalog file, offline, for tuning and for a quick look."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from toolsearch.catalog_file import CatalogFileError, load_catalog_file, recorded_catalog_path
from toolsearch.search.lexical import LexicalIndex
from toolsearch.tool import ToolInterner

_DESCRIPTION_WIDTH = 80


def search_catalog_file(path: str | Path, query: str, limit: int = 10) -> list[tuple[str, float]]:
    """The best `limit` tools of the catalog file for `query`: (qualified name, score), best first."""
    return [(name, score) for name, score, _ in _search(path, query, limit)]


def _search(path: str | Path, query: str, limit: int) -> list[tuple[str, float, str]]:
    interner = ToolInterner()
    tools = [interner.intern(definition) for definition in load_catalog_file(path)]
    hits = LexicalIndex.build(tools).search(query, limit)
    return [
        (tools[hit.position].name, hit.score, _first_line(tools[hit.position].description)) for hit in hits
    ]


def _first_line(description: str) -> str:
    line = description.strip().partition("\n")[0].strip()
    return line if len(line) <= _DESCRIPTION_WIDTH else line[: _DESCRIPTION_WIDTH - 1] + "…"


def add_search_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `search`; the parsed arguments' `handler(args) -> int` carries it out (exit status)."""
    parser = subparsers.add_parser(
        "search",
        help="search a catalog file offline (lexical ranking)",
        description="Rank the tools of a catalog file for a query with toolsearch's lexical (BM25F) search.",
    )
    parser.add_argument(
        "--catalog",
        type=Path,
        default=None,
        help='catalog file, JSON or gzip of JSON: {"servers": [{"server", "tools"}]} '
        "(default: the recorded catalog shipped with toolsearch)",
    )
    parser.add_argument("--limit", type=int, default=10, help="how many tools to show (default: 10)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("query", help="what to search for, in any language")
    parser.set_defaults(handler=_run_search_command)
    return parser


def _run_search_command(args: argparse.Namespace) -> int:
    if args.limit < 1:
        print("toolsearch search: error: --limit must be at least 1", file=sys.stderr)
        return 2
    try:
        results = _search(args.catalog or recorded_catalog_path(), args.query, args.limit)
    except CatalogFileError as error:
        print(f"toolsearch search: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        rows = [
            {"name": name, "score": round(score, 4), "description": line} for name, score, line in results
        ]
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    if not results:
        print("no tool matches")
        return 0
    width = max(len(name) for name, _, _ in results)
    print(f"{'#':>3}  {'tool':<{width}}  {'score':>7}  description")
    for rank, (name, score, line) in enumerate(results, start=1):
        print(f"{rank:>3}  {name:<{width}}  {score:>7.2f}  {line}")
    return 0
