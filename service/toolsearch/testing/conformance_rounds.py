"""The 2026-07-28 `input_required` rounds of the conformance fixtures (`InputRounds`): sampling,
elicitation and roots asked by result, `requestState` sealed against tampering, several rounds,
asked only of declared capabilities; and what a retry brings (`inputResponses`, the capabilities
declared in `_meta`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from typing import Any

import mcp_types
import orjson
from mcp.shared.exceptions import MCPError

from toolsearch.mcp.protocol import CLIENT_CAPABILITIES_META
from toolsearch.testing.conformance_content import (
    CAPITAL_QUESTION,
    NAME_SCHEMA,
    ROOTS_REQUEST,
    USER_NAME,
    Context,
    Result,
    elicit,
    sample,
    text_result,
)


def input_responses(raw: Mapping[str, Any]) -> Result:
    responses = raw.get("inputResponses")
    return responses if isinstance(responses, dict) else {}


def declared_capabilities(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """The capabilities a 2026-07-28 request declares in its `_meta`."""
    meta = raw.get("_meta")
    declared = meta.get(CLIENT_CAPABILITIES_META) if isinstance(meta, dict) else None
    return declared if isinstance(declared, dict) else {}


def answered_name(answer: Mapping[str, Any]) -> str:
    content = answer.get("content")
    return str(content.get("name")) if isinstance(content, dict) else "stranger"


class InputRounds:
    """The tools that ask the client for input by result and finish on the retry; each round's
    `requestState` is sealed with a key of this object's own."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    async def elicitation(self, ctx: Context, raw: Result) -> Result:
        answer = input_responses(raw).get("user_name")
        if not isinstance(answer, dict) or not isinstance(answer.get("content"), dict):
            return {"resultType": "input_required", "inputRequests": {"user_name": USER_NAME}}
        return text_result(f"Hello, {answered_name(answer)}!")

    async def sampling(self, ctx: Context, raw: Result) -> Result:
        answer = input_responses(raw).get("capital_question")
        if not isinstance(answer, dict):
            return {"resultType": "input_required", "inputRequests": {"capital_question": CAPITAL_QUESTION}}
        content = answer.get("content")
        return text_result(
            f"The model answered: {content.get('text') if isinstance(content, dict) else content}"
        )

    async def roots(self, ctx: Context, raw: Result) -> Result:
        answer = input_responses(raw).get("client_roots")
        if not isinstance(answer, dict) or not isinstance(answer.get("roots"), list):
            return {"resultType": "input_required", "inputRequests": {"client_roots": ROOTS_REQUEST}}
        uris = [str(root.get("uri")) for root in answer["roots"] if isinstance(root, dict)]
        return text_result(f"The client's roots: {', '.join(uris) or 'none'}")

    async def request_state(self, ctx: Context, raw: Result) -> Result:
        confirm = elicit(
            "Please confirm",
            {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        )
        answer = input_responses(raw).get("confirm")
        if not isinstance(answer, dict):
            return self._asking({"confirm": confirm}, "confirm")
        self._verified(raw, "confirm")
        return text_result("state-ok: the request state came back intact")

    async def multiple(self, ctx: Context, raw: Result) -> Result:
        requests = {
            "user_name": USER_NAME,
            "greeting": sample("Generate a greeting", 50),
            "client_roots": ROOTS_REQUEST,
        }
        responses = input_responses(raw)
        if not all(isinstance(responses.get(key), dict) for key in requests):
            return self._asking(requests, "multiple")
        self._verified(raw, "multiple")
        return text_result(f"Received all of {', '.join(sorted(requests))}")

    async def multi_round(self, ctx: Context, raw: Result) -> Result:
        responses = input_responses(raw)
        if isinstance(responses.get("step2"), dict) and self._verified(raw, "round-2"):
            first = responses["step1"] if isinstance(responses.get("step1"), dict) else {}
            return text_result(f"Done: {answered_name(first)}")
        if isinstance(responses.get("step1"), dict) and raw.get("requestState") is not None:
            self._verified(raw, "round-1")
            color = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
            return self._asking({"step2": elicit("Step 2: What is your favorite color?", color)}, "round-2")
        return self._asking({"step1": elicit("Step 1: What is your name?", NAME_SCHEMA)}, "round-1")

    async def tampered_state(self, ctx: Context, raw: Result) -> Result:
        if raw.get("requestState") is None:
            return self._asking({"user_name": USER_NAME}, "tamper-proof")
        self._verified(raw, "tamper-proof")
        return text_result("The request state came back intact")

    async def capabilities(self, ctx: Context, raw: Result) -> Result:
        responses = input_responses(raw)
        if responses:
            return text_result(f"Received {', '.join(sorted(responses))}")
        declared = declared_capabilities(raw)
        offered = {
            "user_name": ("elicitation", USER_NAME),
            "capital_question": ("sampling", CAPITAL_QUESTION),
            "client_roots": ("roots", ROOTS_REQUEST),
        }
        asked = {key: request for key, (capability, request) in offered.items() if capability in declared}
        if not asked:
            return text_result("The client declared none of sampling, elicitation and roots; nothing to ask")
        return {"resultType": "input_required", "inputRequests": asked}

    def _asking(self, requests: Result, stage: str) -> Result:
        return {
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": self._sealed(stage),
        }

    def _sealed(self, stage: str) -> str:
        payload = base64.urlsafe_b64encode(
            orjson.dumps({"stage": stage, "nonce": secrets.token_hex(8)})
        ).decode()
        return f"{payload}.{hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()}"

    def _verified(self, raw: Result, stage: str) -> bool:
        """Whether the echoed `requestState` is one this server sealed for `stage`; -32602 if it was
        tampered with or is missing."""
        state = raw.get("requestState")
        payload, _, mac = state.rpartition(".") if isinstance(state, str) else ("", "", "")
        expected = hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()
        if not payload or not hmac.compare_digest(mac, expected):
            raise MCPError(code=mcp_types.INVALID_PARAMS, message="requestState failed its integrity check")
        return bool(orjson.loads(base64.urlsafe_b64decode(payload)).get("stage") == stage)
