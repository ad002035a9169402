"""JSON-RPC 2.0 framing: parsing one message, and the errors we answer with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

RequestId = str | int


class JsonRpcError(Exception):
    """An error answered to the caller as a JSON-RPC error object (and an HTTP status on HTTP)."""

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        http_status: int = 200,
        request_id: RequestId | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status
        self.request_id = request_id
        """The id of an invalid request, when the id itself is valid: the answer echoes it."""

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass(frozen=True, slots=True)
class Message:
    """One JSON-RPC message from a client: a request (with `id`) or a notification (without)."""

    method: str | None
    params: dict[str, Any]
    id: RequestId | None
    is_response: bool = False

    @property
    def is_notification(self) -> bool:
        return self.id is None


def parse_message(body: bytes) -> Message:
    """Parse and check one JSON-RPC message; raise `JsonRpcError` saying what is wrong."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise JsonRpcError(
            PARSE_ERROR, f"Parse error: the body is not valid JSON ({exc})", http_status=400
        ) from None
    return check_message(value)


def check_message(value: Any) -> Message:
    if isinstance(value, list):
        raise JsonRpcError(
            INVALID_REQUEST,
            "Invalid Request: JSON-RPC batches are not supported; send one message per request",
            http_status=400,
        )
    if not isinstance(value, dict):
        raise JsonRpcError(
            INVALID_REQUEST, "Invalid Request: the body must be a JSON object", http_status=400
        )
    request_id = value.get("id")
    if "id" in value and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
        raise JsonRpcError(
            INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer', http_status=400
        )
    if value.get("jsonrpc") != "2.0":
        raise JsonRpcError(
            INVALID_REQUEST,
            'Invalid Request: "jsonrpc" must be "2.0"',
            http_status=400,
            request_id=request_id,
        )
    if "method" not in value and ("result" in value or "error" in value):
        return Message(method=None, params={}, id=request_id, is_response=True)
    method = value.get("method")
    if not isinstance(method, str) or not method:
        raise JsonRpcError(
            INVALID_REQUEST,
            'Invalid Request: "method" must be a non-empty string',
            http_status=400,
            request_id=request_id,
        )
    params = value.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise JsonRpcError(
            INVALID_PARAMS,
            'Invalid params: "params" must be an object',
            http_status=400,
            request_id=request_id,
        )
    return Message(method=method, params=params, id=request_id)


def result_response(request_id: RequestId | None, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: RequestId | None, error: JsonRpcError) -> dict[str, Any]:
    """The error answer to a request; `"id": null` when its id could not be read (JSON-RPC 2.0)."""
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_error()}
