"""Which of the tools an upstream lists a caller is shown (`listing.visible_tools`): the
servable ones, at most `--max-catalog-tools`, and from a 2026-07-28 upstream only those whose
`x-mcp-header` annotations keep the spec's rules."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolsearch.catalog.listing import named_once, visible_tools
from toolsearch.tool import Tool, ToolInterner
from toolsearch.untrusted import MAX_NAME_CHARS

INTERNER = ToolInterner()
BAD_HEADER = {
    "name": "bad_header",
    "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "x-mcp-header": "two words"}}},
}


def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}}


async def _pages(*pages: list[Any]) -> AsyncIterator[list[Any]]:
    for page in pages:
        yield page


async def _names(
    *pages: list[Any], modern: bool = False, max_tools: int = 100, verdicts: Any = None
) -> list[str]:
    shown = await visible_tools(
        _pages(*pages), modern=modern, max_tools=max_tools, interner=INTERNER, verdicts=verdicts
    )
    return [tool.name for tool in shown]


@pytest.mark.parametrize(
    ("pages", "shown"),
    [
        ([[_tool("a"), _tool("b")], [_tool("c")]], ["a", "b", "c"]),
        ([[_tool("a"), "not a tool", 5, None]], ["a"]),
        ([[_tool("a"), _tool(""), _tool("x" * (MAX_NAME_CHARS + 1)), _tool("bad\x00name")]], ["a"]),
        ([[], [_tool("a")]], ["a"]),
    ],
    ids=["all-pages", "not-objects", "unservable-names", "empty-page"],
)
async def test_only_servable_tools_are_shown(pages: list[list[Any]], shown: list[str]) -> None:
    assert await _names(*pages) == shown


async def test_past_the_limit_the_first_tools_are_shown_and_no_more_pages_are_read() -> None:
    read: list[int] = []

    async def pages() -> AsyncIterator[list[Any]]:
        for number in range(5):
            read.append(number)
            yield [_tool(f"p{number}_{index}") for index in range(3)]

    shown = await visible_tools(pages(), modern=False, max_tools=4, interner=INTERNER)
    assert [tool.name for tool in shown] == ["p0_0", "p0_1", "p0_2", "p1_0"]
    assert read == [0, 1]


@pytest.mark.parametrize(("modern", "shown"), [(True, ["a"]), (False, ["a", "bad_header"])])
async def test_broken_header_annotations_hide_a_tool_from_a_modern_upstream_only(
    modern: bool, shown: list[str]
) -> None:
    assert await _names([_tool("a"), BAD_HEADER], modern=modern) == shown


async def test_a_verdict_kept_from_one_era_listing_holds_for_the_other() -> None:
    verdicts: weakref.WeakKeyDictionary[Tool, str] = weakref.WeakKeyDictionary()
    listed = [_tool("a"), BAD_HEADER, _tool("x" * (MAX_NAME_CHARS + 1))]
    legacy = await _names(listed, modern=False, verdicts=verdicts)
    modern = await _names(listed, modern=True, verdicts=verdicts)
    legacy_again = await _names(listed, modern=False, verdicts=verdicts)
    assert (legacy, modern, legacy_again) == (["a", "bad_header"], ["a"], ["a", "bad_header"])


async def test_a_definition_nested_past_what_json_can_encode_is_left_out() -> None:
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(300):
        deep = {"type": "object", "properties": {"x": deep}}
    assert await _names([_tool("a"), {"name": "deep", "inputSchema": deep}]) == ["a"]


def test_a_name_listed_twice_is_its_first_tool_only() -> None:
    first, second = INTERNER.intern(_tool("a")), INTERNER.intern({**_tool("a"), "description": "again"})
    other = INTERNER.intern(_tool("b"))
    assert named_once([first, other, second]) == [first, other]
