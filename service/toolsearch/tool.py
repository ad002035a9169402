"""One upstream tool definition, interned by content so that callers share it."""

from __future__ import annotations

import functools
import hashlib
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson


def tool_digest(definition: Mapping[str, Any]) -> str:
    """SHA-256 of the definition's canonical JSON: equal content, equal digest."""
    return hashlib.sha256(orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)).hexdigest()


_Derived = TypeVar("_Derived")


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class Tool:
    """An upstream tool as listed: the definition itself plus what is derived from it once."""

    definition: Mapping[str, Any]
    digest: str
    name: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", str(self.definition.get("name", "")))

    @property
    def title(self) -> str:
        annotations = self.annotations
        return str(self.definition.get("title") or annotations.get("title") or "")

    @property
    def description(self) -> str:
        return str(self.definition.get("description") or "")

    @property
    def input_schema(self) -> Mapping[str, Any]:
        schema = self.definition.get("inputSchema")
        return schema if isinstance(schema, Mapping) else {"type": "object"}

    @property
    def annotations(self) -> Mapping[str, Any]:
        annotations = self.definition.get("annotations")
        return annotations if isinstance(annotations, Mapping) else {}

    @property
    def meta(self) -> Mapping[str, Any]:
        meta = self.definition.get("_meta")
        return meta if isinstance(meta, Mapping) else {}

    @property
    def always_load(self) -> bool:
        """Marked by its server to be loaded up front (`_meta["anthropic/alwaysLoad"]`): pinned."""
        return self.meta.get("anthropic/alwaysLoad") is True

    @property
    def search_hint(self) -> str:
        """Words its server adds for search (`_meta["anthropic/searchHint"]`), searched as the
        description is."""
        hint = self.meta.get("anthropic/searchHint")
        return hint if isinstance(hint, str) else ""

    @property
    def app_only(self) -> bool:
        """Visible to an MCP Apps UI but not to the model (`_meta.ui.visibility` without "model")."""
        ui = self.meta.get("ui")
        visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
        return isinstance(visibility, list) and bool(visibility) and "model" not in visibility

    @property
    def marked_read_only(self) -> bool:
        """What the upstream claims; the operator's `--write-tools` policy is applied on top."""
        return self.annotations.get("readOnlyHint") is True


class ToolInterner:
    """Hands out one `Tool` per distinct definition, for as long as any catalog holds it.

    1,000 callers who see the same 1,500 tools then hold one copy of those definitions
    (and of everything derived from them, keyed by digest) plus 1,000 small lists.
    """

    def __init__(self) -> None:
        self._tools: weakref.WeakValueDictionary[str, Tool] = weakref.WeakValueDictionary()

    def intern(self, definition: Mapping[str, Any]) -> Tool:
        digest = tool_digest(definition)
        tool = self._tools.get(digest)
        if tool is None:
            tool = Tool(definition=definition, digest=digest)
            self._tools[digest] = tool
        return tool

    def get(self, digest: str) -> Tool | None:
        """The tool of this digest, if one is interned now."""
        return self._tools.get(digest)

    def __len__(self) -> int:
        return len(self._tools)


def per_tool(derive: Callable[[Tool], _Derived]) -> Callable[[Tool], _Derived]:
    """`derive` (a pure function of a tool's definition) computed once per interned tool and kept
    as long as the tool is: every catalog holding the tool reuses it."""
    derived: weakref.WeakKeyDictionary[Tool, _Derived] = weakref.WeakKeyDictionary()
    lock = threading.Lock()

    @functools.wraps(derive)
    def once(tool: Tool) -> _Derived:
        with lock:
            if tool in derived:
                return derived[tool]
        value = derive(tool)
        with lock:
            derived[tool] = value
        return value

    return once
