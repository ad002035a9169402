"""OAuth through the proxy: toolsearch presents itself as the protected resource (RFC 9728).

An MCP client checks that the protected resource metadata it discovers names the URL it connects
to, so the proxy serves the upstream's document with `resource` set to its own public URL (and
keeps the upstream's authorization servers and scopes), and points the `resource_metadata` of a
relayed `WWW-Authenticate` challenge at its own copy. Tokens are then issued for the proxy's URL
(RFC 8707 resource indicators): the upstream must accept that audience.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

PROTECTED_RESOURCE_PATH: Final = "/.well-known/oauth-protected-resource"
_RESOURCE_METADATA = re.compile(r'resource_metadata="[^"]*"|resource_metadata=[^\s,]+')


def public_resource(
    public_url: str, path: str, scheme: str, headers: Mapping[str, str], *, trust_forwarded: bool
) -> str:
    """The URL clients reach the proxy's MCP endpoint at: `public_url` when configured, else the
    request's scheme and Host, or X-Forwarded-Proto and X-Forwarded-Host when those are trusted."""
    if public_url:
        return public_url.rstrip("/")
    host = headers.get("host", "localhost")
    if trust_forwarded:
        scheme = _first(headers.get("x-forwarded-proto")) or scheme
        host = _first(headers.get("x-forwarded-host")) or host
    return f"{scheme}://{host}{path}"


def metadata_url(resource: str) -> str:
    """Where the protected resource metadata of `resource` is (RFC 9728 section 3.1)."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{PROTECTED_RESOURCE_PATH}{parts.path.rstrip('/')}"


def protected_resource_document(upstream: Mapping[str, Any], resource: str) -> dict[str, Any]:
    """The upstream's protected resource metadata with the proxy as the resource."""
    return {**upstream, "resource": resource}


def challenge_for(header: str, resource: str) -> str:
    """A relayed `WWW-Authenticate` value with its `resource_metadata` pointing at the proxy's."""
    return _RESOURCE_METADATA.sub(f'resource_metadata="{metadata_url(resource)}"', header)


def _first(value: str | None) -> str | None:
    """The first (the client-side) entry of a forwarded header's comma-separated list."""
    first = value.split(",")[0].strip() if value else ""
    return first or None
