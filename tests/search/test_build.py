"""Building a served catalog's index: the event loop fetches the vectors the backend has and writes
back the new ones; the embedding thread only runs models and builds."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.embedding.tiny_models import write_model
from tests.search import test_hybrid as hybrid_tests
from toolsearch.backends.memory import MemoryVectors
from toolsearch.embedding import Embedder, load_model
from toolsearch.runtime import Supervisor
from toolsearch.search import isolation
from toolsearch.search.hybrid import HybridIndex
from toolsearch.search.progressive import ProgressiveIndex
from toolsearch.search.semantic import catalog_words
from toolsearch.tool import Tool

embedder = hybrid_tests.embedder  # the tiny model and tools of the hybrid tests
tools = hybrid_tests.tools


class _ThreadRecordingStore(MemoryVectors):
    """A memory store that notes the thread of each of its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[str] = set()

    async def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        self.threads.add(threading.current_thread().name)
        return await super().get_many(model, digests)

    async def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        self.threads.add(threading.current_thread().name)
        await super().put_many(model, vectors)


async def test_the_backend_is_asked_and_told_only_from_the_event_loop(
    tools: list[Tool], embedder: Embedder, supervisor: Supervisor
) -> None:
    store = _ThreadRecordingStore()
    build = hybrid_tests.builder([embedder], store, supervisor, wait_seconds=30)
    index = await build(tools)
    await build.aclose()
    assert isinstance(index, ProgressiveIndex) and isinstance(index.current, HybridIndex)
    assert len(store.cache) > 0
    assert store.threads == {threading.current_thread().name}


async def test_a_catalog_whose_vectors_the_backend_has_runs_no_model(
    tools: list[Tool], embedder: Embedder, supervisor: Supervisor, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryVectors()
    build = hybrid_tests.builder([embedder], store, supervisor, wait_seconds=30)
    await build(tools)

    def no_model_run(texts: list[str]) -> np.ndarray:
        raise AssertionError(f"embedded {texts}")

    monkeypatch.setattr(embedder, "embed_passages", no_model_run)
    index = await build(list(reversed(tools)))
    await build.aclose()
    assert isinstance(index, ProgressiveIndex) and isinstance(index.current, HybridIndex)


async def test_closing_writes_back_the_vectors_of_a_catalog_embedded_after_its_build_returned(
    tools: list[Tool], embedder: Embedder, supervisor: Supervisor
) -> None:
    store = MemoryVectors()
    build = hybrid_tests.builder([embedder], store, supervisor, wait_seconds=0)
    index = await build(tools)
    await build.aclose()
    assert isinstance(index, ProgressiveIndex) and isinstance(index.current, HybridIndex)
    assert len(store.cache) == 2 * len(tools) + len(catalog_words(tools))


async def test_a_restarted_process_reads_a_catalogs_neighbourhoods_from_the_store_and_computes_none(
    slice_tools: list[Tool], tmp_path: Path, supervisor: Supervisor, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_model(tmp_path / "model")
    model, store = load_model(tmp_path / "model"), MemoryVectors()
    first = hybrid_tests.builder([model], store, supervisor, wait_seconds=30)
    before = await first(slice_tools)
    await first.aclose()

    def no_neighbours_computed(*arguments: object) -> None:
        raise AssertionError("the catalog's neighbourhoods were computed again")

    monkeypatch.setattr(isolation, "_nearest_rows", no_neighbours_computed)
    restarted = hybrid_tests.builder([model], store, supervisor, wait_seconds=30)
    after = await restarted(slice_tools)
    await restarted.aclose()
    assert len(slice_tools) >= isolation.MIN_TOOLS
    assert isinstance(before, ProgressiveIndex) and isinstance(before.current, HybridIndex)
    assert isinstance(after, ProgressiveIndex) and isinstance(after.current, HybridIndex)
    assert np.array_equal(after.current.semantic.penalty, before.current.semantic.penalty)
