"""The MCP wire, as pure rules: JSON-RPC framing (`jsonrpc`), the two protocol eras inbound and
outbound (`protocol`), the 2026-07-28 headers (`headers`), server-sent events (`sse`), OAuth's
protected resource (`oauth`), what of a caller's request goes upstream (`caller`) and what an
upstream request can come to besides a result (`errors`).
"""

from toolsearch.mcp.caller import CallerHeaders, CallerInput, CallRelay
from toolsearch.mcp.errors import InputNotRelayed, UpstreamAuthError, UpstreamError, UpstreamRpcError
from toolsearch.mcp.jsonrpc import JsonRpcError, Message, parse_message
from toolsearch.mcp.protocol import Era

__all__ = [
    "CallRelay",
    "CallerHeaders",
    "CallerInput",
    "Era",
    "InputNotRelayed",
    "JsonRpcError",
    "Message",
    "UpstreamAuthError",
    "UpstreamError",
    "UpstreamRpcError",
    "parse_message",
]
