"""Tool names: how a qualified name splits into server and tool, and finding the tool a caller
meant when the name it gave is not quite right."""

from __future__ import annotations

from collections.abc import Sequence

from rapidfuzz import fuzz, process

from toolsearch.untrusted import MAX_NAME_CHARS

_SIMILAR_CUTOFF = 60.0
_TYPO_CUTOFF = 85.0
_TYPO_MARGIN = 5.0


def split_qualified_name(name: str) -> tuple[str, str]:
    """`github_create_issue` -> (`github`, `create_issue`): agentgateway joins server and tool
    with the first `_`. A name without `_` has no server part."""
    server, separator, tool_name = name.partition("_")
    if not separator or not server or not tool_name:
        return "", name
    return server, tool_name


def similar_names(name: str, names: Sequence[str], limit: int = 3) -> list[str]:
    """The catalog names closest to `name`, best first (empty when nothing is close)."""
    if len(name) > MAX_NAME_CHARS:  # no tool has such a name, and comparing it costs its length
        return []
    matches = process.extract(name, names, scorer=fuzz.WRatio, limit=limit, score_cutoff=_SIMILAR_CUTOFF)
    return [match for match, _, _ in matches]


def intended_name(name: str, names: Sequence[str]) -> str | None:
    """The one tool `name` clearly means: a typo of it, or its name without the server prefix."""
    if len(name) > MAX_NAME_CHARS:
        return None
    suffixed = [candidate for candidate in names if candidate.endswith("_" + name)]
    if len(suffixed) == 1:
        return suffixed[0]
    matches = process.extract(name, names, scorer=fuzz.ratio, limit=2, score_cutoff=_TYPO_CUTOFF)
    if len(matches) == 1 or (len(matches) == 2 and matches[0][1] - matches[1][1] >= _TYPO_MARGIN):
        return matches[0][0]
    return None
