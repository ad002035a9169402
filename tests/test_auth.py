"""OAuth pass-through: the upstream's refusal and its discovery documents reach the client unchanged."""

from __future__ import annotations

import httpx
import pytest

from tests.support.upstream import INITIALIZE


def test_upstream_401_reaches_the_client_with_its_www_authenticate(proxy_url: str, upstream) -> None:
    direct = httpx.post(
        upstream[0], json=INITIALIZE, headers={"Accept": "application/json, text/event-stream"}
    )
    via_proxy = httpx.post(proxy_url, json=INITIALIZE)
    assert direct.status_code == via_proxy.status_code == 401
    assert via_proxy.headers["www-authenticate"] == direct.headers["www-authenticate"]


def test_refused_token_is_not_cached_as_an_empty_catalog(proxy_url: str) -> None:
    first = httpx.post(proxy_url, json=INITIALIZE, headers={"Authorization": "Bearer unknown"})
    second = httpx.post(proxy_url, json=INITIALIZE, headers={"Authorization": "Bearer unknown"})
    assert first.status_code == second.status_code == 401


def test_modern_request_without_credentials_gets_the_upstreams_401(proxy_url: str) -> None:
    discover = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
    response = httpx.post(proxy_url, json=discover, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer ")


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server"]
)
def test_oauth_discovery_documents_are_proxied_from_the_upstream(proxy_url: str, upstream, path: str) -> None:
    origin = proxy_url.removesuffix("/mcp")
    upstream_origin = upstream[0].removesuffix("/mcp")
    via_proxy = httpx.get(origin + path)
    direct = httpx.get(upstream_origin + path)
    assert via_proxy.status_code == direct.status_code == 200
    assert via_proxy.json() == direct.json()
