"""`toolsearch demo`: the proxy in front of a demo upstream with a few hundred real recorded tools.

It starts the demo upstream (recorded definitions of 15 public MCP servers, canned answers, no real
service contacted), starts the proxy in front of it, searches and calls a tool through the proxy with
the MCP SDK client, prints what happened, and keeps serving so a person can connect Claude Code or
the MCP Inspector to it.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from collections.abc import Mapping
from contextlib import ExitStack
from types import FrameType
from typing import Any

import orjson
from mcp import Client
from mcp_types import CallToolResult, TextContent

from toolsearch.commands import Subparsers, command_parser
from toolsearch.settings import Settings
from toolsearch.testing import DEMO_SERVERS, DemoUpstream, example_arguments, recorded_tools, serve_app

DEMO_QUERY = "latest stock price and analyst price targets for Apple"
_ARGUMENT_HINTS = {"symbol": "AAPL", "ticker": "AAPL", "query": "Apple"}
"""Values for the call the demo makes, used where the found tool has a parameter of that name."""
_SHOWN_RESULTS = 5
_DEMO_EMBEDDING_WAIT = 600.0
"""Seconds the demo's first search may wait for the catalog to be embedded (it shows hybrid search)."""


_DESCRIPTION = __doc__.splitlines()[0] if __doc__ else None


def add_demo_command(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register `toolsearch demo` on the CLI's subparsers; its handler is `run_demo(args) -> int`."""
    parser = command_parser(subparsers, "demo", _DESCRIPTION)
    parser.add_argument("--host", default="127.0.0.1", help="address the proxy listens on [127.0.0.1]")
    parser.add_argument("--port", type=int, default=8090, help="port of the proxy; 0 picks a free one [8090]")
    parser.add_argument(
        "--once", action="store_true", help="run the scripted search and call, then exit (for tests and CI)"
    )
    parser.add_argument(
        "--model-dir",
        dest="model_dir",
        default=None,
        help="a profile directory, or model directories comma-separated (as `serve --model-dir`)",
    )
    parser.set_defaults(handler=run_demo)
    return parser


def run_demo(args: argparse.Namespace) -> int:
    """Start both servers, run the scripted client, then serve until Ctrl-C (or exit with `--once`)."""
    from toolsearch.transport.http import create_app

    tools = recorded_tools(DEMO_SERVERS)
    upstream = DemoUpstream(tools, instructions=_upstream_instructions(len(tools)))
    with ExitStack() as running:
        # SIGTERM stops the demo as Ctrl-C does: both servers shut down, then the process exits.
        running.callback(signal.signal, signal.SIGTERM, signal.signal(signal.SIGTERM, _interrupt))
        upstream_url = running.enter_context(serve_app(upstream.app())) + upstream.path
        settings = Settings(upstream=upstream_url, host=args.host, port=args.port, **_model_settings(args))
        proxy = create_app(settings)
        try:
            proxy_base = running.enter_context(serve_app(proxy, host=args.host, port=args.port))
        except RuntimeError as exc:
            print(f"toolsearch demo: no proxy on {args.host}:{args.port}: {exc}", file=sys.stderr)
            return 1
        proxy_url = proxy_base + settings.path
        print("toolsearch demo")
        print(f"  upstream: {upstream_url}, {len(tools)} recorded tools of {len(DEMO_SERVERS)} public MCP")
        print("            servers; calls get a canned answer, no real service is contacted")
        print(f"  proxy:    {proxy_url}")
        print(f"  search:   {_search_kind(args)}\n")
        try:
            asyncio.run(_scripted_client(proxy_url, {tool["name"]: tool for tool in tools}))
        except Exception as exc:
            print(f"The scripted search and call failed: {_innermost(exc)!r}")
            if args.once:
                return 1
        if args.once:
            return 0
        _print_connect_hints(proxy_url)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("\nStopping.", flush=True)
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _search_kind(args: argparse.Namespace) -> str:
    if args.model_dir:
        return f"hybrid: BM25F and the embedding models of {args.model_dir}"
    return "BM25F only (lexical); --model-dir models/default adds the embedding models (`make demo`)"


async def _scripted_client(proxy_url: str, upstream_tools: Mapping[str, Mapping[str, Any]]) -> None:
    async with Client(proxy_url) as client:
        listed = await client.list_tools()
        print(f"The proxy lists {len(listed.tools)} tools: {', '.join(tool.name for tool in listed.tools)}\n")

        search_arguments = {"query": DEMO_QUERY}
        print(f"search_tools {_json(search_arguments)}")
        found = orjson.loads(_text(await client.call_tool("search_tools", search_arguments)))
        hits = found["results"][0]["tools"]
        print(f"  {len(hits)} of {found['total']} tools; the best {min(len(hits), _SHOWN_RESULTS)}:")
        for rank, hit in enumerate(hits[:_SHOWN_RESULTS], 1):
            kind = {True: "read-only", "inferred": "read, inferred"}.get(hit.get("readOnly"), "write")
            print(f"  {rank}. {hit['name']} [{kind}] {_first_line(hit.get('description', ''))}")

        # An inferred read goes through call_read_tool only with --read-inferred: a marked one always.
        best = next((hit for hit in hits if hit.get("readOnly") is True), None)
        if best is None:
            print("\nNo read-only tool among the results, so nothing is called.")
            return
        schema = best.get("inputSchema") or upstream_tools[best["name"]].get("inputSchema") or {}
        call_arguments = {"name": best["name"], "arguments": _demo_arguments(schema)}
        print(f"\ncall_read_tool {_json(call_arguments)}")
        called = await client.call_tool("call_read_tool", call_arguments)
        if called.is_error:
            raise RuntimeError(f"call_read_tool answered with an error: {_text(called)}")
        print(f"  {_text(called)}\n")


def _demo_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        properties = {}
    hinted = {name: value for name, value in _ARGUMENT_HINTS.items() if name in properties}
    return {**example_arguments(schema), **hinted}


def _print_connect_hints(proxy_url: str) -> None:
    print(f"The proxy keeps serving at {proxy_url} (Ctrl-C stops it). Connect:")
    print(f"  Claude Code:    claude mcp add --transport http toolsearch {proxy_url}")
    print(f"  MCP Inspector:  npx @modelcontextprotocol/inspector --transport http --server-url {proxy_url}")
    print(f"                  (or open it and connect with transport Streamable HTTP to {proxy_url})")


def _upstream_instructions(tool_count: int) -> str:
    return (
        f"toolsearch demo upstream: recorded definitions of {tool_count} tools of {len(DEMO_SERVERS)} "
        f"public MCP servers ({', '.join(DEMO_SERVERS)}). Every call returns a canned result; no real "
        "service is contacted."
    )


def _model_settings(args: argparse.Namespace) -> dict[str, Any]:
    model_dir = getattr(args, "model_dir", None)
    return {"model_dir": model_dir, "embedding_wait": _DEMO_EMBEDDING_WAIT} if model_dir else {}


def _innermost(exc: BaseException) -> BaseException:
    """The first real error inside the task-group wrappers the MCP SDK client raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def _first_line(text: str, limit: int = 90) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()
