"""What of a caller's request reaches the upstream: its credentials and trace context, the input it
can give a tool that asks for some, and what its `tools/call` streams back (progress, log messages).

A caller's upstream sessions belong to its token (`CallerHeaders.token_key`), whatever catalog
identity that token maps to (`identity`): two tokens of one JWT subject share a catalog, not a session.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from toolsearch.mcp.protocol import relayed_notification


def token_key(authorization: str | None) -> str:
    """The hex SHA-256 of an `Authorization` header: what stands for the token wherever it is kept."""
    return hashlib.sha256((authorization or "").encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class CallerHeaders:
    """What of a caller's request goes upstream: its credentials and its W3C trace context, nothing else."""

    authorization: str | None = None
    traceparent: str | None = None
    tracestate: str | None = None

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> CallerHeaders:
        return cls(
            authorization=headers.get("authorization"),
            traceparent=headers.get("traceparent"),
            tracestate=headers.get("tracestate"),
        )

    @property
    def token_key(self) -> str:
        """The caller's token as kept (`token_key`): its upstream sessions are stored under it."""
        return token_key(self.authorization)

    def as_headers(self) -> dict[str, str]:
        forwarded = {
            "Authorization": self.authorization,
            "traceparent": self.traceparent,
            "tracestate": self.tracestate,
        }
        return {name: value for name, value in forwarded.items() if value is not None}


@dataclass(frozen=True, slots=True)
class CallerInput:
    """What of a 2026-07-28 caller's `tools/call` goes upstream besides the tool's arguments: the
    capabilities it declared (so the upstream asks only for input it can give) and, on a retry after
    an `input_required` result, its answers and the upstream's opaque `requestState`, echoed."""

    capabilities: Mapping[str, Any] | None = None
    input_responses: Mapping[str, Any] | None = None
    request_state: str | None = None

    def params(self) -> dict[str, Any]:
        """The retry fields of the upstream `tools/call`."""
        params: dict[str, Any] = {}
        if self.input_responses is not None:
            params["inputResponses"] = dict(self.input_responses)
        if self.request_state is not None:
            params["requestState"] = self.request_state
        return params


class CallRelay:
    """What of the upstream's words during a caller's `tools/call` goes back on the caller's response
    stream: progress for its `progressToken`, log messages at or above its `log_level` (None: none).
    The first upstream call made within `active()` carries the relay, and what it relays lands in
    `queue`, for the transport to stream to the caller. (One upstream call only: progress must only
    increase.)"""

    _current: ClassVar[ContextVar[CallRelay | None]] = ContextVar("toolsearch_call_relay", default=None)
    MAX_QUEUED: Final = 1000

    def __init__(self, token: str | int | None, log_level: str | None) -> None:
        self.token = token
        self.log_level = log_level
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(self.MAX_QUEUED)
        self._claimed = False

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Make this the relay of tasks created inside the block (they copy the context)."""
        reset = CallRelay._current.set(self)
        try:
            yield
        finally:
            CallRelay._current.reset(reset)

    @classmethod
    def claim(cls) -> CallRelay | None:
        relay = cls._current.get()
        if relay is None or relay._claimed:
            return None
        relay._claimed = True
        return relay

    def offer(self, message: Mapping[str, Any]) -> bool:
        """Queue an upstream notification if it is for the caller; whether it was."""
        if not relayed_notification(message, self.token, self.log_level):
            return False
        params = message["params"]
        with contextlib.suppress(asyncio.QueueFull):  # a flood of notifications is not worth memory
            self.queue.put_nowait({"jsonrpc": "2.0", "method": message["method"], "params": dict(params)})
        return True
