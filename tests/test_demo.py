"""`toolsearch demo`: both servers start, the scripted search and call go through the proxy."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import httpx
import pytest

from toolsearch.commands.demo import DEMO_QUERY, add_demo_command
from toolsearch.testing import CANNED_LABEL, base_url, free_port, serve_process


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


def test_demo_without_model_dir_says_its_search_is_bm25_only(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_demo_command(parser.add_subparsers())
    args = parser.parse_args(["demo", "--once", "--port", "0"])

    assert args.handler(args) == 0

    assert "search:   BM25F only (lexical); --model-dir" in capsys.readouterr().out


def test_demo_stops_cleanly_on_sigterm() -> None:
    port = free_port()
    url = base_url("127.0.0.1", port)
    command = [sys.executable, "-m", "toolsearch", "demo", "--port", str(port)]
    environment = {"PYTHONPATH": os.pathsep.join(sys.path), "PYTHONUNBUFFERED": "1"}
    with serve_process(command, url=url, env=environment) as served:
        deadline = time.monotonic() + 60
        while "keeps serving" not in served.output() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "keeps serving" in served.output(), served.output()
        served.process.send_signal(signal.SIGTERM)
        exit_code = served.process.wait(30)
        output = served.output()
    assert exit_code == 0
    assert "Stopping." in output and "Traceback" not in output
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/healthz")
