"""JSON-RPC 2.0 framing without HTTP: which bodies are messages, what each invalid one is answered
with, and how answers are framed."""

from __future__ import annotations

from typing import Any

import pytest

from toolsearch.mcp.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    JsonRpcError,
    Message,
    error_response,
    parse_message,
    result_response,
)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "c"}}',
            Message("tools/list", {"cursor": "c"}, 1),
            id="request",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": "a-1", "method": "ping"}',
            Message("ping", {}, "a-1"),
            id="string id, no params",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 0, "method": "ping", "params": null}',
            Message("ping", {}, 0),
            id="id 0, null params",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
            Message("notifications/initialized", {}, None),
            id="notification",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 7, "result": {}}',
            Message(None, {}, 7, is_response=True),
            id="result from the client",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "no"}}',
            Message(None, {}, 7, is_response=True),
            id="error from the client",
        ),
    ],
)
def test_a_valid_body_parses_to_its_message(body: bytes, message: Message) -> None:
    assert parse_message(body) == message


@pytest.mark.parametrize(
    ("body", "notification"),
    [
        (b'{"jsonrpc": "2.0", "method": "notifications/cancelled"}', True),
        (b'{"jsonrpc": "2.0", "id": 0, "method": "ping"}', False),
    ],
)
def test_a_message_without_an_id_is_a_notification(body: bytes, notification: bool) -> None:
    assert parse_message(body).is_notification is notification


@pytest.mark.parametrize(
    ("body", "code", "request_id", "says"),
    [
        pytest.param(b'{"jsonrpc": "2.0",', PARSE_ERROR, None, "not valid JSON", id="truncated JSON"),
        pytest.param(b"\xff\xfe", PARSE_ERROR, None, "not valid JSON", id="not UTF-8"),
        pytest.param(b"", PARSE_ERROR, None, "not valid JSON", id="empty body"),
        pytest.param(
            b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', INVALID_REQUEST, None, "batches", id="batch"
        ),
        pytest.param(b'"ping"', INVALID_REQUEST, None, "JSON object", id="a string"),
        pytest.param(b"null", INVALID_REQUEST, None, "JSON object", id="null"),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST, None, '"id"', id="bool id"
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', INVALID_REQUEST, None, '"id"', id="float id"
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', INVALID_REQUEST, None, '"id"', id="null id"
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}', INVALID_REQUEST, None, '"id"', id="object id"
        ),
        pytest.param(
            b'{"jsonrpc": "1.0", "id": 3, "method": "ping"}',
            INVALID_REQUEST,
            3,
            '"jsonrpc"',
            id="version 1.0",
        ),
        pytest.param(b'{"id": "x", "method": "ping"}', INVALID_REQUEST, "x", '"jsonrpc"', id="no version"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 4}', INVALID_REQUEST, 4, '"method"', id="no method"),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 4, "method": ""}', INVALID_REQUEST, 4, '"method"', id="empty method"
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 4, "method": 12}', INVALID_REQUEST, 4, '"method"', id="number method"
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": [1]}',
            INVALID_PARAMS,
            5,
            '"params"',
            id="list params",
        ),
        pytest.param(
            b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": "x"}',
            INVALID_PARAMS,
            5,
            '"params"',
            id="string params",
        ),
    ],
)
def test_an_invalid_body_is_answered_with_a_400_and_its_error(
    body: bytes, code: int, request_id: str | int | None, says: str
) -> None:
    with pytest.raises(JsonRpcError) as raised:
        parse_message(body)
    assert (raised.value.code, raised.value.http_status, raised.value.request_id) == (code, 400, request_id)
    assert says in raised.value.message


@pytest.mark.parametrize(
    ("request_id", "response"),
    [
        (1, {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
        ("a", {"jsonrpc": "2.0", "id": "a", "result": {"tools": []}}),
        (None, {"jsonrpc": "2.0", "id": None, "result": {"tools": []}}),
    ],
)
def test_a_result_is_framed_with_the_requests_id(
    request_id: str | int | None, response: dict[str, Any]
) -> None:
    assert result_response(request_id, {"tools": []}) == response


@pytest.mark.parametrize(
    ("request_id", "error", "response"),
    [
        pytest.param(
            9,
            JsonRpcError(-32601, "Method not found"),
            {"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "Method not found"}},
            id="with id",
        ),
        pytest.param(
            0,
            JsonRpcError(-32602, "Invalid params", {"field": "name"}),
            {
                "jsonrpc": "2.0",
                "id": 0,
                "error": {"code": -32602, "message": "Invalid params", "data": {"field": "name"}},
            },
            id="id 0, with data",
        ),
        pytest.param(
            None,
            JsonRpcError(-32700, "Parse error"),
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
            id="no id: null",
        ),
    ],
)
def test_an_error_is_framed_with_the_id_or_null_and_data_when_given(
    request_id: str | int | None, error: JsonRpcError, response: dict[str, Any]
) -> None:
    assert error_response(request_id, error) == response
