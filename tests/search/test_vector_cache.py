"""The tool-vector caches: `DiskVectorCache` on real files (damage, concurrent writers, another
model, its bound), `LayeredVectors`, and a real proxy process restarted on a --vector-cache-dir."""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import call_json, connect, running_upstream
from tests.embedding.tiny_models import token_states_graph, token_table, word_tokenizer, write_model
from toolsearch.backends.disk_vectors import DiskVectorCache
from toolsearch.backends.layers import DiskVectors, LayeredVectors
from toolsearch.backends.memory import MemoryVectors
from toolsearch.embedding import load_model
from toolsearch.runtime import Supervisor
from toolsearch.search.semantic import SemanticIndex
from toolsearch.search.vectors import MemoryVectorCache
from toolsearch.testing import serve_proxy_process
from toolsearch.tool import Tool

MODEL = "0123abcd.p1"
DIGESTS = [f"{number:064x}" for number in range(8)]
LARGE = 1 << 30


def _vector(seed: int, dimensions: int = 16) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(dimensions).astype(np.float32)


def _entries(directory: Path) -> list[Path]:
    return sorted(path for path in directory.rglob("*") if path.is_file() and path.suffix != ".tmp")


@pytest.fixture
def filled(tmp_path: Path) -> DiskVectorCache:
    cache = DiskVectorCache(tmp_path, max_bytes=LARGE)
    cache.put_many(MODEL, {digest: _vector(n) for n, digest in enumerate(DIGESTS)})
    return cache


def _only_entry(tmp_path: Path) -> tuple[DiskVectorCache, Path]:
    cache = DiskVectorCache(tmp_path, max_bytes=LARGE)
    cache.put_many(MODEL, {DIGESTS[0]: _vector(0)})
    [entry] = _entries(tmp_path)
    return cache, entry


def test_vectors_written_by_one_cache_are_read_by_another_on_the_same_directory(
    filled: DiskVectorCache, tmp_path: Path
) -> None:
    found = DiskVectorCache(tmp_path, max_bytes=LARGE).get_many(MODEL, [*DIGESTS, "absent"])
    assert list(found) == DIGESTS
    for n, digest in enumerate(DIGESTS):
        np.testing.assert_array_equal(found[digest], _vector(n))


def test_an_entry_as_long_as_a_large_catalogs_neighbourhoods_is_read_whole(tmp_path: Path) -> None:
    long = _vector(0, dimensions=2 * 50_000 * 10)  # 4 MB: what 50,000 tools' neighbourhoods take
    DiskVectorCache(tmp_path, max_bytes=LARGE).put_many(MODEL, {DIGESTS[0]: long})
    found = DiskVectorCache(tmp_path, max_bytes=LARGE).get_many(MODEL, [DIGESTS[0]])
    np.testing.assert_array_equal(found[DIGESTS[0]], long)


def test_a_flipped_byte_reads_as_absent(tmp_path: Path) -> None:
    cache, entry = _only_entry(tmp_path)
    raw = bytearray(entry.read_bytes())
    raw[20] ^= 0x01
    entry.write_bytes(bytes(raw))
    assert cache.get_many(MODEL, [DIGESTS[0]]) == {}
    assert cache.corrupt_entries == 1


def test_a_truncated_entry_reads_as_absent(tmp_path: Path) -> None:
    cache, entry = _only_entry(tmp_path)
    entry.write_bytes(entry.read_bytes()[:-7])
    assert cache.get_many(MODEL, [DIGESTS[0]]) == {}


@pytest.mark.parametrize("content", [b"", b"tsv1", b"not a vector at all" * 40, os.urandom(100_000)])
def test_a_garbage_file_in_an_entrys_place_reads_as_absent(tmp_path: Path, content: bytes) -> None:
    cache, entry = _only_entry(tmp_path)
    entry.write_bytes(content)
    assert cache.get_many(MODEL, [DIGESTS[0]]) == {}


def test_a_damaged_entry_is_replaced_when_its_vector_is_put_again(tmp_path: Path) -> None:
    cache, entry = _only_entry(tmp_path)
    entry.write_bytes(b"garbage")
    cache.put_many(MODEL, {DIGESTS[0]: _vector(0)})
    np.testing.assert_array_equal(cache.get_many(MODEL, [DIGESTS[0]])[DIGESTS[0]], _vector(0))


def test_another_models_key_never_reads_the_vectors(filled: DiskVectorCache) -> None:
    assert filled.get_many("4567ef01.p1", DIGESTS) == {}
    assert filled.get_many(f"{MODEL}.descriptions", DIGESTS) == {}
    assert filled.get_many("0123abcd.p2", DIGESTS) == {}


def test_an_entry_moved_to_another_models_address_is_rejected(tmp_path: Path) -> None:
    cache, entry = _only_entry(tmp_path)
    other_model = "4567ef01.p1"
    cache.put_many(other_model, {DIGESTS[0]: _vector(1)})
    [other] = [path for path in _entries(tmp_path) if path != entry]
    other.write_bytes(entry.read_bytes())
    assert cache.get_many(other_model, [DIGESTS[0]]) == {}


def test_a_changed_model_embeds_its_own_vectors_beside_the_first_ones(
    tmp_path: Path, slice_tools: list[Tool]
) -> None:
    tools = slice_tools[:20]
    write_model(tmp_path / "first", name="tiny-first")
    table = token_table(word_tokenizer().get_vocab_size(), seed=11)
    write_model(tmp_path / "second", name="tiny-second", graph=token_states_graph(table))
    first, second = load_model(tmp_path / "first"), load_model(tmp_path / "second")
    cache = DiskVectorCache(tmp_path / "vectors", max_bytes=LARGE)
    before = SemanticIndex.build(tools, first, cache, words=False)
    written = len(_entries(tmp_path / "vectors"))
    after = SemanticIndex.build(tools, second, cache, words=False)
    assert len(_entries(tmp_path / "vectors")) == 2 * written
    assert not np.allclose(after.vectors, before.vectors)
    own = SemanticIndex.build(tools, second, MemoryVectorCache(), words=False)
    np.testing.assert_array_equal(after.vectors, own.vectors)
    np.testing.assert_array_equal(after.blended, own.blended)


def _write_entries(directory: str, seed: int, rounds: int) -> None:
    cache = DiskVectorCache(directory, max_bytes=LARGE)
    for _ in range(rounds):
        # The same entries as every other writer (each with its own values), then its own.
        cache.put_many(MODEL, {digest: _vector(seed) for digest in DIGESTS})
        cache.put_many(MODEL, {f"{seed}-{n}": _vector(seed) for n in range(20)})


def test_concurrent_writer_processes_leave_every_entry_whole(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_write_entries, args=(str(tmp_path), seed, 20)) for seed in range(4)]
    reader = DiskVectorCache(tmp_path, max_bytes=LARGE)
    for writer in writers:
        writer.start()
    while any(writer.is_alive() for writer in writers):
        for vector in reader.get_many(MODEL, DIGESTS).values():
            assert any(np.array_equal(vector, _vector(seed)) for seed in range(4))
    assert [writer.exitcode for writer in writers] == [0, 0, 0, 0]
    assert reader.corrupt_entries == 0
    assert len(reader.get_many(MODEL, DIGESTS)) == len(DIGESTS)
    for seed in range(4):
        own = reader.get_many(MODEL, [f"{seed}-{n}" for n in range(20)])
        assert len(own) == 20 and all(np.array_equal(v, _vector(seed)) for v in own.values())
    assert not list(tmp_path.rglob("*.tmp"))


def test_concurrent_writer_threads_of_one_cache_leave_every_entry_whole(tmp_path: Path) -> None:
    threads = [threading.Thread(target=_write_entries, args=(str(tmp_path), seed, 10)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reader = DiskVectorCache(tmp_path, max_bytes=LARGE)
    assert len(reader.get_many(MODEL, DIGESTS)) == len(DIGESTS)
    assert reader.corrupt_entries == 0


def test_past_its_bound_the_least_recently_used_entries_are_removed(tmp_path: Path) -> None:
    cache = DiskVectorCache(tmp_path, max_bytes=LARGE)
    paths = {}
    for n, digest in enumerate(DIGESTS):
        before = set(_entries(tmp_path))
        cache.put_many(MODEL, {digest: _vector(n)})
        [paths[digest]] = set(_entries(tmp_path)) - before
        os.utime(paths[digest], (1000 + n, 1000 + n))  # written long ago, in this order
    block = paths[DIGESTS[0]].stat().st_blocks * 512
    cache = DiskVectorCache(tmp_path, max_bytes=10 * block)
    cache.get_many(MODEL, [DIGESTS[0]])  # read: used again
    cache.put_many(MODEL, {f"more-{n}": _vector(n) for n in range(3)})  # 11 entries: pruned to 8
    assert sorted(cache.get_many(MODEL, DIGESTS)) == sorted([DIGESTS[0], *DIGESTS[4:]])
    assert len(cache.get_many(MODEL, [f"more-{n}" for n in range(3)])) == 3


def test_a_directory_that_cannot_be_written_costs_the_cache_not_the_caller(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way")
    cache = DiskVectorCache(tmp_path / "file", max_bytes=LARGE)
    cache.put_many(MODEL, {DIGESTS[0]: _vector(0)})
    assert cache.get_many(MODEL, [DIGESTS[0]]) == {}


async def test_a_layered_store_reads_the_back_for_what_the_front_misses_and_keeps_it_in_front() -> None:
    front, back = MemoryVectors(), MemoryVectors()
    back.cache.put_many(MODEL, {DIGESTS[0]: _vector(0)})
    layered = LayeredVectors(front, back)
    assert list(await layered.get_many(MODEL, DIGESTS[:2])) == [DIGESTS[0]]
    assert list(front.cache.get_many(MODEL, DIGESTS[:2])) == [DIGESTS[0]]
    await layered.put_many(MODEL, {DIGESTS[1]: _vector(1)})
    assert DIGESTS[1] in front.cache.get_many(MODEL, [DIGESTS[1]])
    assert DIGESTS[1] in back.cache.get_many(MODEL, [DIGESTS[1]])


async def test_the_disk_store_reads_and_writes_its_files_off_the_event_loop(
    tmp_path: Path, supervisor: Supervisor
) -> None:
    disk = DiskVectors(DiskVectorCache(tmp_path, max_bytes=LARGE), supervisor.pool("work"))
    await disk.put_many(MODEL, {DIGESTS[0]: _vector(0)})
    found = await disk.get_many(MODEL, DIGESTS[:2])
    assert list(found) == [DIGESTS[0]]
    np.testing.assert_array_equal(found[DIGESTS[0]], _vector(0))


TOOLS = [
    {"name": "tracker_create_issue", "description": "Create an issue.", "inputSchema": {"type": "object"}},
    {"name": "tracker_delete_issue", "description": "Delete an issue.", "inputSchema": {"type": "object"}},
    {"name": "files_list", "description": "List files in a folder.", "inputSchema": {"type": "object"}},
]


@pytest.fixture
def upstream_url() -> Iterator[str]:
    with running_upstream(TOOLS) as (url, _):
        yield url


async def test_a_restarted_proxy_reaches_hybrid_search_without_embedding_again(
    upstream_url: str, tmp_path: Path
) -> None:
    write_model(tmp_path / "model", name="tiny-restart")
    vectors = tmp_path / "vectors"
    flags = (
        f"--model-dir={tmp_path / 'model'}",
        f"--vector-cache-dir={vectors}",
        "--embedding-wait=60",
        "--log-level=info",
    )
    written: dict[Path, int] = {}
    for start in ("first", "restart"):
        with serve_proxy_process(upstream_url, *flags) as served:
            async with connect(f"{served.url}/mcp", "token") as client:
                answer = await call_json(client, "search_tools", {"query": "delete issue"})
            output = served.output()
        assert answer["results"][0]["tools"][0]["name"] == "tracker_delete_issue"
        assert "its search is hybrid" in output, start
        entries = {path: path.stat().st_mtime_ns for path in _entries(vectors)}
        if start == "first":
            written = entries
    # Every vector computed is written to the cache: the restart computed none.
    assert written and entries == written
