"""What a request to the upstream can come to besides a result.

The outcomes are siblings, so that a handler of one never swallows another: `UpstreamError` (the
upstream could not be reached or answered something unusable; callers degrade or report it) and
`UpstreamAuthError` (it refused the caller's credentials; passed to the caller as it came, so that
OAuth clients see the challenge). `UpstreamRpcError`, a JSON-RPC error answer, is an `UpstreamError`:
whoever degrades on an unusable upstream degrades on it too, and who passes it on catches it first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class UpstreamError(Exception):
    """The upstream could not be reached or answered something unusable."""

    @property
    def error_type(self) -> str:
        """What traces and metrics call this failure (no text of the upstream's)."""
        return type(self).__name__


class UpstreamRpcError(UpstreamError):
    """The upstream answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"upstream error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data

    @property
    def error_type(self) -> str:
        return str(self.code)


class InputNotRelayed(UpstreamError):
    """The upstream asked the caller for input mid-call (sampling, elicitation, roots), which
    toolsearch cannot relay, and did not end the call soon after toolsearch refused."""


class UpstreamAuthError(Exception):
    """The upstream refused the caller's credentials (401/403); passed to the caller as is."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        super().__init__(f"upstream answered HTTP {status}")
        self.status = status
        self.headers = dict(headers)
        self.body = body

    @property
    def error_type(self) -> str:
        return str(self.status)
