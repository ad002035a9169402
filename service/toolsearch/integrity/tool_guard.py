"""The operator's integrity settings applied to every catalog (`ToolGuard`): flags, pins and what
is withheld.

- **Definitions are pinned**: the digest of each tool the first time a catalog identity's listing
  shows it is kept in the store, so that replicas agree. A later listing whose tool of the same name
  has another digest is a change: logged (name and digests) and counted. With
  `on_change="quarantine"` the changed tool is withheld (not searchable, not callable, calls told
  why) until its new digest is in the approvals file (`Approvals`); with `"allow"` the pin follows
  the change.
- **Hiding is the operator's choice**: with `hide_suspicious` flagged tools are withheld too.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from toolsearch.integrity.flags import CONFUSABLE_NAME, Integrity, integrity
from toolsearch.integrity.skeletons import foreign_characters
from toolsearch.tool import Tool

if TYPE_CHECKING:
    from toolsearch.backends.base import CatalogStore
    from toolsearch.telemetry import Telemetry

logger = logging.getLogger(__name__)

OnChange = Literal["allow", "quarantine"]


class Approvals:
    """The digests an operator approved, one per line (`#` starts a comment; a tool name may precede
    the digest), read again when the file changes (checked at most once a second)."""

    _CHECK_SECONDS: Final = 1.0

    def __init__(self, path: Path | None, clock: Callable[[], float] = time.monotonic) -> None:
        self._path = path
        self._clock = clock
        self._digests: frozenset[str] = frozenset()
        self._stamp: tuple[int, int] | None = None
        self._checked_at = float("-inf")
        self._lock = threading.Lock()
        self._reload()

    def __contains__(self, digest: str) -> bool:
        if self._path is not None and self._clock() - self._checked_at >= self._CHECK_SECONDS:
            self._reload()
        return digest in self._digests

    def _reload(self) -> None:
        if self._path is None:
            return
        with self._lock:
            self._checked_at = self._clock()
            try:
                stat = os.stat(self._path)
            except OSError:
                stamp = None
            else:
                stamp = (stat.st_mtime_ns, stat.st_size)
            if stamp == self._stamp:
                return
            self._stamp = stamp
            try:
                lines = self._path.read_text(encoding="utf-8").splitlines() if stamp else []
            except (OSError, UnicodeDecodeError) as error:
                logger.warning("cannot read the approved tools file: %s", type(error).__name__)
                return
            entries = (line.split("#", 1)[0].split() for line in lines)
            self._digests = frozenset(entry[-1].lower() for entry in entries if entry)
            logger.info("approved tools file read", extra={"approved": len(self._digests)})


@dataclass(frozen=True, slots=True)
class Change:
    name: str
    pinned: str
    """The digest first seen (or, with `allow`, last seen) for this name."""
    listed: str


class ToolGuard:
    """The operator's integrity settings, applied to every catalog: flags, pins and what is withheld."""

    def __init__(
        self,
        store: CatalogStore,
        telemetry: Telemetry,
        *,
        hide_suspicious: bool = False,
        on_change: OnChange = "allow",
        approvals: Approvals | None = None,
        allowed_lookalikes: Sequence[str] = (),
    ) -> None:
        self._store = store
        self._telemetry = telemetry
        self.hide_suspicious = hide_suspicious
        self.on_change = on_change
        self._approvals = approvals or Approvals(None)
        self.allowed_lookalikes = tuple(allowed_lookalikes)

    def flags(self, tools: Sequence[Tool]) -> Integrity:
        """What `tools` are flagged for (`integrity`), with the operator's allowed look-alikes."""
        return integrity(tools, self.allowed_lookalikes)

    async def review(self, key: str, tools: Sequence[Tool], flagged: Mapping[str, Sequence[str]]) -> None:
        """What a new listing of catalog `key` shows: each flagged tool logged (name and reasons) and
        counted by reason; each tool's digest pinned, and each change logged (name and digests) and
        counted. Store outages propagate (`StoreUnavailable`)."""
        reasons = Counter(reason for found in flagged.values() for reason in found)
        for reason, count in reasons.items():
            self._telemetry.suspicious_tools.add(count, {"toolsearch.suspicious.reason": reason})
        for name, found in flagged.items():
            logger.warning("suspicious tool", extra={"tool": name, "reasons": list(found)})
        for change in await self.changes(key, tools, follow=self.on_change == "allow"):
            quarantined = self.on_change == "quarantine" and change.listed not in self._approvals
            action = "quarantined" if quarantined else "recorded"
            self._telemetry.tool_changes.add(1, {"toolsearch.tool_change.action": action})
            logger.warning(
                "tool definition changed",
                extra={
                    "tool": change.name,
                    "pinned": change.pinned,
                    "listed": change.listed,
                    "action": action,
                },
            )

    async def changes(self, key: str, tools: Sequence[Tool], *, follow: bool = False) -> list[Change]:
        """The tools of `tools` whose digest differs from the one pinned for catalog `key`; names not
        pinned yet are pinned now (with `follow`, changed ones are pinned anew)."""
        pinned = await self._store.pin_digests(
            key, {tool.name: tool.digest for tool in tools}, replace=follow
        )
        return [
            Change(tool.name, pinned[tool.name], tool.digest)
            for tool in tools
            if pinned.get(tool.name, tool.digest) != tool.digest
        ]

    async def quarantined(self, key: str, tools: Sequence[Tool]) -> dict[str, str]:
        """With `quarantine`, the changed tools of catalog `key` (name -> listed digest); else none."""
        if self.on_change != "quarantine":
            return {}
        return {change.name: change.listed for change in await self.changes(key, tools)}

    def withheld_reason(
        self, name: str, digest: str, changed: Mapping[str, str], flagged: Sequence[str]
    ) -> str | None:
        """Why tool `name` (of `digest`) is kept from the caller, or None when it is served."""
        if changed.get(name) == digest and digest not in self._approvals:
            return (
                f"{name} changed since this catalog first listed it and is quarantined until an operator "
                f"approves its new definition (digest {digest})."
            )
        if self.hide_suspicious and flagged:
            foreign = foreign_characters(name) if CONFUSABLE_NAME in flagged else ""
            looks_like = f" Its name looks like another tool's: it has {foreign}." if foreign else ""
            return f"{name} is withheld: its definition looks hostile ({', '.join(flagged)}).{looks_like}"
        return None
