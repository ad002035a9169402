"""Search integrity: what one catalog's tools are flagged for (`integrity`), and search ranking
flagged tools after the others (`flagged_last`).

Tool names, descriptions and schemas are written by whoever publishes a server behind the gateway.
The defences (ranking that stuffing or another language cannot buy is in `search.lexical`):

- **Suspicious text is flagged** (`suspicious_text`): a title, description or any string of the
  input schema that addresses the model, telling it to ignore other tools or the user, to always
  call this one, to keep something from the user or to pass secrets along.
- **Look-alikes and copies are named** (`lookalikes`, over the names' `skeletons`): a name made with
  look-alike letters of another tool's, a definition equal or nearly equal to another tool's under a
  name a version suffix or one edit of the server prefix away, or under the same tool name on
  another vendor's server. The imitation is flagged with the tool it imitates, never the original;
  the operator's `allowed` patterns overrule the rules. Flags are reasons, never text: results carry
  them (`"suspicious": [...]`, `"imitates"`), the metric counts them by reason, the log names the
  tool; search ranks flagged tools after the others (`flagged_last`).
- **Definitions are pinned, and hiding is the operator's choice** (`tool_guard`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from toolsearch.integrity.lookalikes import confusable_imitations, copies, lookalikes
from toolsearch.integrity.suspicious_text import TEXT_REASONS, text_reasons
from toolsearch.tool import Tool


class _Positioned(Protocol):
    @property
    def position(self) -> int: ...


_Ranked = TypeVar("_Ranked", bound=_Positioned)

CONFUSABLE_NAME: Final = "confusable-name"
IMITATES_TOOL: Final = "imitates-tool"
COPIES_TOOL: Final = "copies-tool"
REASONS: Final = (*TEXT_REASONS, CONFUSABLE_NAME, IMITATES_TOOL, COPIES_TOOL)
"""Every reason a tool may be flagged for (the metric's attribute values)."""


@dataclass(frozen=True, slots=True)
class Integrity:
    """What one catalog's tools are flagged for (`integrity`)."""

    reasons: Mapping[str, tuple[str, ...]]
    """Why each flagged tool looks hostile (reasons of `REASONS`), by name; unflagged tools left out."""
    imitated: Mapping[str, str]
    """The tool each look-alike imitates, by the look-alike's name."""


def integrity(tools: Sequence[Tool], allowed: Sequence[str] = ()) -> Integrity:
    """The flags of one catalog: text that addresses the model (`text_reasons`), a name made with
    look-alike letters of another tool's (`confusable-name`), a look-alike of another tool's
    definition (`imitates-tool`, `lookalikes`) and a copy of it on another vendor's server
    (`copies-tool`, `copies`), each naming the tool it imitates. A tool whose name,
    or the name of the tool it would imitate, matches a glob of `allowed` is not flagged for its name
    (the operator's word over the rule's)."""
    names = [tool.name for tool in tools]
    confusable = confusable_imitations(names)
    lookalike = lookalikes(tools)
    # A look-alike pair is one already: its original is no copy of its imitation.
    copied = {
        name: original for name, original in copies(tools).items() if {name, original}.isdisjoint(lookalike)
    }
    imitated = {
        name: original
        for name in {*confusable, *lookalike, *copied}
        if (original := lookalike.get(name) or confusable.get(name) or copied.get(name))
    }

    def allowed_name(name: str | None) -> bool:
        return name is not None and any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed)

    # A pair the operator allows is left alone whichever of its two names the pattern matches.
    flagged = {
        name
        for name in {*confusable, *lookalike, *copied}
        if not (allowed_name(name) or allowed_name(imitated.get(name)))
    }
    imitated = {name: original for name, original in imitated.items() if name in flagged}
    reasons = {}
    for tool in tools:
        found = text_reasons(tool)
        if tool.name in flagged:
            found += (CONFUSABLE_NAME,) if tool.name in confusable else ()
            found += (IMITATES_TOOL,) if tool.name in lookalike else ()
            found += (COPIES_TOOL,) if tool.name in copied else ()
        if found:
            reasons[tool.name] = found
    return Integrity(reasons, imitated)


MAX_DEMOTED: Final = 100
"""At most this many flagged tools are looked past in one search (a catalog of thousands of flagged
tools would cost its size per search); past them, flagged tools rank by their scores."""


def flagged_last(ranked: Sequence[_Ranked], flagged: Container[int]) -> list[_Ranked]:
    """`ranked` (best first) with the tools at `flagged` positions after all others, each part in its
    order: a tool flagged suspicious gains nothing by the text it was flagged for, nor by imitating
    another tool, over any tool that is not. Search looks `MAX_DEMOTED` more tools deep to fill the
    answer."""
    return [hit for hit in ranked if hit.position not in flagged] + [
        hit for hit in ranked if hit.position in flagged
    ]
