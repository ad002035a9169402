"""`toolsearch demo`: both servers start, the scripted search and call go through the proxy."""

from __future__ import annotations

import argparse

import pytest

from toolsearch.commands.demo import DEMO_QUERY, add_demo_command
from toolsearch.testing import CANNED_LABEL


def test_demo_once_searches_calls_a_read_only_tool_and_exits(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_demo_command(parser.add_subparsers())
    args = parser.parse_args(["demo", "--once", "--port", "0"])

    assert args.handler(args) == 0

    printed = capsys.readouterr().out
    assert f'search_tools {{"query":"{DEMO_QUERY}"}}' in printed
    assert "[read-only]" in printed
    assert "call_read_tool" in printed
    assert f"{CANNED_LABEL} canned result:" in printed
