"""Logs carry tool names, outcomes and timings only: never tokens, queries, arguments or results."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import call_json, call_text, connect, running_upstream
from toolsearch.testing import serve_proxy_process

SECRET_TOKEN = "tok-SECRET-7f3a9"
SECRET_QUERY = "QUERY-SECRET-moonbase timezone"
SECRET_ARGUMENT = "ARG-SECRET-Asia/Tokyo"
SECRET_RESULT = "RESULT-SECRET-42"


async def test_logs_never_contain_tokens_queries_arguments_or_results(catalog_tools) -> None:
    async def on_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": SECRET_RESULT}]}

    with running_upstream(catalog_tools, on_call=on_call) as (upstream_url, _):
        flags = ("--log-format=json", "--log-level=debug")
        with serve_proxy_process(upstream_url, *flags) as served:
            async with connect(f"{served.url}/mcp", SECRET_TOKEN) as client:
                await call_json(client, "search_tools", {"query": SECRET_QUERY})
                await call_text(
                    client,
                    "call_read_tool",
                    {"name": "time_get_current_time", "arguments": {"timezone": SECRET_ARGUMENT}},
                )
                await call_text(
                    client, "call_write_tool", {"name": "time_get_current_time", "arguments": {"bad": 1}}
                )
            output = served.output()
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert any(line.get("tool") == "time_get_current_time" and line.get("outcome") == "ok" for line in lines)
    for secret in (SECRET_TOKEN, "SECRET-moonbase", SECRET_ARGUMENT, SECRET_RESULT):
        assert secret not in output
