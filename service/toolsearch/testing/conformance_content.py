"""What the conformance fixtures send (`conformance`): results, content of every kind, and the
requests a tool asks of the client.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Mapping
from typing import Any, Final

import orjson
from mcp.server.context import ServerRequestContext
from starlette.requests import Request

from toolsearch.mcp.protocol import SESSION_HEADER

Context = ServerRequestContext[Any, Any]
Result = dict[str, Any]

PNG: Final = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108020000009077"
        "53de0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
    )
).decode()
"""A 1x1 red pixel."""
WAV: Final = base64.b64encode(
    b"RIFF"
    + struct.pack("<I", 36 + 8)
    + b"WAVEfmt "
    + struct.pack("<IHHIIHH", 16, 1, 1, 8000, 16000, 2, 16)
    + b"data"
    + struct.pack("<I", 8)
    + bytes(8)
).decode()
"""Four silent samples of 16-bit mono PCM at 8 kHz."""

NAME_SCHEMA: Final = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def text_result(text: str) -> Result:
    return {"content": [{"type": "text", "text": text}]}


def elicit(message: str, schema: Mapping[str, Any]) -> Result:
    return {"method": "elicitation/create", "params": {"message": message, "requestedSchema": dict(schema)}}


def sample(prompt: str, max_tokens: int) -> Result:
    message = {"role": "user", "content": {"type": "text", "text": prompt}}
    return {"method": "sampling/createMessage", "params": {"messages": [message], "maxTokens": max_tokens}}


ROOTS_REQUEST: Final = {"method": "roots/list", "params": {}}
USER_NAME: Final = elicit("What is your name?", NAME_SCHEMA)
CAPITAL_QUESTION: Final = sample("What is the capital of France?", 100)


def session_id(ctx: Context) -> str | None:
    request = ctx.request
    return request.headers.get(SESSION_HEADER) if isinstance(request, Request) else None


def progress_token(raw: Mapping[str, Any]) -> str | int | None:
    meta = raw.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


def json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def prompt_result(*contents: Result) -> Result:
    return {"messages": [{"role": "user", "content": content} for content in contents]}
