"""What is derived from a tool is derived once per interned tool, and forgotten with it."""

import gc

from toolsearch.tool import Tool, ToolInterner, per_tool


def test_a_tool_shared_by_catalogs_is_derived_once() -> None:
    derived: list[str] = []

    @per_tool
    def name_length(tool: Tool) -> int:
        derived.append(tool.name)
        return len(tool.name)

    interner = ToolInterner()
    first = [interner.intern({"name": "create_issue"}), interner.intern({"name": "close_issue"})]
    second = [interner.intern({"name": "create_issue"}), interner.intern({"name": "list_issues"})]
    assert [name_length(tool) for tool in first + second] == [12, 11, 12, 11]
    assert derived == ["create_issue", "close_issue", "list_issues"]


def test_a_tool_no_catalog_holds_is_forgotten() -> None:
    derived: list[str] = []

    @per_tool
    def name(tool: Tool) -> str:
        derived.append(tool.name)
        return tool.name

    interner = ToolInterner()
    name(interner.intern({"name": "create_issue"}))
    gc.collect()
    name(interner.intern({"name": "create_issue"}))
    assert derived == ["create_issue", "create_issue"]
