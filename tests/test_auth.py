"""OAuth through the proxy: the upstream's refusal reaches the client, and the proxy presents itself
as the protected resource, with the upstream's authorization servers and scopes."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import running_proxy
from tests.support.upstream import INITIALIZE, modern_request
from toolsearch.mcp.oauth import challenge_for, metadata_url, public_resource


def test_upstream_401_reaches_the_client_pointing_at_the_proxys_resource_metadata(
    proxy_url: str, upstream
) -> None:
    direct = httpx.post(
        upstream[0], json=INITIALIZE, headers={"Accept": "application/json, text/event-stream"}
    )
    via_proxy = httpx.post(proxy_url, json=INITIALIZE)
    assert direct.status_code == via_proxy.status_code == 401
    expected = challenge_for(direct.headers["www-authenticate"], proxy_url)
    assert via_proxy.headers["www-authenticate"] == expected
    assert f'resource_metadata="{metadata_url(proxy_url)}"' in expected
    assert httpx.get(metadata_url(proxy_url)).json()["resource"] == proxy_url


def test_refused_token_is_not_cached_as_an_empty_catalog(proxy_url: str) -> None:
    first = httpx.post(proxy_url, json=INITIALIZE, headers={"Authorization": "Bearer unknown"})
    second = httpx.post(proxy_url, json=INITIALIZE, headers={"Authorization": "Bearer unknown"})
    assert first.status_code == second.status_code == 401


def test_modern_request_without_credentials_gets_the_upstreams_401(proxy_url: str) -> None:
    discover, headers = modern_request("server/discover")
    response = httpx.post(proxy_url, json=discover, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer ")


def test_the_authorization_server_metadata_is_the_upstreams(proxy_url: str, upstream) -> None:
    path = "/.well-known/oauth-authorization-server"
    via_proxy = httpx.get(proxy_url.removesuffix("/mcp") + path)
    direct = httpx.get(upstream[0].removesuffix("/mcp") + path)
    assert via_proxy.status_code == direct.status_code == 200
    assert via_proxy.json() == direct.json()


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
)
def test_the_protected_resource_is_the_proxy_with_the_upstreams_authorization_servers(
    proxy_url: str, upstream, path: str
) -> None:
    via_proxy = httpx.get(proxy_url.removesuffix("/mcp") + path).json()
    direct = httpx.get(metadata_url(upstream[0])).json()
    assert via_proxy == {**direct, "resource": proxy_url}
    assert via_proxy["authorization_servers"] == direct["authorization_servers"]


def test_a_configured_public_url_is_the_protected_resource(upstream) -> None:
    public = "https://tools.example.com/mcp"
    with running_proxy(upstream[0], public_url=public) as url:
        document = httpx.get(metadata_url(url)).json()
        challenge = httpx.post(url, json=INITIALIZE).headers["www-authenticate"]
    assert document["resource"] == public
    assert (
        'resource_metadata="https://tools.example.com/.well-known/oauth-protected-resource/mcp"' in challenge
    )


@pytest.mark.parametrize("trusted", [False, True])
def test_forwarded_headers_name_the_public_url_only_when_trusted(upstream, trusted: bool) -> None:
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "gateway.example.com"}
    with running_proxy(upstream[0], trust_forwarded_headers=trusted) as url:
        document = httpx.get(metadata_url(url), headers=forwarded).json()
    assert document["resource"] == ("https://gateway.example.com/mcp" if trusted else url)


def test_only_the_first_forwarded_entry_counts() -> None:
    headers = {
        "host": "10.0.0.5:8090",
        "x-forwarded-proto": "https, http",
        "x-forwarded-host": "a.example, b",
    }
    assert public_resource("", "/mcp", "http", headers, trust_forwarded=True) == "https://a.example/mcp"


@pytest.mark.parametrize(
    "challenge",
    [
        'Bearer error="invalid_token", resource_metadata="http://upstream:8080/.well-known/oauth-protected-resource/mcp"',
        "Bearer resource_metadata=http://upstream:8080/.well-known/oauth-protected-resource, scope=tools",
    ],
)
def test_a_challenges_resource_metadata_is_rewritten_and_the_rest_kept(challenge: str) -> None:
    rewritten = challenge_for(challenge, "https://proxy.example/mcp")
    assert 'resource_metadata="https://proxy.example/.well-known/oauth-protected-resource/mcp"' in rewritten
    assert "upstream:8080" not in rewritten
    assert rewritten.startswith("Bearer ")
