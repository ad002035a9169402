"""What a caller's catalog keeps from the caller: tools changed since the catalog first listed
them, until an operator approves their new definitions (`--on-tool-change quarantine`), and with
`--hide-suspicious` the tools flagged as hostile (`integrity`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from toolsearch.backends.base import StoreUnavailable
from toolsearch.integrity.tool_guard import ToolGuard
from toolsearch.tool import Tool


@dataclass(frozen=True, slots=True)
class Withholding:
    """One caller's withheld tools, by the operator's guard."""

    guard: ToolGuard
    quarantined: Mapping[str, str] = field(default_factory=dict)
    """Changed tools of this caller's catalog (name -> listed digest), withheld unless approved."""

    def reason(self, name: str, digest: str, flagged: Sequence[str]) -> str | None:
        """Why tool `name` (of `digest`, flagged for `flagged`) is kept from the caller, or None."""
        return self.guard.withheld_reason(name, digest, self.quarantined, flagged)

    def candidates(self, flagged: Iterable[str]) -> list[str]:
        """The names that may be withheld: the quarantined ones, and the flagged ones if hidden."""
        return list(dict.fromkeys([*self.quarantined, *(flagged if self.guard.hide_suspicious else ())]))


class Quarantine:
    """Each new catalog's withholding, by the digests the store has pinned for its caller."""

    def __init__(self, guard: ToolGuard | None) -> None:
        self._guard = guard

    async def withholding(
        self, key: str, tools: Sequence[Tool], last: Callable[[], Withholding | None]
    ) -> Withholding | None:
        """What catalog `key` of `tools` withholds; None without a guard. `last` is this replica's
        last word on the caller, which stands while the store cannot be asked."""
        if self._guard is None:
            return None
        try:
            quarantined = await self._guard.quarantined(key, tools)
        except StoreUnavailable:
            # Unknown pins: this replica's last word on the caller stands, else nothing is known changed.
            previous = last()
            quarantined = dict(previous.quarantined) if previous is not None else {}
        return Withholding(self._guard, quarantined)
