"""--vector-cache-dir beside Redis: a real redis-server, a real upstream and a toolsearch process
with a tiny generated model: what Redis lost, the disk still has."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from tests.embedding.tiny_models import write_model
from tests.replicas.conftest import TOKEN_X, requires_redis, running_replicas, search
from toolsearch.testing import RedisServer

pytestmark = requires_redis


def _entries(directory: Path) -> dict[Path, int]:
    return {path: path.stat().st_mtime_ns for path in directory.rglob("*") if path.is_file()}


_EMBEDDED_ONCE = re.compile(
    r'toolsearch_embedding_duration_seconds_count\{[^}]*toolsearch_outcome="ok"\} 1\.0'
)


def _embedded(url: str) -> bool:
    """Whether the process's catalog was embedded (its search is hybrid)."""
    return bool(_EMBEDDED_ONCE.search(httpx.get(url.removesuffix("/mcp") + "/metrics").text))


async def test_a_restart_with_redis_reads_from_disk_the_vectors_redis_lost(
    redis_server: RedisServer, upstream: tuple[str, object], tmp_path: Path
) -> None:
    write_model(tmp_path / "model", name="tiny-layered")
    flags = {
        "redis_url": redis_server.url,
        "model_dir": tmp_path / "model",
        "vector_cache_dir": tmp_path / "vectors",
        "embedding_wait": 60,
    }
    with running_replicas(upstream[0], count=1, **flags) as [url]:
        await search(url, TOKEN_X, "open a pull request")
        assert _embedded(url)
    written = _entries(tmp_path / "vectors")
    with redis_server.client() as client:
        vector_keys = list(client.scan_iter("toolsearch:vectors:*"))
        client.delete(*vector_keys)
    with running_replicas(upstream[0], count=1, **flags) as [url]:
        await search(url, TOKEN_X, "open a pull request")
        assert _embedded(url)
    # Redis had none of the vectors: had the restart not read them from disk, it would have
    # embedded them, and written them there again.
    assert vector_keys and written and _entries(tmp_path / "vectors") == written
