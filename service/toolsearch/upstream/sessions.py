"""The legacy-era sessions toolsearch holds with the upstream: one per caller token, kept in a
bounded LRU, each begun by one handshake however many of the caller's requests need it at once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from cachetools import LRUCache

from toolsearch.mcp.protocol import legacy_headers
from toolsearch.runtime import SingleFlight, Supervisor

MAX_SESSIONS: Final = 4096


@dataclass(frozen=True, slots=True)
class LegacySession:
    """What an upstream's `initialize` answered: the version and session its requests carry, and
    what it said of itself."""

    version: str
    session_id: str | None
    instructions: str | None
    capabilities: Mapping[str, Any]

    def headers(self) -> dict[str, str]:
        return legacy_headers(self.version, self.session_id)


class LegacySessions:
    """Sessions by caller token key (`CallerHeaders.token_key`), the least recently used dropped first."""

    def __init__(self, supervisor: Supervisor, max_sessions: int = MAX_SESSIONS) -> None:
        self._sessions: LRUCache[str, LegacySession] = LRUCache(max_sessions)
        self._handshakes: SingleFlight[LegacySession] = SingleFlight(supervisor, "handshake")

    async def session(self, key: str, begin: Callable[[], Awaitable[LegacySession]]) -> LegacySession:
        """The session of `key`, begun with `begin` when there is none (once, for concurrent requests)."""
        session = self._sessions.get(key)
        if session is None:
            session = await self._handshakes.run(key, lambda: self._begin(key, begin))
        return session

    async def _begin(self, key: str, begin: Callable[[], Awaitable[LegacySession]]) -> LegacySession:
        session = self._sessions[key] = await begin()
        return session

    def forget(self, key: str) -> None:
        """Drop the session of `key` (the upstream no longer knows it)."""
        self._sessions.pop(key, None)

    def __len__(self) -> int:
        return len(self._sessions)
