"""A proxy in front of a scripted upstream, shared by the tests of one module (the fuzz tests send
thousands of requests), and a synchronous HTTP client for them."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import running_proxy
from toolsearch.testing import recorded_tools, serve_app

from .fuzzing import FUZZ_SERVERS
from .upstreams import ScriptedUpstream


@pytest.fixture(scope="module")
def fuzz_tools() -> list[dict]:
    return recorded_tools(list(FUZZ_SERVERS))


@pytest.fixture(scope="module")
def fuzz_proxy(fuzz_tools: list[dict]) -> Iterator[str]:
    """The proxy's MCP URL; its upstream lists recorded tools and answers every call."""
    with serve_app(ScriptedUpstream(fuzz_tools)) as base, running_proxy(f"{base}/mcp") as proxy:
        yield proxy


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=60.0) as client:
        yield client
