"""Calling upstream tools through the proxy: the read/write split, batches, validation, direct calls."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import TOKEN_X, call_text, connect, running_proxy, running_upstream

TIME_ARGS = {"timezone": "Europe/Vilnius"}


async def test_call_read_tool_calls_a_read_only_tool(proxy_url: str, upstream, mode: str) -> None:
    async with connect(proxy_url, TOKEN_X, mode) as client:
        result = await client.call_tool(
            "call_read_tool", {"name": "time_get_current_time", "arguments": TIME_ARGS}
        )
    assert not result.is_error
    assert "time_get_current_time" in result.content[0].text
    call = upstream[1].calls[-1]
    assert (call.name, call.arguments) == ("time_get_current_time", TIME_ARGS)


async def test_call_read_tool_refuses_a_tool_that_is_not_read_only(proxy_url: str) -> None:
    arguments = {"name": "github_create_issue", "arguments": {"owner": "o", "repo": "r", "title": "t"}}
    async with connect(proxy_url, TOKEN_X) as client:
        is_error, text = await call_text(client, "call_read_tool", arguments)
    assert is_error
    assert "not marked read-only" in text
    assert "call_write_tool" in text


async def test_write_tools_flag_overrides_the_upstreams_read_only_mark(proxy_url: str) -> None:
    arguments = {"name": "filesystem_read_media_file", "arguments": {"path": "/tmp/a.png"}}
    async with connect(proxy_url, TOKEN_X) as client:
        is_error, text = await call_text(client, "call_read_tool", arguments)
    assert is_error
    assert "not marked read-only" in text


async def test_call_write_tool_calls_any_tool(proxy_url: str, upstream, mode: str) -> None:
    arguments = {"owner": "o", "repo": "r", "title": "Crash on start"}
    async with connect(proxy_url, TOKEN_X, mode) as client:
        result = await client.call_tool(
            "call_write_tool", {"name": "github_create_issue", "arguments": arguments}
        )
    assert not result.is_error
    assert upstream[1].calls[-1].arguments == arguments


async def test_arguments_sent_as_a_json_string_are_accepted(proxy_url: str, upstream) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        result = await client.call_tool(
            "call_read_tool", {"name": "time_get_current_time", "arguments": json.dumps(TIME_ARGS)}
        )
    assert not result.is_error
    assert upstream[1].calls[-1].arguments == TIME_ARGS


async def test_invalid_arguments_come_back_with_each_problem_and_the_schema(proxy_url: str, upstream) -> None:
    calls_before = len(upstream[1].calls)
    arguments = {"name": "github_create_issue", "arguments": {"owner": 5, "repo": "r"}}
    async with connect(proxy_url, TOKEN_X) as client:
        is_error, text = await call_text(client, "call_write_tool", arguments)
    assert is_error
    assert "at /: 'title' is a required property" in text
    assert "at /owner: 5 is not of type 'string'" in text
    assert 'Input schema: {"type":"object"' in text
    assert len(upstream[1].calls) == calls_before, "an invalid call must not reach the upstream"


async def test_unknown_tool_that_is_a_typo_names_the_intended_tool(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        is_error, text = await call_text(client, "call_read_tool", {"name": "time_get_curent_time"})
    assert is_error
    assert "Did you mean 'time_get_current_time'?" in text


async def test_tool_name_without_its_server_prefix_names_the_intended_tool(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        is_error, text = await call_text(client, "call_read_tool", {"name": "get_current_time"})
    assert is_error
    assert "Did you mean 'time_get_current_time'?" in text


async def test_a_tool_of_the_catalog_is_callable_directly_by_its_real_name(
    proxy_url: str, upstream, mode
) -> None:
    async with connect(proxy_url, TOKEN_X, mode) as client:
        result = await client.call_tool("time_get_current_time", TIME_ARGS)
    assert not result.is_error
    assert upstream[1].calls[-1].name == "time_get_current_time"


async def test_batch_runs_every_call_and_labels_the_failing_one(proxy_url: str) -> None:
    calls = [
        {"name": "time_get_current_time", "arguments": TIME_ARGS},
        {"name": "github_create_issue", "arguments": {"owner": "o", "repo": "r", "title": "t"}},
        {"name": "yfinance_yfinance_get_ticker_info", "arguments": {"symbol": "AAPL"}},
    ]
    async with connect(proxy_url, TOKEN_X) as client:
        result = await client.call_tool("call_read_tools", {"calls": calls})
    assert not result.is_error
    summary = result.structured_content["results"]
    assert [(r["index"], r["name"], r["isError"]) for r in summary] == [
        (0, "time_get_current_time", False),
        (1, "github_create_issue", True),
        (2, "yfinance_yfinance_get_ticker_info", False),
    ]
    labels = [item.text for item in result.content if re.match(r"\[\d+\] ", item.text)]
    assert labels == [
        "[0] time_get_current_time: ok",
        "[1] github_create_issue: failed",
        "[2] yfinance_yfinance_get_ticker_info: ok",
    ]


async def test_batch_larger_than_the_limit_is_refused_with_the_limit(proxy_url: str) -> None:
    calls = [{"name": "time_get_current_time", "arguments": TIME_ARGS}] * 11
    async with connect(proxy_url, TOKEN_X) as client:
        is_error, text = await call_text(client, "call_read_tools", {"calls": calls})
    assert is_error
    assert "is too long" in text or "maxItems" in text


async def test_upstream_results_pass_through_unchanged(catalog_tools) -> None:
    crafted = {
        "content": [{"type": "text", "text": "partial"}, {"type": "text", "text": "second"}],
        "structuredContent": {"temperature": 21.5},
        "isError": True,
    }

    async def on_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return crafted

    with running_upstream(catalog_tools, on_call=on_call) as (url, _), running_proxy(url) as proxy:
        async with connect(proxy) as client:
            result = await client.call_tool(
                "call_write_tool", {"name": "time_get_current_time", "arguments": TIME_ARGS}
            )
    assert [item.text for item in result.content] == ["partial", "second"]
    assert result.structured_content == {"temperature": 21.5}
    assert result.is_error is True


async def test_upstream_invalid_params_error_comes_back_with_the_schema(catalog_tools) -> None:
    async def on_call(name: str, arguments: dict[str, Any]) -> None:
        raise MCPError(-32602, "timezone 'Mars/Olympus' is unknown")

    with running_upstream(catalog_tools, on_call=on_call) as (url, _), running_proxy(url) as proxy:
        async with connect(proxy) as client:
            is_error, text = await call_text(
                client,
                "call_read_tool",
                {"name": "time_get_current_time", "arguments": {"timezone": "Mars/Olympus"}},
            )
    assert is_error
    assert "The upstream rejected the arguments of time_get_current_time" in text
    assert "timezone 'Mars/Olympus' is unknown" in text
    assert "Input schema:" in text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_pinned_tools_are_listed_and_callable_as_themselves(upstream, mode: str) -> None:
    with running_proxy(upstream[0], pin=["time_*"]) as url:
        async with connect(url, TOKEN_X, mode) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            result = await client.call_tool("time_get_current_time", TIME_ARGS)
    assert names[5:] == ["time_convert_time", "time_get_current_time"]
    assert not result.is_error
