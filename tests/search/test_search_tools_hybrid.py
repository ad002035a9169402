"""search_tools through the proxy with an embedding model (`--model-dir`): a real upstream, the
proxy under uvicorn on loopback and the MCP SDK client; the model is a tiny generated one."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import call_json, connect, running_proxy, running_upstream
from tests.embedding.tiny_models import write_model
from toolsearch.embedding.manifest import AbstentionThreshold, Calibration
from toolsearch.proxy import Proxy
from toolsearch.settings import Settings

TOOLS = [
    {"name": "tracker_create_issue", "description": "Create an issue.", "inputSchema": {"type": "object"}},
    {"name": "tracker_delete_issue", "description": "Delete an issue.", "inputSchema": {"type": "object"}},
    {"name": "files_list", "description": "List files in a folder.", "inputSchema": {"type": "object"}},
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tiny") / "model"
    write_model(directory, name="tiny-hybrid")
    return directory


@pytest.fixture(scope="module")
def upstream_url() -> Iterator[str]:
    with running_upstream(TOOLS) as (url, _):
        yield url


async def test_search_with_a_model_finds_the_tool(upstream_url: str, model_dir: Path) -> None:
    with running_proxy(upstream_url, model_dir=str(model_dir)) as url:
        async with connect(url, "token") as client:
            answer = await call_json(client, "search_tools", {"query": "delete issue"})
    result = answer["results"][0]
    assert result["tools"][0]["name"] == "tracker_delete_issue"
    assert "matched" not in result


async def test_search_with_a_companion_model_finds_the_tool(
    upstream_url: str, model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_model(tmp_path / "companion", name="tiny-companion")
    caplog.set_level(logging.INFO, logger="toolsearch")
    with running_proxy(upstream_url, model_dir=f"{model_dir},{tmp_path / 'companion'}") as url:
        async with connect(url, "token") as client:
            answer = await call_json(client, "search_tools", {"query": "delete issue"})
    assert answer["results"][0]["tools"][0]["name"] == "tracker_delete_issue"
    assert any("companion tiny-companion" in record.getMessage() for record in caplog.records)


async def test_metrics_show_catalogs_embedded_and_waiting(upstream_url: str, model_dir: Path) -> None:
    with running_proxy(upstream_url, model_dir=str(model_dir)) as url:
        async with connect(url, "token") as client:
            await call_json(client, "search_tools", {"query": "delete issue"})
        metrics = httpx.get(url.removesuffix("/mcp") + "/metrics").text
    assert re.search(
        r'toolsearch_embedding_duration_seconds_count\{[^}]*toolsearch_outcome="ok"\} 1\.0', metrics
    )
    assert re.search(r"toolsearch_embedding_pending\{[^}]*\} 0\.0", metrics)


async def test_search_that_nothing_fits_says_so_and_marks_the_closest_weak(
    upstream_url: str, tmp_path: Path
) -> None:
    # A tiny model whose manifest's calibration finds no match good enough.
    never_good_enough = Calibration(AbstentionThreshold(2.0, 1e9), translation_cosine=2.0)
    write_model(tmp_path / "model", name="tiny-hybrid", calibration=never_good_enough)
    with running_proxy(upstream_url, model_dir=str(tmp_path / "model")) as url:
        async with connect(url, "token") as client:
            answer = await call_json(client, "search_tools", {"query": "order a pizza", "limit": 2})
    result = answer["results"][0]
    assert result["matched"] is False
    assert "No tool matches this request well" in result["note"]
    assert len(result["tools"]) == 2
    assert all(tool["weak"] is True for tool in result["tools"])


async def test_without_a_model_directory_search_is_lexical_and_the_log_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="toolsearch.proxy"):
        proxy = Proxy.from_settings(Settings(upstream="http://127.0.0.1:9/mcp"))
    await proxy.aclose()
    assert [r.getMessage() for r in caplog.records] == ["no --model-dir: search is lexical (BM25) only"]


async def test_closing_the_proxy_shuts_the_threads_of_its_model_runs_down(model_dir: Path) -> None:
    proxy = Proxy.from_settings(Settings(upstream="http://127.0.0.1:9/mcp", model_dir=str(model_dir)))
    assert proxy.embedding is not None
    await proxy.aclose()
    with pytest.raises(RuntimeError):
        proxy.embedding.query_runs.submit(int)


def test_a_missing_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"--model-dir: no model directory at .*toolsearch model"):
        Proxy.from_settings(Settings(upstream="http://127.0.0.1:9/mcp", model_dir=str(tmp_path / "absent")))
