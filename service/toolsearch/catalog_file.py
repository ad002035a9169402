"""Catalog files: the `tools/list` answers of several servers, as recorded for tests and tuning.

Format (plain JSON, or gzip of it): `{"servers": [{"server": NAME, "tools": [tool, ...]}, ...]}`.
A tool's qualified name is `<server>_<tool name>`, the way agentgateway names the tools of the
servers it aggregates.
"""

from __future__ import annotations

import gzip
import importlib.resources
import zlib
from pathlib import Path
from typing import Any

import orjson

from toolsearch.tool import Tool, ToolInterner

_GZIP_MAGIC = b"\x1f\x8b"


class CatalogFileError(ValueError):
    """The file is not a catalog file; the message says what is wrong with it."""


def recorded_catalog_path() -> Path:
    """The catalog shipped with the package: 150 public MCP servers' tools, recorded."""
    return Path(str(importlib.resources.files("toolsearch") / "data" / "catalog.json.gz"))


def load_catalog_file(path: str | Path) -> list[dict[str, Any]]:
    """Every tool definition of the file, in file order, named `<server>_<tool name>`."""
    try:
        raw = Path(path).read_bytes()
        catalog = orjson.loads(gzip.decompress(raw) if raw.startswith(_GZIP_MAGIC) else raw)
    except OSError as error:
        raise CatalogFileError(f"{path}: cannot read it ({error.strerror or error})") from None
    except (EOFError, zlib.error, orjson.JSONDecodeError) as error:
        raise CatalogFileError(f"{path}: not JSON, nor gzip of JSON ({error})") from None
    servers = catalog.get("servers") if isinstance(catalog, dict) else None
    if not isinstance(servers, list):
        raise CatalogFileError(f'{path}: expected an object {{"servers": [{{"server", "tools"}}, ...]}}')
    tools: list[dict[str, Any]] = []
    for number, entry in enumerate(servers):
        if not isinstance(entry, dict) or not isinstance(entry.get("server"), str):
            raise CatalogFileError(f"{path}: servers[{number}] has no string `server`")
        if not isinstance(entry.get("tools"), list):
            raise CatalogFileError(f"{path}: servers[{number}] ({entry['server']}) has no `tools` list")
        for position, tool in enumerate(entry["tools"]):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                raise CatalogFileError(f"{path}: servers[{number}].tools[{position}] has no string `name`")
            tools.append({**tool, "name": f"{entry['server']}_{tool['name']}"})
    return tools


def load_catalog_tools(path: str | Path) -> list[Tool]:
    """The tools of a catalog file (`load_catalog_file`), interned: equal definitions share one `Tool`."""
    interner = ToolInterner()
    return [interner.intern(definition) for definition in load_catalog_file(path)]
