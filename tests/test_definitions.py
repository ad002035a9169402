"""The meta-tools' definitions as `tools/list` shows them (`definitions`): a fixed table whose batch
tool takes its limit from the settings, then the caller's pinned tools as themselves."""

from __future__ import annotations

import copy
from typing import Any

from tests.support.catalogs import lexical_catalog
from toolsearch.metatools.definitions import (
    CALL_READ,
    CALL_READ_BATCH,
    CALL_WRITE,
    DESCRIBE,
    SEARCH,
    definitions,
    listed_tools,
)
from toolsearch.metatools.policy import ToolPolicy

OBJECT = {"type": "object"}
DEFINITIONS = [
    {"name": "notes_search", "inputSchema": OBJECT},
    {"name": "github_issue", "inputSchema": OBJECT, "_meta": {"anthropic/alwaysLoad": True}},
    {"name": "github_pull", "inputSchema": OBJECT},
    {"name": "github_commit", "inputSchema": OBJECT},
]


def _by_name(listed: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {definition["name"]: definition for definition in listed}


def test_the_five_meta_tools_are_listed_search_first_and_the_batch_tool_says_its_limit() -> None:
    listed = definitions(7)
    assert [d["name"] for d in listed] == [SEARCH, DESCRIBE, CALL_READ, CALL_READ_BATCH, CALL_WRITE]
    batch = _by_name(listed)[CALL_READ_BATCH]
    assert batch["description"].startswith("Call up to 7 read-only tools at once.")
    assert batch["inputSchema"]["properties"]["calls"]["maxItems"] == 7


def test_a_batch_limit_of_zero_leaves_the_batch_tool_out() -> None:
    assert [d["name"] for d in definitions(0)] == [SEARCH, DESCRIBE, CALL_READ, CALL_WRITE]


def test_one_limit_does_not_change_the_definitions_another_gets() -> None:
    before = copy.deepcopy(definitions(10))
    definitions(3)
    assert definitions(10) == before


def test_only_the_write_tool_is_marked_destructive() -> None:
    destructive = [d["name"] for d in definitions(10) if d["annotations"].get("destructiveHint")]
    assert destructive == [CALL_WRITE]


def test_without_a_catalog_only_the_meta_tools_are_listed() -> None:
    assert listed_tools(definitions(10), None, ToolPolicy()) == definitions(10)


def test_search_tools_names_the_callers_servers_and_pinned_tools_follow_by_name() -> None:
    policy = ToolPolicy(pin_patterns=("notes_*",))
    listed = listed_tools(definitions(10), lexical_catalog(DEFINITIONS), policy)
    assert [d["name"] for d in listed[5:]] == ["github_issue", "notes_search"]
    assert listed[5] == DEFINITIONS[1]
    assert _by_name(listed)[SEARCH]["description"].endswith(
        " Tools come from these servers (most tools first): github, notes."
    )


def test_a_pinned_tool_named_like_a_meta_tool_is_not_listed_twice() -> None:
    catalog = lexical_catalog([{"name": SEARCH, "inputSchema": OBJECT}])
    listed = listed_tools(definitions(10), catalog, ToolPolicy(pin_patterns=("*",)))
    assert [d["name"] for d in listed].count(SEARCH) == 1
