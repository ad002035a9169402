"""Learning from use across replicas sharing a real Redis, with a tiny generated model: what callers
taught through two replicas reaches a replica started afterwards, `/stats` and the metrics count
it, and Redis holds no request text and no token."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import call_text, connect
from tests.embedding.tiny_models import write_model
from tests.replicas.conftest import requires_redis, running_replicas, search
from toolsearch.commands.stats import fetch_report
from toolsearch.testing import RedisServer

pytestmark = requires_redis

QUERY = "walrusquery tell me the hour somewhere far away"
CALLERS = ("learner-token-1", "learner-token-2")  # other tokens: each sees the same `time_*` tools


def rank_of(answer: dict[str, Any], name: str) -> int | None:
    names = [tool["name"] for tool in answer["results"][0]["tools"]]
    return names.index(name) + 1 if name in names else None


async def teach(url: str, token: str, name: str) -> None:
    """A caller searches, then calls `name` (its arguments may be wrong: the choice counts)."""
    await search(url, token, QUERY)
    async with connect(url, token) as client:
        await call_text(client, "call_write_tool", {"name": name, "arguments": {}})


async def test_what_k_callers_taught_through_two_replicas_reaches_a_restarted_replica(
    redis_server: RedisServer, upstream: tuple[str, object], tmp_path: Path
) -> None:
    write_model(tmp_path / "model", name="tiny-layered")
    flags = {
        "redis_url": redis_server.url,
        "model_dir": tmp_path / "model",
        "embedding_wait": 60,
        "learning": "true",
        "learning_k": len(CALLERS),
        "stats": "true",
    }
    with running_replicas(upstream[0], count=2, **flags) as (first, second):
        before = await search(first, CALLERS[0], QUERY)
        last = before["results"][0]["tools"][-1]["name"]  # the tool the search ranked lowest
        await teach(first, CALLERS[0], last)
        alone = await search(second, "bystander-token", QUERY)
        await teach(second, CALLERS[1], last)
        taught = await search(second, "bystander-token", QUERY)
        base = second.removesuffix("/mcp")
        learned = fetch_report([base])["counts"]["learning"]
        metrics = httpx.get(f"{base}/metrics", timeout=10).text
    with running_replicas(upstream[0], count=1, **flags) as [restarted]:
        after_restart = await search(restarted, "another-bystander", QUERY)

    lowest = rank_of(before, last)
    assert lowest is not None and lowest > 1
    assert rank_of(alone, last) == lowest  # one caller, below k: nothing moved
    assert (rank_of(taught, last) or lowest) < lowest
    assert rank_of(after_restart, last) == rank_of(taught, last)
    assert learned == {"lessons": 1, "contributions": 1}  # what this replica taught
    assert re.search(r"toolsearch_learning_contributions_total\{[^}]*\} 1\.0", metrics)
    with redis_server.client() as client:
        keys = list(client.scan_iter("*"))
        assert any(key.startswith(b"toolsearch:learning:") for key in keys)
        held = b"".join(key + _value(client, key) for key in keys)
    for secret in (b"walrusquery", b"learner-token", b"bystander"):
        assert secret not in held


def _value(client: Any, key: bytes) -> bytes:
    kind = client.type(key)
    if kind == b"string":
        return bytes(client.get(key) or b"")
    if kind == b"hash":
        return b"".join(field + value for field, value in client.hgetall(key).items())
    return b""
