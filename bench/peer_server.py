"""The peer: FastMCP's BM25 tool-search transform serving the recorded catalog, as its own server.

Runs under the peer's virtualenv (bench/.venv-peer, made by `bench.peer`), not toolsearch's:

    bench/.venv-peer/bin/python bench/peer_server.py --port 8100 --tools 1500

It registers the first N recorded tools (the same ones, in the same order, that toolsearch's
benchmark upstream serves) as FastMCP tools with their recorded definitions, each answering with
the demo upstream's canned result, and adds `BM25SearchTransform`, so clients see `search_tools`
and `call_tool` instead of the catalog. Served over streamable HTTP, stateless, JSON responses,
on 127.0.0.1 under uvicorn (uvloop and httptools, as toolsearch is served).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
from fastmcp import FastMCP
from fastmcp.server.transforms.search import BM25SearchTransform
from fastmcp.tools.base import Tool, ToolResult
from mcp_types import TextContent, ToolAnnotations
from starlette.requests import Request
from starlette.responses import JSONResponse

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))
# Only the catalog reader and the canned results, which need orjson and jsonschema alone: the
# canned module is loaded by its path, since toolsearch.testing's package imports redis and the SDK.
from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path

SERVICE_DIR = Path(__file__).resolve().parents[1] / "service"


def _canned_result() -> Callable[..., dict[str, Any]]:
    spec = importlib.util.spec_from_file_location(
        "canned", SERVICE_DIR / "toolsearch" / "testing" / "canned.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    canned: Callable[..., dict[str, Any]] = module.canned_result
    return canned


canned_result = _canned_result()


class RecordedTool(Tool):
    """A recorded tool definition that answers every call with the demo upstream's canned result."""

    recorded: dict[str, Any]

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        result = canned_result(self.recorded, arguments)
        content = [TextContent.model_validate(item) for item in result["content"]]
        return ToolResult(content=content, structured_content=result.get("structuredContent"))


def _annotations(raw: Any) -> ToolAnnotations | None:
    if not isinstance(raw, dict):
        return None
    try:
        return ToolAnnotations.model_validate(raw)
    except ValueError:
        return None


def recorded_tool(definition: dict[str, Any]) -> RecordedTool:
    schema = dict(definition.get("inputSchema") or {})
    # The MCP SDK refuses input schemas without `type: object` (11 recorded gitlab tools lack it).
    schema.setdefault("type", "object")
    output = definition.get("outputSchema")
    return RecordedTool(
        name=definition["name"],
        title=definition.get("title"),
        description=definition.get("description"),
        parameters=schema,
        output_schema=output if isinstance(output, dict) and output.get("type") == "object" else None,
        annotations=_annotations(definition.get("annotations")),
        recorded=definition,
    )


def build_server(tools: list[dict[str, Any]], max_results: int) -> FastMCP:
    server = FastMCP("fastmcp-bm25-peer")
    for definition in tools:
        server.add_tool(recorded_tool(definition))
    server.add_transform(BM25SearchTransform(max_results=max_results))

    @server.custom_route("/healthz", methods=["GET"])
    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tools", type=int, default=None, help="serve the first N recorded tools")
    parser.add_argument("--catalog", type=Path, default=None, help="catalog file (default: the recorded one)")
    parser.add_argument("--max-results", type=int, default=10, help="tools per search answer")
    args = parser.parse_args()
    tools = load_catalog_file(args.catalog or recorded_catalog_path())[: args.tools]
    app = build_server(tools, args.max_results).http_app(path="/mcp", stateless_http=True, json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
