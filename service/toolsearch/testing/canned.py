"""Canned tool results for the demo upstream, and example values that satisfy a JSON Schema.

The demo upstream serves real recorded tool definitions but contacts no real service: a call is
answered with a clearly labelled canned text echoing the arguments and, when the tool declares an
`outputSchema`, `structuredContent` built to conform to it (clients such as the MCP SDK check that).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from jsonschema.validators import validator_for

CANNED_LABEL = "[toolsearch demo upstream]"

_MAX_DEPTH = 12
_STRING_FORMATS = {
    "date-time": "2025-01-01T00:00:00Z",
    "date": "2025-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "192.0.2.1",
    "hostname": "example.com",
}


def canned_result(tool: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A `CallToolResult` (wire form) saying which tool was called with what, and that nothing was done."""
    echoed = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()
    text = (
        f"{CANNED_LABEL} canned result: {tool.get('name')} was called with {echoed}; "
        "no real service was contacted"
    )
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    output_schema = tool.get("outputSchema")
    if isinstance(output_schema, Mapping):
        structured = conforming_example(output_schema)
        # Structured content is an object on every protocol version this upstream serves.
        if isinstance(structured, dict):
            result["structuredContent"] = structured
    return result


def conforming_example(schema: Mapping[str, Any] | bool) -> Any | None:
    """A small value that validates against `schema`, or None when none could be built.

    Built from required properties, first enum/const/anyOf choices and lower bounds, then checked
    with the schema's own validator (its `$schema` dialect, default 2020-12).
    """
    value = _example(schema, schema, 0)
    return value if _conforms(schema, value) else None


def example_arguments(input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy a tool's input schema (required parameters only), or `{}`."""
    value = conforming_example(input_schema)
    return value if isinstance(value, dict) else {}


def _conforms(schema: Mapping[str, Any] | bool, value: Any) -> bool:
    try:
        validator_cls = validator_for(schema)
        # The stubs' Validator protocol takes a dict; jsonschema's validators take any schema, booleans too.
        validator_cls.check_schema(schema)  # type: ignore[arg-type]
        return validator_cls(schema).is_valid(value)
    except Exception:  # an invalid recorded schema or an unresolvable $ref: no conforming value then
        return False


def _example(schema: Any, root: Any, depth: int) -> Any:
    if schema is True or not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return "example"
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _example(_resolve(ref, root), root, depth + 1)
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return _example(_first_non_null(options), root, depth + 1)
    if isinstance(schema.get("allOf"), list):
        return _example_all_of(schema, root, depth)
    return _example_of_type(schema, _schema_type(schema), root, depth)


def _example_all_of(schema: Mapping[str, Any], root: Any, depth: int) -> Any:
    parts = [_example(part, root, depth + 1) for part in schema["allOf"]]
    rest = {key: value for key, value in schema.items() if key != "allOf"}
    if rest:
        parts.append(_example(rest, root, depth + 1))
    if all(isinstance(part, dict) for part in parts):
        return {key: value for part in parts for key, value in part.items()}
    return parts[0]


def _example_of_type(schema: Mapping[str, Any], kind: str | None, root: Any, depth: int) -> Any:
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            properties = {}
        required = [name for name in schema.get("required") or () if isinstance(name, str)]
        return {name: _example(properties.get(name, True), root, depth + 1) for name in required}
    if kind == "array":
        items = schema.get("items", True)
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            return [_example(item, root, depth + 1) for item in prefix]
        return [_example(items, root, depth + 1) for _ in range(int(schema.get("minItems") or 0))]
    if kind == "string":
        return _example_string(schema)
    if kind in ("integer", "number"):
        return _example_number(schema, kind)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "example"


def _example_string(schema: Mapping[str, Any]) -> str:
    text = _STRING_FORMATS.get(str(schema.get("format")), "example")
    min_length = int(schema.get("minLength") or 0)
    if len(text) < min_length:
        text = text + "x" * (min_length - len(text))
    max_length = schema.get("maxLength")
    return text[: int(max_length)] if isinstance(max_length, int) else text


def _example_number(schema: Mapping[str, Any], kind: str) -> int | float:
    lower = schema.get("minimum")
    exclusive = schema.get("exclusiveMinimum")
    if isinstance(exclusive, int | float) and not isinstance(exclusive, bool):
        lower = exclusive + 1
    upper = schema.get("maximum")
    value = lower if isinstance(lower, int | float) else 1
    if isinstance(upper, int | float) and value > upper:
        value = upper
    return int(value) if kind == "integer" else value


def _schema_type(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [item for item in kind if item != "null"]
        kind = kinds[0] if kinds else "null"
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def _first_non_null(options: list[Any]) -> Any:
    for option in options:
        if not (isinstance(option, Mapping) and option.get("type") == "null"):
            return option
    return options[0]


def _resolve(ref: str, root: Any) -> Any:
    """A local `#/...` JSON pointer inside the schema document; anything else is unconstrained."""
    if not ref.startswith("#"):
        return True
    node = root
    for token in ref[1:].split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or token not in node:
            return True
        node = node[token]
    return node
