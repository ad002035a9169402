"""The operator's policy over upstream tools: which are pinned, and which count as writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from toolsearch.tool import Tool


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    pin_patterns: tuple[str, ...] = ()
    write_patterns: tuple[str, ...] = ()

    def is_read_only(self, tool: Tool) -> bool:
        """Read-only only when the upstream says so and the operator has not listed it as a write."""
        return tool.marked_read_only and not _matches(tool.name, self.write_patterns)

    def is_pinned(self, tool: Tool) -> bool:
        """Listed as itself: matched by `--pin`, or marked by its server to be loaded up front."""
        return tool.always_load or _matches(tool.name, self.pin_patterns)
