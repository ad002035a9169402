"""Legacy upstream sessions: one per caller token, begun by one handshake, forgotten on request,
the least recently used dropped past the bound."""

from __future__ import annotations

import asyncio

import pytest

from toolsearch.runtime import Supervisor
from toolsearch.upstream.sessions import LegacySession, LegacySessions


def _session(session_id: str) -> LegacySession:
    return LegacySession(version="2025-11-25", session_id=session_id, instructions=None, capabilities={})


class _Handshakes:
    """Begins sessions named by a count, slowly enough for requests to overlap."""

    def __init__(self) -> None:
        self.begun = 0

    async def begin(self) -> LegacySession:
        self.begun += 1
        number = self.begun
        await asyncio.sleep(0.01)
        return _session(f"s{number}")


async def test_concurrent_requests_of_one_caller_share_one_handshake(supervisor: Supervisor) -> None:
    sessions, handshakes = LegacySessions(supervisor), _Handshakes()
    got = await asyncio.gather(*(sessions.session("alice", handshakes.begin) for _ in range(20)))
    assert handshakes.begun == 1
    assert {session.session_id for session in got} == {"s1"}


async def test_each_caller_has_its_own_session(supervisor: Supervisor) -> None:
    sessions, handshakes = LegacySessions(supervisor), _Handshakes()
    alice, bob = await asyncio.gather(
        sessions.session("alice", handshakes.begin), sessions.session("bob", handshakes.begin)
    )
    assert alice.session_id != bob.session_id
    assert len(sessions) == 2


async def test_a_forgotten_session_is_begun_again(supervisor: Supervisor) -> None:
    sessions, handshakes = LegacySessions(supervisor), _Handshakes()
    await sessions.session("alice", handshakes.begin)
    sessions.forget("alice")
    again = await sessions.session("alice", handshakes.begin)
    assert (handshakes.begun, again.session_id) == (2, "s2")


async def test_past_the_bound_the_least_recently_used_session_is_dropped(supervisor: Supervisor) -> None:
    sessions, handshakes = LegacySessions(supervisor, max_sessions=2), _Handshakes()
    await sessions.session("alice", handshakes.begin)
    await sessions.session("bob", handshakes.begin)
    await sessions.session("alice", handshakes.begin)  # alice is used again: bob is the older
    await sessions.session("carol", handshakes.begin)
    assert handshakes.begun == 3
    await sessions.session("alice", handshakes.begin)
    assert handshakes.begun == 3
    await sessions.session("bob", handshakes.begin)
    assert handshakes.begun == 4


async def test_a_failed_handshake_is_tried_again_by_the_next_request(supervisor: Supervisor) -> None:
    sessions = LegacySessions(supervisor)

    async def refuse() -> LegacySession:
        raise ConnectionError("upstream down")

    with pytest.raises(ConnectionError):
        await sessions.session("alice", refuse)
    assert (await sessions.session("alice", _Handshakes().begin)).session_id == "s1"


@pytest.mark.parametrize(
    ("session_id", "headers"),
    [
        ("abc", {"mcp-protocol-version": "2025-11-25", "mcp-session-id": "abc"}),
        (None, {"mcp-protocol-version": "2025-11-25"}),
    ],
)
def test_a_session_says_which_headers_its_requests_carry(
    session_id: str | None, headers: dict[str, str]
) -> None:
    session = LegacySession(version="2025-11-25", session_id=session_id, instructions=None, capabilities={})
    assert session.headers() == headers
