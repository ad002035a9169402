"""MCP protocol versions and the two eras: legacy (initialize handshake) and modern (per-request `_meta`).

Both halves of the era rules, as pure functions: inbound, how a caller's request is checked and
answered; outbound, what toolsearch sends the upstream as a client of either era. How values are
written in the 2026-07-28 headers is in `mcp_headers`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from toolsearch import __version__
from toolsearch.mcp.headers import decode_header_value, encode_header_value, header
from toolsearch.mcp.jsonrpc import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    JsonRpcError,
)
from toolsearch.untrusted import clean_text

Era = Literal["legacy", "modern"]

MODERN_VERSION: Final = "2026-07-28"
MODERN_VERSIONS: Final = (MODERN_VERSION,)
LEGACY_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26")
"""Newest first; `initialize` answers with the client's version when listed here, else the newest."""
SUPPORTED_VERSIONS: Final = MODERN_VERSIONS + LEGACY_VERSIONS
LEGACY_DEFAULT_VERSION: Final = "2025-03-26"
"""What a legacy request without `MCP-Protocol-Version` is taken to speak (as the spec says)."""

PROTOCOL_VERSION_META: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META: Final = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_META: Final = "io.modelcontextprotocol/serverInfo"
_RESERVED_META: Final = "io.modelcontextprotocol/"

VERSION_HEADER: Final = "mcp-protocol-version"
METHOD_HEADER: Final = "mcp-method"
NAME_HEADER: Final = "mcp-name"
SESSION_HEADER: Final = "mcp-session-id"

INPUT_REQUIRED: Final = "input_required"
"""The 2026-07-28 `resultType` of a result that asks the client for input before the call can finish."""

PROGRESS_NOTIFICATION: Final = "notifications/progress"
LOG_NOTIFICATION: Final = "notifications/message"
LOG_LEVEL_META: Final = "io.modelcontextprotocol/logLevel"
"""Where a 2026-07-28 request asks for the log messages of its handling, at this level and above."""
LOG_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
TOOLS_CHANGED: Final = "notifications/tools/list_changed"

NAME_BEARING_PARAMS: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
SERVER_INFO: Final = {"name": "toolsearch", "version": __version__}
CLIENT_INFO: Final = SERVER_INFO
"""toolsearch's name toward the upstream: the same as toward its callers."""

REMOVED_MODERN_METHODS: Final = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
"""Requests 2026-07-28 dropped (the handshake, ping, per-session state): method not found there."""
MODERN_ERROR_STATUS: Final = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
"""The HTTP status of a 2026-07-28 JSON-RPC error, by code (other codes: 200)."""


def unsupported_version(requested: object) -> JsonRpcError:
    return JsonRpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {requested!r}; supported: {', '.join(SUPPORTED_VERSIONS)}",
        {"supported": list(SUPPORTED_VERSIONS), "requested": requested},
        http_status=400,
    )


def request_era(method: str, params: Mapping[str, Any], headers: Mapping[str, str] | None) -> Era:
    """The era a request speaks: per-request `_meta`, a modern header or `server/discover` make it
    modern; anything else (a plain `initialize` above all) is legacy."""
    meta = params.get("_meta")
    if isinstance(meta, Mapping) and PROTOCOL_VERSION_META in meta:
        return "modern"
    if headers is not None and header(headers, VERSION_HEADER) in MODERN_VERSIONS:
        return "modern"
    return "modern" if method == "server/discover" else "legacy"


def check_modern_request(method: str, params: Mapping[str, Any], headers: Mapping[str, str] | None) -> str:
    """Validate a modern request's envelope (and its HTTP headers, when on HTTP); return its version.

    The order is the spec's: the `_meta` envelope, then the headers against the body, then the
    version, then whether the era has the method at all."""
    meta = params.get("_meta")
    missing = (
        [key for key in (PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META) if key not in meta]
        if isinstance(meta, Mapping)
        else [PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META]
    )
    if missing:
        raise JsonRpcError(
            INVALID_PARAMS,
            f"Invalid params: params._meta lacks {' and '.join(map(repr, missing))}",
            http_status=400,
        )
    assert isinstance(meta, Mapping)
    version = meta[PROTOCOL_VERSION_META]
    if headers is not None:
        _check_modern_headers(method, params, version, headers)
    if version not in MODERN_VERSIONS:
        raise unsupported_version(version)
    if method in REMOVED_MODERN_METHODS:
        raise method_not_found(method, "modern")
    return str(version)


def method_not_found(method: str, era: Era) -> JsonRpcError:
    """-32601 for a method the caller's era lacks or toolsearch does not serve (404 on 2026-07-28)."""
    handshake = "server/discover" if era == "modern" else "initialize, ping"
    return JsonRpcError(
        METHOD_NOT_FOUND,
        f"Method not found: {method!r}. toolsearch serves {handshake}, tools/list and tools/call "
        f"in protocol {'2026-07-28' if era == 'modern' else 'versions before 2026-07-28'}.",
        http_status=modern_status(METHOD_NOT_FOUND) if era == "modern" else 200,
    )


def modern_status(code: int, default: int = 200) -> int:
    """The HTTP status a 2026-07-28 error with this JSON-RPC code is answered with."""
    return MODERN_ERROR_STATUS.get(code, default)


def _check_modern_headers(
    method: str, params: Mapping[str, Any], version: object, headers: Mapping[str, str]
) -> None:
    def mismatch(message: str) -> JsonRpcError:
        return JsonRpcError(HEADER_MISMATCH, f"Header mismatch: {message}", http_status=400)

    header_version = header(headers, VERSION_HEADER)
    if header_version is None:
        raise mismatch("the MCP-Protocol-Version header is required")
    if header_version != version:
        raise mismatch(
            f"MCP-Protocol-Version header value {header_version!r} does not match body value {version!r}"
        )
    header_method = header(headers, METHOD_HEADER)
    if header_method is None:
        raise mismatch("the Mcp-Method header is required")
    if header_method != method:
        raise mismatch(f"Mcp-Method header value {header_method!r} does not match body value {method!r}")
    name_key = NAME_BEARING_PARAMS.get(method)
    if name_key is None:
        return
    body_name = params.get(name_key)
    header_name = header(headers, NAME_HEADER)
    if header_name is None:
        raise mismatch(f"the Mcp-Name header is required for {method}")
    decoded = decode_header_value(header_name)
    if decoded != body_name:
        raise mismatch(f"Mcp-Name header value {decoded!r} does not match body value {body_name!r}")


def check_legacy_version_header(headers: Mapping[str, str] | None) -> str:
    """The legacy version a request declares in its header (absent: 2025-03-26, as the spec says)."""
    version = header(headers, VERSION_HEADER) if headers is not None else None
    if version is None:
        return LEGACY_DEFAULT_VERSION
    if version not in LEGACY_VERSIONS:
        raise unsupported_version(version)
    return version


def negotiate_legacy_version(requested: object) -> str:
    return requested if isinstance(requested, str) and requested in LEGACY_VERSIONS else LEGACY_VERSIONS[0]


def complete_result(result: dict[str, Any], era: Era) -> dict[str, Any]:
    """Mark a result for the caller's era: modern results carry `resultType` (`complete`, unless it
    asks for input) and our identity."""
    if era == "modern":
        if result.get("resultType") != INPUT_REQUIRED:
            result["resultType"] = "complete"
        meta = result.get("_meta")
        result["_meta"] = {**(meta if isinstance(meta, dict) else {}), SERVER_INFO_META: SERVER_INFO}
    else:
        result.pop("resultType", None)
    return result


def without_envelope(result: Mapping[str, Any]) -> dict[str, Any]:
    """An upstream result less the upstream's own protocol envelope (`resultType`, and the
    `io.modelcontextprotocol/` keys of `_meta` such as its serverInfo); the tool's `_meta` stays."""
    relayed = {key: value for key, value in result.items() if key != "resultType"}
    meta = relayed.pop("_meta", None)
    if isinstance(meta, Mapping):
        kept = {key: value for key, value in meta.items() if not str(key).startswith(_RESERVED_META)}
        if kept:
            relayed["_meta"] = kept
    elif meta is not None:
        relayed["_meta"] = meta
    return relayed


REFUSAL_GRACE: Final = 3.0
"""Seconds an upstream has to end a call after toolsearch refused a request it sent mid-call. An
upstream that hears the refusal ends the call at once; a stateless one never hears it (the refusal,
a new POST, reaches none of its requests) and would hold the call until `--upstream-timeout`."""

_WANTED: Final = {
    "sampling/createMessage": "a completion from the caller's model (sampling/createMessage)",
    "elicitation/create": "input from the caller's user (elicitation/create)",
    "roots/list": "the caller's roots (roots/list)",
}


def unrelayed_request(methods: Sequence[str]) -> str:
    """Why a call ended without its result: what the upstream asked the caller for mid-call, and why
    toolsearch could not ask it (a sentence for the model; `methods` are the upstream's words)."""
    wanted = [_WANTED.get(method) or f"{clean_text(method)[:100]!r}" for method in dict.fromkeys(methods)]
    return (
        f"the upstream asked for {' and '.join(wanted) or 'input'} in the middle of the call, and "
        "toolsearch cannot pass such a request on to its caller: it is a stateless proxy that answers "
        "each request with one response (it relays input requests only as 2026-07-28 input_required "
        f"results). It refused the request; the upstream did not end the call within {REFUSAL_GRACE:g} s "
        "of the refusal (a stateless upstream never hears it)"
    )


def forwarded_result(method: str, result: Mapping[str, Any], era: Era) -> dict[str, Any]:
    """A forwarded request's upstream result for a caller of `era`, less the upstream's envelope. A
    result that asks for input (`prompts/get`, `resources/read` in 2026-07-28) goes to a 2026-07-28
    caller as it came, whose retry goes upstream as it comes; a legacy caller cannot answer it."""
    relayed = without_envelope(result)
    if result.get("resultType") != INPUT_REQUIRED:
        return relayed
    if era == "modern":
        return {**relayed, "resultType": INPUT_REQUIRED}
    raise JsonRpcError(
        INTERNAL_ERROR,
        f"The upstream asks for input ({asked_input(result)}) before it can answer {method}; "
        "toolsearch passes such requests on only to clients of protocol 2026-07-28",
    )


def asked_input(result: Mapping[str, Any]) -> str:
    """What an `input_required` result asks for, as a model may read it: its requests' methods."""
    requests = result.get("inputRequests")
    asked = sorted(
        {clean_text(str(r.get("method")))[:100] for r in requests.values() if isinstance(r, Mapping)}
        if isinstance(requests, Mapping)
        else set()
    )
    return ", ".join(asked) or "unspecified"


def answer_to_server_request(message: Mapping[str, Any]) -> dict[str, Any]:
    """What toolsearch answers a request the upstream sends it mid-call on a legacy SSE stream
    (`sampling/createMessage`, `elicitation/create`, `roots/list`): its callers are stateless, so
    none can be relayed; -32601 at once lets the upstream fail the call instead of waiting. `ping`
    is answered."""
    method = message.get("method")
    response: dict[str, Any] = {"jsonrpc": "2.0", "id": message.get("id")}
    if method == "ping":
        return {**response, "result": {}}
    return {
        **response,
        "error": {
            "code": METHOD_NOT_FOUND,
            "message": f"toolsearch cannot pass {method!r} on to its client: it is a stateless proxy "
            "(it relays input requests only as 2026-07-28 input_required results)",
        },
    }


def relayed_notification(message: Mapping[str, Any], token: str | int | None, log_level: str | None) -> bool:
    """Whether an upstream notification on a call's stream goes on to the caller: progress for the
    caller's token, and log messages at `log_level` or above (None: the caller asked for none)."""
    params = message.get("params")
    if not isinstance(params, Mapping):
        return False
    if message.get("method") == PROGRESS_NOTIFICATION:
        return token is not None and params.get("progressToken") == token
    if message.get("method") == LOG_NOTIFICATION and log_level in LOG_LEVELS:
        level = params.get("level")
        return level in LOG_LEVELS and LOG_LEVELS.index(level) >= LOG_LEVELS.index(log_level)
    return False


def call_log_level(era: Era, params: Mapping[str, Any]) -> str | None:
    """The least level of log messages a caller's `tools/call` is sent: a 2026-07-28 caller asks in
    its `_meta` (else it gets none); a legacy caller gets every level the upstream sends it (the
    upstream's session of the caller's token filters by the caller's `logging/setLevel`)."""
    if era == "legacy":
        return LOG_LEVELS[0]
    meta = params.get("_meta")
    level = meta.get(LOG_LEVEL_META) if isinstance(meta, Mapping) else None
    return level if level in LOG_LEVELS else None


FORWARDED_METHODS: Final = {
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "completion/complete": "completions",
    "logging/setLevel": "logging",
}
"""Methods passed to the upstream as they came, by the capability toolsearch offers them under."""
CACHED_RESULTS: Final = frozenset(
    {"resources/list", "resources/templates/list", "resources/read", "prompts/list"}
)
"""Forwarded results that carry 2026-07-28 caching hints (`ttlMs`, `cacheScope`)."""


def offered_capabilities(upstream: Mapping[str, Any], caller_era: Era, upstream_era: Era) -> dict[str, Any]:
    """What toolsearch advertises: its tools, and of the upstream's resources, prompts, completion and
    logging what a stateless proxy can carry (no subscriptions, no list-changed notifications). Log
    messages come on a call's response stream; a legacy caller sets their level with
    `logging/setLevel`, kept by the upstream's session of its token, which a 2026-07-28 upstream has not."""
    capabilities: dict[str, Any] = {"tools": {"listChanged": False}}
    for name in ("resources", "prompts", "completions"):
        if isinstance(upstream.get(name), Mapping):
            capabilities[name] = {}
    if isinstance(upstream.get("logging"), Mapping) and (caller_era == "modern" or upstream_era == "legacy"):
        capabilities["logging"] = {}
    return capabilities


# -- outbound: toolsearch as a client of the upstream ---------------------------------------------


def modern_params(params: Mapping[str, Any], capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A 2026-07-28 request's params: the per-request `_meta` envelope added to what they hold."""
    meta = params.get("_meta")
    envelope = {
        **(meta if isinstance(meta, Mapping) else {}),
        PROTOCOL_VERSION_META: MODERN_VERSION,
        CLIENT_CAPABILITIES_META: dict(capabilities or {}),
        CLIENT_INFO_META: CLIENT_INFO,
    }
    return {**params, "_meta": envelope}


def relayed_meta(token: str | int | None, log_level: str | None, era: Era) -> dict[str, Any]:
    """The `_meta` of an upstream `tools/call` that asks for what its caller's stream relays: progress
    under the caller's token and, from a 2026-07-28 upstream, log messages at the caller's level (a
    legacy upstream sends them at its session's level)."""
    meta: dict[str, Any] = {} if token is None else {"progressToken": token}
    if log_level is not None and era == "modern":
        meta[LOG_LEVEL_META] = log_level
    return meta


def modern_headers(method: str, params: Mapping[str, Any]) -> dict[str, str]:
    """The HTTP headers a 2026-07-28 request mirrors its body in (version, method, and name)."""
    headers = {VERSION_HEADER: MODERN_VERSION, METHOD_HEADER: method}
    name_key = NAME_BEARING_PARAMS.get(method)
    if name_key is not None and name_key in params:
        headers[NAME_HEADER] = encode_header_value(str(params[name_key]))
    return headers


def legacy_headers(version: str, session_id: str | None) -> dict[str, str]:
    """The HTTP headers of a legacy request within its session."""
    headers = {VERSION_HEADER: version}
    if session_id is not None:
        headers[SESSION_HEADER] = session_id
    return headers


def speaks_only_modern(error_data: Any) -> bool:
    """Whether an unsupported-version error's data lists no legacy version we speak."""
    supported = error_data.get("supported") if isinstance(error_data, Mapping) else None
    return isinstance(supported, list) and not any(v in LEGACY_VERSIONS for v in supported)
