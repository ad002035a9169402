"""Recorded tool definitions of public MCP servers (the package's recorded catalog), as the demo and
the tests serve them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path

DEMO_SERVERS: tuple[str, ...] = (
    "github",
    "slack",
    "sentry",
    "notion",
    "google-calendar",
    "gmail",
    "kubernetes-go",
    "stripe025",
    "hubspot",
    "supabase",
    "filesystem",
    "time",
    "yfinance",
    "linear-mcp",
    "git",
)
"""The recorded servers the demo serves: 15 varied public MCP servers, 268 tools."""


def recorded_tools(
    servers: Sequence[str] | None = None, limit: int | None = None, *, path: Path | None = None
) -> list[dict[str, Any]]:
    """Recorded tool definitions, named `<server>_<tool>` like agentgateway names aggregated tools.

    From the package's recorded catalog (or the catalog file at `path`). `servers` picks servers in
    the given order (default: all, in file order); `limit` keeps the first N tools. Each call returns
    fresh copies.
    """
    by_server = _recorded_servers(path or recorded_catalog_path())
    chosen = list(by_server) if servers is None else list(servers)
    unknown = [server for server in chosen if server not in by_server]
    if unknown:
        raise ValueError(f"no recorded server named {', '.join(unknown)}; known: {', '.join(by_server)}")
    tools = [tool for server in chosen for tool in by_server[server]][:limit]
    copies: list[dict[str, Any]] = orjson.loads(orjson.dumps(tools))
    return copies


@cache
def _recorded_servers(path: Path) -> dict[str, list[dict[str, Any]]]:
    by_server: dict[str, list[dict[str, Any]]] = {}
    for tool in load_catalog_file(path):
        # Server names never contain "_", so the first one ends the server part of a qualified name.
        by_server.setdefault(tool["name"].partition("_")[0], []).append(tool)
    return by_server
