"""`--transport stdio`: the same tools for clients that start servers as commands."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import orjson
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import running_upstream


@pytest.fixture(scope="module")
def open_upstream(catalog_tools) -> Iterator[str]:
    """stdio has no caller credentials, so its upstream must need none."""
    with running_upstream(catalog_tools) as (url, _):
        yield url


def _command(upstream_url: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolsearch", "serve", "--transport", "stdio", "--upstream", upstream_url],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


async def test_stdio_serves_the_meta_tools_and_calls_through(open_upstream: str, mode: str) -> None:
    async with Client(_command(open_upstream), mode=mode) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        found = await client.call_tool("search_tools", {"query": "current time in a timezone", "limit": 3})
        called = await client.call_tool(
            "call_read_tool", {"name": "time_get_current_time", "arguments": {"timezone": "UTC"}}
        )
    assert names == ["search_tools", "describe_tool", "call_read_tool", "call_read_tools", "call_write_tool"]
    assert "time_get_current_time" in found.content[0].text
    assert not called.is_error
    assert "time_get_current_time" in called.content[0].text


def test_a_line_that_is_not_json_gets_a_parse_error_with_a_null_id(open_upstream: str) -> None:
    command = _command(open_upstream)
    done = subprocess.run(
        [command.command, *command.args],
        input=b'{"jsonrpc": "2.0", "id": 1, "method": \n',
        capture_output=True,
        env=command.env,
        timeout=60,
    )
    answer = orjson.loads(done.stdout.splitlines()[0])
    assert answer["id"] is None and "id" in answer
    assert answer["error"]["code"] == -32700
