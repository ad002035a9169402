"""Input schemas as an answer shows them: what of a schema decides a call, shortened by a
`SchemaCut` (`compact_schema`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import cachetools
import orjson

from toolsearch.metatools.descriptions import cut_text, plain, shortened
from toolsearch.tool import Tool
from toolsearch.untrusted import clean_text


@dataclass(frozen=True, slots=True)
class SchemaCut:
    """How far `compact_schema` shortens a schema."""

    description_chars: int
    enum_items: int
    depth: int
    """Levels of properties named; a property deeper than that is left out, one at the last level
    shows its type but not its own properties."""
    properties: int = 25


_SCHEMA_KEYS: Final = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        "default",
        "format",
        "anyOf",
        "oneOf",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "$ref",
    }
)
"""What of a schema decides how to call: its types, names, requirements and allowed values.
Titles, patterns, `$defs`, `additionalProperties` and examples are left to `describe_tool`."""
_MAX_VARIANTS: Final = 4
_MAX_DEFAULT_CHARS: Final = 40


@cachetools.cached(
    cachetools.LRUCache(maxsize=2048), key=lambda tool, cut: (tool.digest, cut), lock=threading.Lock()
)
def compact_schema_of(tool: Tool, cut: SchemaCut) -> dict[str, Any]:
    """`compact_schema` of a tool's input schema, kept for the tools searched most (callers share
    tools; answers only read it)."""
    return compact_schema(tool.input_schema, cut)


def compact_schema(schema: Mapping[str, Any], cut: SchemaCut) -> dict[str, Any]:
    """What of an input schema decides a call, shortened by `cut`: property descriptions and enum
    lists cut, properties deeper than `cut.depth` levels shown by type only, keys that only
    document (titles, examples, patterns) left out. A local `$ref` (`#/$defs/...`) is replaced by
    what it names, one level deeper, since the `$defs` it points into are not shown."""
    return _compact(schema, cut, 0, schema)


def _compact(node: Mapping[str, Any], cut: SchemaCut, depth: int, root: Mapping[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for key, value in node.items():
        if key not in _SCHEMA_KEYS:
            continue
        if key == "properties" and isinstance(value, Mapping):
            if depth >= cut.depth:
                continue
            shown[key] = _properties(value, cut, depth, root)
            if len(value) > cut.properties:
                shown["moreProperties"] = len(value) - cut.properties
        elif key == "items" and isinstance(value, Mapping):
            shown[key] = _child(value, cut, depth + 1, root)
        elif key == "$ref":
            target = _local_definition(root, value)
            for name, part in _child(target, cut, depth + 1, root).items() if target else ():
                shown.setdefault(name, part)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            variants = [item for item in value if isinstance(item, Mapping)][:_MAX_VARIANTS]
            shown[key] = [_child(item, cut, depth + 1, root) for item in variants]
        elif key == "description" and isinstance(value, str):
            if cut.description_chars and value.strip():
                shown[key] = cut_text(plain(value), cut.description_chars)
        elif key == "enum" and isinstance(value, list):
            shown[key] = [_scalar(item) for item in value[: cut.enum_items]]
            if len(value) > cut.enum_items:
                shown[key].append(f"…({len(value) - cut.enum_items} more)")
        elif key == "default" and json_chars(value) > _MAX_DEFAULT_CHARS:
            continue
        elif key == "required" and isinstance(value, list):
            if depth >= cut.depth:
                continue
            shown[key] = [clean_text(str(name))[:64] for name in value[: cut.properties]]
        else:
            shown[key] = _scalar(value)
    return shown


def _properties(
    properties: Mapping[str, Any], cut: SchemaCut, depth: int, root: Mapping[str, Any]
) -> dict[str, Any]:
    shown = {}
    for name, value in list(properties.items())[: cut.properties]:
        key = clean_text(str(name))[:64]
        shown[key] = _child(value, cut, depth + 1, root) if isinstance(value, Mapping) else {}
    return shown


def _child(node: Mapping[str, Any], cut: SchemaCut, depth: int, root: Mapping[str, Any]) -> dict[str, Any]:
    """A nested schema: compacted while within `cut.depth`, by its type alone past it."""
    if depth <= cut.depth:
        return _compact(node, cut, depth, root)
    kind = node.get("type")
    return {"type": _scalar(kind)} if isinstance(kind, str | list) else {}


def _local_definition(root: Mapping[str, Any], ref: object) -> Mapping[str, Any] | None:
    """The schema a JSON pointer within the document (`#/$defs/Name`) names, or None."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: object = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part.replace("~1", "/").replace("~0", "~"))
    return node if isinstance(node, Mapping) else None


def _scalar(value: Any) -> Any:
    """An upstream value in a schema: texts cleaned and short, lists of texts too, nothing nested."""
    if isinstance(value, str):
        return shortened(clean_text(value), 60)
    if isinstance(value, list):
        return [_scalar(item) for item in value[:10] if not isinstance(item, dict | list)]
    if isinstance(value, dict):
        return {}
    return value


def json_chars(value: Any) -> int:
    """Characters of `value` as JSON."""
    return len(orjson.dumps(value).decode())
