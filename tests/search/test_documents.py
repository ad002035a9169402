"""What text a tool contributes to search, and that it is analysed once per distinct tool."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import numpy as np
import pytest

from toolsearch.search import documents, text
from toolsearch.search.documents import text_language, tool_documents, tool_fields
from toolsearch.search.lexical import LexicalIndex
from toolsearch.tool import Tool, ToolInterner


def _tool(**definition: Any) -> Tool:
    return ToolInterner().intern({"name": "demo_tool", **definition})


def test_fields_hold_name_server_title_and_description() -> None:
    fields = tool_fields(
        ToolInterner().intern(
            {
                "name": "github_create_issue",
                "description": "Create a new issue. Labels and assignees are optional.",
                "annotations": {"title": "Create issue"},
            }
        )
    )
    assert fields["name"] == "github_create_issue"
    assert fields["server"] == "github"
    assert fields["title"] == "Create issue"
    assert fields["description"] == "Create a new issue. Labels and assignees are optional."


def test_the_summary_is_the_first_sentence_of_the_description() -> None:
    fields = tool_fields(_tool(description="List open pull requests. Use `state` to include closed ones."))
    assert fields["summary"] == "List open pull requests."


def test_parameters_are_collected_from_nested_objects_arrays_and_alternatives() -> None:
    schema = {
        "type": "object",
        "properties": {
            "owner": {"type": "string", "description": "Repository owner"},
            "labels": {
                "type": "array",
                "items": {"type": "object", "properties": {"color": {"type": "string"}}},
            },
            "target": {
                "anyOf": [
                    {"type": "object", "properties": {"branch": {"description": "Branch to merge into"}}},
                    {"type": "object", "properties": {"tag": {"type": "string"}}},
                ]
            },
        },
    }
    fields = tool_fields(_tool(inputSchema=schema))
    assert fields["parameter_names"].split() == ["owner", "labels", "color", "target", "branch", "tag"]
    assert fields["parameter_descriptions"].splitlines() == ["Repository owner", "Branch to merge into"]


def test_schema_nesting_is_followed_only_so_deep() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"leaf": {"type": "string"}}}
    for level in range(10):
        schema = {"type": "object", "properties": {f"level{level}": schema}}
    names = tool_fields(_tool(inputSchema=schema))["parameter_names"].split()
    assert names[:3] == ["level9", "level8", "level7"]
    assert "leaf" not in names


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": ["not", "a", "mapping"]},
        {"properties": {"a": "string", "b": None, "c": {"description": 42}}},
        {"properties": {"d": {"items": "x", "anyOf": "y", "oneOf": [1, None]}}},
        "not a schema at all",
        None,
    ],
)
def test_junk_schemas_give_what_they_can_without_error(schema: Any) -> None:
    fields = tool_fields(_tool(inputSchema=schema, description=None, title=7))
    assert set(fields["parameter_names"].split()) <= {"a", "b", "c", "d"}


def test_a_tool_s_fields_are_read_once_and_no_reader_can_change_them() -> None:
    tool = _tool(description="Read by integrity, BM25F and the model alike.")
    fields = tool_fields(tool)
    assert tool_fields(tool) is fields
    with pytest.raises(TypeError):
        fields["summary"] = ""  # type: ignore[index]


def test_equal_definitions_share_one_analysed_document() -> None:
    definition = {"name": "demo_shared", "description": "A tool two callers both see."}
    first = ToolInterner().intern(definition)
    second = ToolInterner().intern(dict(definition))
    assert first is not second
    assert tool_documents([first]) == tool_documents([second])


def test_an_index_of_tools_seen_before_tokenises_nothing(
    slice_definitions: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = LexicalIndex.build([ToolInterner().intern(tool) for tool in slice_definitions])

    def _refuse(_: str) -> list[str]:
        raise AssertionError("a tool seen before was analysed again")

    monkeypatch.setattr(text, "terms", _refuse)
    again = [ToolInterner().intern(dict(tool)) for tool in slice_definitions]
    second = LexicalIndex.build(again)

    query = "merge a pull request"
    assert [hit.position for hit in second.search(query, 5)] == [
        hit.position for hit in first.search(query, 5)
    ]


def test_a_text_that_several_new_tools_share_is_analysed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    analysed: list[str] = []
    terms = text.terms

    def _recorded(value: str) -> list[str]:
        analysed.append(value)
        return terms(value)

    monkeypatch.setattr(text, "terms", _recorded)
    shared = {"title": "Shared title", "inputSchema": {"type": "object", "properties": {"owner": {}}}}
    LexicalIndex.build(
        [
            _tool(**shared, name="demo_first", description="The first tool."),
            _tool(**shared, name="demo_second", description="The second tool."),
        ]
    )
    assert sorted(value for value in analysed if value in ("demo", "Shared title", "owner")) == [
        "Shared title",
        "demo",
        "owner",
    ]


def test_a_document_is_kept_while_an_index_holds_it_and_no_longer() -> None:
    tool = ToolInterner().intern({"name": "demo_transient", "description": "Seen once, then gone."})
    index = LexicalIndex.build([tool])
    document = weakref.ref(tool_documents([tool])[0])
    assert document() is not None
    del index
    gc.collect()
    assert document() is None


def _catalog(prefix: str, size: int) -> list[Tool]:
    """`size` tools whose words no other catalog has."""
    interner = ToolInterner()
    return [
        interner.intern(
            {"name": f"{prefix}_tool{n}", "description": f"Runs {prefix}job{n} on {prefix}host{n}."}
        )
        for n in range(size)
    ]


def test_the_current_vocabulary_holds_at_most_its_bound_and_one_catalog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(documents, "MAX_VOCABULARY_TERMS", 40)
    vocabularies = set()
    for catalog in range(20):
        found = tool_documents(_catalog(f"upstream{catalog}", 5))
        catalog_terms = len(
            np.unique(np.concatenate([field for document in found for field in document.fields]))
        )
        vocabulary = found[0].vocabulary
        assert all(document.vocabulary is vocabulary for document in found)
        assert len(vocabulary) <= 40 + catalog_terms
        vocabularies.add(id(vocabulary))
    assert len(vocabularies) > 1


def test_a_document_of_an_older_vocabulary_is_analysed_again_in_the_current(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = _catalog("reanalysed", 3)
    first = tool_documents(tools)
    monkeypatch.setattr(documents, "MAX_VOCABULARY_TERMS", 0)
    second = tool_documents(tools)
    assert second[0].vocabulary is not first[0].vocabulary
    assert all(document.vocabulary is second[0].vocabulary for document in second)
    assert [second[0].vocabulary.terms(field) for field in second[0].fields] == [
        first[0].vocabulary.terms(field) for field in first[0].fields
    ]


def test_an_old_vocabulary_is_freed_once_its_index_and_documents_are_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = _catalog("freed", 3)
    monkeypatch.setattr(documents, "MAX_VOCABULARY_TERMS", 0)
    vocabulary = weakref.ref(tool_documents(tools)[0].vocabulary)  # a new one, of these tools alone
    monkeypatch.setattr(documents, "MAX_VOCABULARY_TERMS", 1_000)
    index = LexicalIndex.build(tools)
    monkeypatch.setattr(documents, "MAX_VOCABULARY_TERMS", 0)
    assert tool_documents(_catalog("later", 3))[0].vocabulary is not vocabulary()
    gc.collect()
    assert vocabulary() is not None  # the index still refers to it
    assert [hit.position for hit in index.search("freedjob1", 1)] == [1]
    del index
    gc.collect()
    assert vocabulary() is None


def test_a_texts_language_is_told_by_most_of_its_runs_of_ten_words() -> None:
    german = (
        "Dieses Werkzeug liefert die Wettervorhersage für eine Stadt und zeigt die Temperatur, den Regen "
        "und den Wind für die nächsten Tage an, und es warnt vor Sturm und Gewitter in der Region."
    )
    assert text_language(german) == "de"


def test_technical_english_and_short_texts_have_no_other_language() -> None:
    technical = (
        "Fast keyword search across 22 server-side code types (SI/BR/ACL). Portal regex+snippets: use "
        "search_portal_regex_matches. Returns table, sys_id, name and the matching lines with offsets."
    )
    assert text_language(technical) in ("en", "")
    assert text_language("Reemplaza el bloque de párrafos.") == ""
