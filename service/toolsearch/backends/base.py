"""What every backend serves, and the records it keeps.

A backend is where the proxy keeps what outlives a request: catalogs (with the leases that let one
replica list a catalog while the others wait, and the digests pinned for its tools, `integrity`),
tool vectors, each caller's pending search outcome, and what each catalog learned from use
(`search.learning`). `memory` keeps them in this process;
`redis` in a Redis every replica shares. The proxy chooses one from its settings
(`backends.open_backend`) and speaks to it only through these Protocols.

A `CatalogRecord` is what a listing produced: interned tools, the upstream's instructions, when it
was listed and until when it may be served. It holds nothing process-bound, so a shared backend can
serialise it and every replica can read it back. `listed_at` is the record's version: a replica
compares it with its own copy to notice a newer listing made elsewhere.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Final, Protocol

import numpy as np
import orjson

from toolsearch.search.learning import LearningPolicy, ToolAggregate
from toolsearch.search.vectors import VectorStore
from toolsearch.tool import Tool

OUTCOME_GRACE_SECONDS: Final = 30.0
"""How much longer than the window a caller's outcome record lives, so the window's end always finds it."""


@dataclass(frozen=True, slots=True, weakref_slot=True)
class CatalogRecord:
    tools: tuple[Tool, ...]
    instructions: str | None
    listed_at: float
    """Wall-clock seconds (time.time()) when the upstream listed it; replicas compare it."""
    expires_at: float | None = None
    """Wall-clock seconds after which it must not be served (its token's `exp`); None: no bound."""

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at


def catalog_digest(tools: Sequence[Tool]) -> str:
    """SHA-256 of a catalog's tool digests in order: callers who see the same tools share it."""
    return hashlib.sha256("\n".join(tool.digest for tool in tools).encode()).hexdigest()


def pinned_after(pinned: Mapping[str, str], digests: Mapping[str, str], *, replace: bool) -> dict[str, str]:
    """A catalog's pins once a listing of `digests` (tool name -> digest) is pinned: each name not
    pinned yet gets its digest, and with `replace` every listed one (see `CatalogStore.pin_digests`)."""
    if replace:
        return {**pinned, **digests}
    return {**digests, **pinned}


def pin_set(pins: Mapping[str, str]) -> tuple[str, bytes]:
    """The content address (SHA-256) and canonical JSON of a catalog's pins: catalogs with equal pins,
    such as every caller first listed with the same tools, share one copy."""
    encoded = orjson.dumps(pins, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(encoded).hexdigest(), encoded


class StoreUnavailable(Exception):
    """The backend did not answer (in time, or at all): serve without it."""


class CatalogStore(Protocol):
    async def get(self, key: str) -> CatalogRecord | None:
        """The record stored under `key` (a hash of the caller's identity), if any.

        None also when it could not be read back (a corrupt entry is discarded); an expired record
        may be returned (the caller checks `expired`). Raises `StoreUnavailable` when the store
        cannot be asked.
        """
        ...

    async def listed_at(self, key: str) -> float | None:
        """When the record under `key` was listed: a cheap check of whether a copy is current."""
        ...

    async def put(self, key: str, record: CatalogRecord) -> None:
        """Store `record`, unless the store already holds a newer listing of `key`."""
        ...

    def lease(self, key: str) -> AbstractAsyncContextManager[bool]:
        """`async with store.lease(key) as held:` True while this process alone may list `key`,
        False when another holder lists it now. An abandoned lease frees itself."""
        ...

    async def pin_digests(self, key: str, digests: Mapping[str, str], *, replace: bool) -> dict[str, str]:
        """The digests pinned for catalog `key` before this call, by tool name (names never pinned left
        out); pins each name of `digests` not pinned yet, and with `replace` every one, to its digest.
        Atomic: replicas listing at once agree on the first pin."""
        ...


class OutcomeMemory(Protocol):
    """Each caller's pending search and the tools searches showed it (`outcomes`); each method is atomic."""

    async def begin(self, caller: str, search: str, ranks: Mapping[str, int], window: float) -> bool:
        """Make `search` (its tools' ranks) the caller's pending search; True when it replaced one."""
        ...

    async def end(self, caller: str, name: str) -> tuple[dict[str, int] | None, bool]:
        """End the caller's pending search for a call of `name`: its ranks, or None when none was
        pending; and whether a search within the window showed `name`."""
        ...

    async def expire(self, caller: str, search: str) -> bool:
        """End `search` as unfollowed: True when it was still pending."""
        ...


class LearningStore(Protocol):
    """What each catalog learned from use (`search.learning`), by catalog digest and tool name."""

    async def aggregates(self, catalog: str) -> dict[str, ToolAggregate]:
        """Every aggregate the catalog holds, by tool name (none left out for being below k)."""
        ...

    async def teach(
        self, catalog: str, tool: str, vector: np.ndarray, who: str, definition: str, policy: LearningPolicy
    ) -> bool:
        """Add contributor `who`'s request `vector` to the catalog's aggregate of `tool`
        (`search.learning.contribute`); False when nothing changed (`who` already counted)."""
        ...

    async def forget(self, catalog: str) -> None:
        """Drop everything the catalog learned."""
        ...


class Backend(Protocol):
    """Catalogs, tool vectors and search outcomes kept in one place, with its health and its close."""

    @property
    def catalogs(self) -> CatalogStore: ...

    @property
    def vectors(self) -> VectorStore:
        """Tool vectors by (model key, id), shared by every catalog that holds the tool."""
        ...

    @property
    def outcomes(self) -> OutcomeMemory: ...

    @property
    def learning(self) -> LearningStore: ...

    @property
    def failures(self) -> int:
        """Operations that failed or timed out (a counter for metrics)."""
        ...

    async def health(self) -> dict[str, Any]:
        """What `/readyz` shows of the backend: its kind, `status` ("up" or "down") and its counters."""
        ...

    async def aclose(self) -> None: ...
