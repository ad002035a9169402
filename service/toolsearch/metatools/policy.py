"""The operator's policy over upstream tools: which are pinned, and which count as writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from toolsearch.metatools.reads import inferred_read
from toolsearch.tool import Tool

INFERRED = "inferred"
"""`readOnly` in answers for a tool its upstream did not annotate, judged a read (`reads`)."""


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    pin_patterns: tuple[str, ...] = ()
    write_patterns: tuple[str, ...] = ()
    read_inferred: bool = False
    """Whether reads nobody annotated (`reads.inferred_read`) count as reads for call_read_tool(s)."""

    def is_read_only(self, tool: Tool) -> bool:
        """What call_read_tool(s) take: read-only when the upstream says so, or, with
        `read_inferred`, when judged a read; never when the operator lists it as a write."""
        return self.read_only_label(tool) in ((True, INFERRED) if self.read_inferred else (True,))

    def read_only_label(self, tool: Tool) -> bool | str:
        """What an answer says of `tool`: True when its upstream marks it read-only, `INFERRED` when
        it is judged a read without a mark, else False; False whenever the operator lists it as a
        write (`--write-tools`)."""
        if _matches(tool.name, self.write_patterns):
            return False
        if tool.marked_read_only:
            return True
        return INFERRED if inferred_read(tool) else False

    def is_pinned(self, tool: Tool) -> bool:
        """Listed as itself: matched by `--pin`, or marked by its server to be loaded up front."""
        return tool.always_load or _matches(tool.name, self.pin_patterns)
