"""What a request comes to (`server.Reply`), as a transport encodes it: a result, a JSON-RPC error
with its HTTP status, or the upstream's refusal of the caller's credentials."""

from __future__ import annotations

from toolsearch.mcp.caller import CallerHeaders, token_key
from toolsearch.mcp.errors import UpstreamAuthError, UpstreamError, UpstreamRpcError
from toolsearch.mcp.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, JsonRpcError
from toolsearch.server import Reply


def test_a_result_is_a_json_rpc_result_with_http_200() -> None:
    reply = Reply(7, result={"tools": []})
    assert (reply.message(), reply.http_status) == ({"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}, 200)


def test_an_error_is_a_json_rpc_error_with_its_http_status() -> None:
    reply = Reply("a", error=JsonRpcError(INVALID_PARAMS, "bad", {"at": "/x"}, http_status=400))
    error = {"code": INVALID_PARAMS, "message": "bad", "data": {"at": "/x"}}
    assert (reply.message(), reply.http_status) == ({"jsonrpc": "2.0", "id": "a", "error": error}, 400)


def test_a_refusal_as_json_rpc_is_an_internal_error_naming_the_upstreams_status() -> None:
    reply = Reply.refused(3, UpstreamAuthError(401, {"www-authenticate": "Bearer"}, b"no"))
    message = reply.message()
    assert message["error"]["code"] == INTERNAL_ERROR
    assert "refused the request (HTTP 401)" in message["error"]["message"]


def test_refused_credentials_are_no_upstream_failure_and_an_rpc_error_is_one() -> None:
    assert not issubclass(UpstreamAuthError, UpstreamError)
    assert issubclass(UpstreamRpcError, UpstreamError)


def test_a_callers_token_key_is_the_hash_of_its_authorization_and_never_the_token() -> None:
    caller = CallerHeaders(authorization="Bearer secret", traceparent="00-1-2-01")
    assert caller.token_key == token_key("Bearer secret") != token_key(None)
    assert "secret" not in caller.token_key and len(caller.token_key) == 64
    assert caller.as_headers() == {"Authorization": "Bearer secret", "traceparent": "00-1-2-01"}
