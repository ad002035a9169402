"""Small in-process catalogs for the tests of the rules: real tools, a real lexical index."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolsearch.backends.base import CatalogRecord, catalog_digest
from toolsearch.catalog.service import Catalog
from toolsearch.catalog.toolsets import Toolset
from toolsearch.search.lexical import LexicalIndex
from toolsearch.tool import ToolInterner

ZONE = {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}
CLOCK_AND_NOTES = [
    {
        "name": "clock_now",
        "description": "The current time in a timezone.",
        "inputSchema": ZONE,
        "annotations": {"readOnlyHint": True},
    },
    {"name": "clock_set", "description": "Set the system clock.", "inputSchema": {"type": "object"}},
    {
        "name": "notes_search",
        "description": "Search notes by their text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "annotations": {"readOnlyHint": True},
    },
]
"""A read-only tool with a required argument, a tool that writes, and one of another server."""


def lexical_catalog(definitions: Sequence[dict[str, Any]]) -> Catalog:
    """A caller's catalog of `definitions`, listed at time 0, searched by BM25."""
    interner = ToolInterner()
    tools = tuple(interner.intern(definition) for definition in definitions)
    toolset = Toolset(tools, catalog_digest(tools), LexicalIndex.build(tools))
    return Catalog(toolset, CatalogRecord(tools, None, listed_at=0.0))
