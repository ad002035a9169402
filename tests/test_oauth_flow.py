"""A client's whole OAuth login through the proxy: the TypeScript SDK's OAuth client (discovery,
dynamic client registration, authorization with PKCE, token) against a real authorization server on
loopback, FastMCP's in-memory OAuth provider, which also guards the upstream MCP server."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from fastmcp import FastMCP
from fastmcp.server.auth.providers.in_memory import InMemoryOAuthProvider
from mcp.server.auth.settings import ClientRegistrationOptions

from tests.conftest import running_proxy
from tests.support.node import NODE, NODE_DIR, requires_node
from toolsearch.testing import free_port, serve_app

pytestmark = requires_node


@pytest.fixture(scope="module")
def protected_upstream() -> Iterator[str]:
    """An MCP server that takes only tokens of its own authorization server (both on one origin)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    auth = InMemoryOAuthProvider(
        base_url=base, client_registration_options=ClientRegistrationOptions(enabled=True)
    )
    server = FastMCP("oauth-upstream", auth=auth)

    @server.tool
    def echo_message(message: str) -> str:
        """Echo the message back."""
        return f"echo: {message}"

    with serve_app(server.http_app(path="/mcp"), port=port):
        yield f"{base}/mcp"


def _login_and_call(url: str) -> dict:
    finished = subprocess.run(
        [str(NODE), str(NODE_DIR / "oauth_flow.mjs"), url, "echo_message", json.dumps({"message": "hi"})],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=NODE_DIR,
    )
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout.strip().splitlines()[-1])


def test_the_typescript_sdk_logs_in_through_the_proxy_and_calls_a_tool(protected_upstream: str) -> None:
    with running_proxy(protected_upstream, pin=["echo_*"]) as proxy:
        answer = _login_and_call(proxy)
    assert answer["registered"] and answer["token"]
    assert answer["tools"][0] == "search_tools" and "echo_message" in answer["tools"]
    assert answer["result"]["content"][0]["text"] == "echo: hi"


def test_the_same_login_straight_to_the_upstream_works(protected_upstream: str) -> None:
    """The control: what the proxy must not break."""
    assert _login_and_call(protected_upstream)["result"]["content"][0]["text"] == "echo: hi"
