"""Shared fixtures: a real upstream MCP server and the proxy, both under uvicorn on loopback,
driven by the official MCP SDK client in both protocol modes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from toolsearch.runtime import Supervisor
from toolsearch.settings import Settings
from toolsearch.testing import DemoUpstream, bearer_visibility, recorded_tools, serve_app
from toolsearch.transport.http import create_app

pytest_plugins = ["tests.support.fast_tier"]

X_SERVERS = ("github", "slack", "notion", "google-calendar", "filesystem", "time", "yfinance", "stripe025")
Y_SERVERS = ("gitlab", "linear-mcp", "sentry", "hubspot", "kubernetes-go", "time")
TOKEN_X = "token-x"
TOKEN_Y = "token-y"
UPSTREAM_INSTRUCTIONS = "Upstream gateway: tools are named <server>_<tool>."


def _names(servers: tuple[str, ...]) -> set[str]:
    return {tool["name"] for tool in recorded_tools(servers=list(servers))}


@pytest.fixture
async def supervisor() -> AsyncIterator[Supervisor]:
    """An owner of the tasks and pools a test's parts start, closed after the test, as a proxy's is."""
    owner = Supervisor()
    yield owner
    await owner.aclose()


@pytest.fixture(scope="session")
def catalog_tools() -> list[dict[str, Any]]:
    """A few hundred recorded tools from real public MCP servers."""
    servers = list(dict.fromkeys(X_SERVERS + Y_SERVERS))
    return recorded_tools(servers=servers)


@pytest.fixture(scope="session")
def x_names() -> set[str]:
    return _names(X_SERVERS)


@pytest.fixture(scope="session")
def y_names() -> set[str]:
    return _names(Y_SERVERS)


@contextmanager
def running_upstream(tools: list[dict[str, Any]], **options: Any) -> Iterator[tuple[str, DemoUpstream]]:
    upstream = DemoUpstream(tools, **options)
    with serve_app(upstream.app()) as base:
        yield f"{base}/mcp", upstream


@contextmanager
def running_proxy(upstream_url: str, **settings: Any) -> Iterator[str]:
    with serve_app(create_app(Settings(upstream=upstream_url, **settings))) as base:
        yield f"{base}/mcp"


@pytest.fixture(scope="session")
def upstream(catalog_tools: list[dict[str, Any]]) -> Iterator[tuple[str, DemoUpstream]]:
    """Token X sees one set of servers, token Y another; no token gets 401 with WWW-Authenticate."""
    visibility = bearer_visibility({TOKEN_X: _names(X_SERVERS), TOKEN_Y: _names(Y_SERVERS)})
    with running_upstream(
        catalog_tools, visibility=visibility, require_auth=True, instructions=UPSTREAM_INSTRUCTIONS
    ) as served:
        yield served


@pytest.fixture(scope="session")
def proxy_url(upstream: tuple[str, DemoUpstream]) -> Iterator[str]:
    with running_proxy(upstream[0], write_tools=["filesystem_read_media_*"]) as url:
        yield url


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    """`auto` negotiates protocol 2026-07-28; `legacy` the 2025-11-25 initialize handshake."""
    return request.param


@asynccontextmanager
async def connect(
    url: str,
    token: str | None = None,
    mode: str = "auto",
    options: dict[str, Any] | None = None,
    **headers: str,
) -> AsyncIterator[Client]:
    """An MCP SDK client on `url`, sending `Authorization: Bearer <token>` when a token is given;
    `options` are the client's own (`logging_callback`, `log_level`, ...)."""
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, **(options or {})) as client,
    ):
        yield client


async def call_json(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a meta-tool that answers JSON text, and decode it."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def call_text(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    result = await client.call_tool(tool, arguments)
    return bool(result.is_error), "\n".join(getattr(item, "text", "") for item in result.content)
