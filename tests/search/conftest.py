"""Slices of the recorded catalog (real tool definitions of public MCP servers) to search in."""

from __future__ import annotations

from typing import Any

import pytest

from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path
from toolsearch.naming import split_qualified_name
from toolsearch.tool import Tool, ToolInterner

SLICE_SERVERS = (
    "github",
    "slack",
    "jira-cloud",
    "kubernetes-go",
    "time",
    "filesystem",
    "bitwarden",
    "google-calendar",
    "stripe025",
    "notion",
)


@pytest.fixture(scope="session")
def recorded_definitions() -> list[dict[str, Any]]:
    return load_catalog_file(recorded_catalog_path())


@pytest.fixture(scope="session")
def slice_definitions(recorded_definitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """About 280 tools of ten servers, some of them near-twins of each other."""
    return [tool for tool in recorded_definitions if split_qualified_name(tool["name"])[0] in SLICE_SERVERS]


@pytest.fixture(scope="session")
def slice_tools(slice_definitions: list[dict[str, Any]]) -> list[Tool]:
    interner = ToolInterner()
    return [interner.intern(definition) for definition in slice_definitions]
