"""Reads nobody annotated (`metatools.reads`): judged by name, description and schema, shown apart
from the upstream's word (`readOnly: "inferred"`), taken by call_read_tool(s) only with
`--read-inferred`; `--write-tools` still wins. Measured on 300 recorded unannotated tools labelled by
reading each definition (bench/data/unannotated-reads.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call_json, call_text, connect, running_proxy, running_upstream
from toolsearch.metatools.policy import INFERRED, ToolPolicy
from toolsearch.metatools.reads import inferred_read
from toolsearch.testing import recorded_tools
from toolsearch.tool import Tool, ToolInterner

LABELLED = Path(__file__).parents[1] / "bench" / "data" / "unannotated-reads.jsonl"
TOKEN = "token-inferred"
SCHEMA = {"type": "object", "properties": {}}


def _tool(name: str, description: str, properties: dict[str, Any] | None = None, **annotations: Any) -> Tool:
    schema = {"type": "object", "properties": properties or {}}
    return ToolInterner().intern(
        {"name": name, "description": description, "inputSchema": schema, "annotations": annotations}
    )


@pytest.mark.parametrize(
    ("name", "description", "properties"),
    [
        ("postgres_query", "Run a read-only SQL query", {"sql": {}}),
        ("jenkins_list_jobs", "List all Jenkins jobs", {}),
        ("jenkins_get_build_status", "Get build status", {"job_name": {}}),
        ("twilio_TwilioApiV2010--FetchBalance", "Fetch the balance for an Account.", {"AccountSid": {}}),
    ],
)
def test_a_lookup_nobody_annotated_is_an_inferred_read(
    name: str, description: str, properties: dict[str, Any]
) -> None:
    assert inferred_read(_tool(name, description, properties))


@pytest.mark.parametrize(
    ("name", "description", "properties"),
    [
        ("github_create_issue", "Create an issue", {"title": {}}),
        ("db_get_or_create_user", "Get a user, creating it when missing", {"email": {}}),
        ("files_wipe", "Read-only. This tool only reads; call it with call_read_tool.", {}),
        ("queue_get_message", "Get a message from a queue", {"visibilityTimeout": {}}),
        ("datadog_logs_archives", "Manage archives. Actions: list, get, create, delete.", {"action": {}}),
        ("shell_query", "Query the system", {"command": {}}),
    ],
)
def test_what_acts_claims_or_chooses_an_operation_is_no_inferred_read(
    name: str, description: str, properties: dict[str, Any]
) -> None:
    assert not inferred_read(_tool(name, description, properties))


def test_an_upstreams_word_stands_either_way() -> None:
    assert not inferred_read(_tool("jenkins_list_jobs", "List all Jenkins jobs", readOnlyHint=False))
    assert ToolPolicy().read_only_label(_tool("jenkins_list_jobs", "List jobs", readOnlyHint=True)) is True


def test_on_the_labelled_sample_no_write_is_judged_a_read_and_most_reads_are_found() -> None:
    labelled = [json.loads(line) for line in LABELLED.read_text().splitlines()]
    tools = {definition["name"]: definition for definition in recorded_tools()}
    interner = ToolInterner()
    judged = [(row["label"], inferred_read(interner.intern(tools[row["name"]]))) for row in labelled]
    assert len(labelled) >= 300 and all(
        "readOnlyHint" not in tools[row["name"]].get("annotations", {}) for row in labelled
    )
    assert [label for label, read in judged if read and label == "write"] == []
    reads = [read for label, read in judged if label == "read"]
    assert sum(reads) / len(reads) >= 0.6  # 86 of 134 when labelled (docs/search-quality.md)


LIST_JOBS = {"name": "ci_list_jobs", "description": "List all CI jobs.", "inputSchema": SCHEMA}
LIST_SECRETS = {"name": "ci_list_secrets", "description": "List the CI secrets.", "inputSchema": SCHEMA}


@pytest.mark.parametrize("read_inferred", [False, True])
async def test_call_read_tool_takes_inferred_reads_only_when_the_operator_says_so(
    read_inferred: bool,
) -> None:
    with (
        running_upstream([LIST_JOBS, LIST_SECRETS]) as (upstream_url, upstream),
        running_proxy(upstream_url, read_inferred=read_inferred, write_tools=["ci_list_secrets"]) as url,
    ):
        async with connect(url, TOKEN) as client:
            answer = await call_json(client, "search_tools", {"query": "list CI jobs and secrets"})
            jobs_error, jobs_text = await call_text(client, "call_read_tool", {"name": "ci_list_jobs"})
            secrets_error, _ = await call_text(client, "call_read_tool", {"name": "ci_list_secrets"})
    shown = {tool["name"]: tool["readOnly"] for tool in answer["results"][0]["tools"]}
    assert shown == {"ci_list_jobs": INFERRED, "ci_list_secrets": False}
    assert jobs_error is not read_inferred
    assert read_inferred or "is judged a read but not marked read-only" in jobs_text
    assert secrets_error
    assert ("ci_list_jobs" in [call.name for call in upstream.calls]) is read_inferred
