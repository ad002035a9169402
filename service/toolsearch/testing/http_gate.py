"""The HTTP side of the test upstreams, before their MCP servers: a request's headers and JSON body
read (and the body replayed to the server), OAuth metadata, bearer challenges, and the refusal of
2026-07-28 by a legacy-only server.
"""

from __future__ import annotations

from typing import Any

import mcp_types
import orjson
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse, Response
from starlette.types import Message, Receive, Scope


def request_headers(scope: Scope) -> dict[str, str]:
    headers: dict[str, str] = {}
    for raw_name, raw_value in scope["headers"]:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


def json_body(body: bytes) -> Any:
    try:
        return orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return None


async def read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the already-read body to the app once, then the client's further events."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


def bearer_challenge(status: int, challenge: str, description: str) -> Response:
    error = "invalid_token" if status == 401 else "insufficient_scope"
    return JSONResponse(
        {"error": error, "error_description": description},
        status_code=status,
        headers={"WWW-Authenticate": challenge},
    )


def legacy_version_refusal(version: str, message: Any) -> Response:
    request_id = message.get("id") if isinstance(message, dict) else None
    supported = ", ".join(HANDSHAKE_PROTOCOL_VERSIONS)
    error = {
        "code": mcp_types.INVALID_REQUEST,
        "message": f"Bad Request: Unsupported protocol version: {version}. Supported versions: {supported}",
    }
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=400)


def protected_resource_metadata(base: str, path: str) -> dict[str, Any]:
    return {
        "resource": f"{base}{path}",
        "authorization_servers": [base],
        "scopes_supported": ["tools"],
        "bearer_methods_supported": ["header"],
        "resource_name": "toolsearch demo upstream",
    }


def authorization_server_metadata(base: str) -> dict[str, Any]:
    return {
        "issuer": base,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "registration_endpoint": f"{base}/register",
        "scopes_supported": ["tools"],
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }


# Recorded tool definitions
