"""The 2026-07-28 transport's headers, as pure functions: values in a header, plain or
`=?base64?…?=` (`encode_header_value`, `decode_header_value`), and the tool arguments a request
mirrors in `Mcp-Param-{Name}` headers where the tool's input schema says `x-mcp-header`
(`param_headers`, `valid_header_annotations`).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any, Final

from toolsearch.mcp.jsonrpc import HEADER_MISMATCH, JsonRpcError

_BASE64_SENTINEL = re.compile(r"^=\?base64\?(.*)\?=$", re.DOTALL)
_HEADER_SAFE = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$")
_TOKEN_CHARS = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_MAX_SAFE_INTEGER: Final = 2**53 - 1
_PARAM_HEADER_TYPES: Final = ("string", "integer", "boolean")
_MAX_ANNOTATION_DEPTH: Final = 16


def encode_header_value(value: str) -> str:
    """A header value as the 2026-07-28 transport writes it: plain when safe, else `=?base64?…?=`."""
    if _HEADER_SAFE.match(value) and not _BASE64_SENTINEL.match(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def decode_header_value(value: str) -> str:
    match = _BASE64_SENTINEL.match(value)
    if match is None:
        return value
    try:
        return base64.b64decode(match.group(1), validate=True).decode()
    except ValueError:
        raise JsonRpcError(
            HEADER_MISMATCH,
            "Header mismatch: a =?base64?…?= header value is not valid base64",
            http_status=400,
        ) from None


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value without the optional whitespace around it, which is not part of it (RFC 9110)."""
    value = headers.get(name)
    return value.strip(" \t") if value is not None else None


def header_annotations(schema: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any, Any]]:
    """(property path, x-mcp-header value, declared type) of every annotated property reachable via
    `properties` chains only, as the 2026-07-28 transport defines them."""
    found: list[tuple[tuple[str, ...], Any, Any]] = []
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or len(path) > _MAX_ANNOTATION_DEPTH:
        return found
    for key, prop in properties.items():
        if not isinstance(prop, Mapping):
            continue
        if "x-mcp-header" in prop:
            found.append(((*path, str(key)), prop["x-mcp-header"], prop.get("type")))
        found.extend(header_annotations(prop, (*path, str(key))))
    return found


def valid_header_annotations(tool: Mapping[str, Any]) -> bool:
    """Whether a tool's `x-mcp-header` annotations keep the spec's rules (token names, unique
    case-insensitively, on string, integer or boolean properties); clients leave out tools that break them."""
    annotated = header_annotations(tool.get("inputSchema"))
    names = [name for _, name, _ in annotated]
    return all(
        isinstance(name, str) and _TOKEN_CHARS.match(name) and kind in _PARAM_HEADER_TYPES
        for _, name, kind in annotated
    ) and len({str(n).lower() for n in names}) == len(names)


def param_headers(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, str]:
    """`Mcp-Param-{Name}` headers mirroring the arguments at annotated properties."""
    headers: dict[str, str] = {}
    for path, name, _ in header_annotations(schema):
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int) and abs(value) <= _MAX_SAFE_INTEGER:
            text = str(value)
        elif isinstance(value, str):
            text = value
        else:
            continue
        headers[f"Mcp-Param-{name}"] = encode_header_value(text)
    return headers
