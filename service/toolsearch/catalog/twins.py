"""Twins: one tool served by several servers, its definition the same but for the server prefix.

A catalog's twins are found once, when its toolset is built: only tools whose names end alike can
be twins, so just those are hashed (their definition with the name's server part taken off). The
shortest name of a group leads (ties by name), whatever the search ranked first, so that an answer
names the same tool every time; a tool flagged suspicious is never a twin, so that an imitation
cannot hide behind the name of the tool it copies.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence

from toolsearch.naming import split_qualified_name
from toolsearch.tool import Tool, tool_digest


def twin_groups(tools: Sequence[Tool], flagged: Collection[str] = ()) -> dict[int, tuple[int, ...]]:
    """Each twin's position -> its group's positions, the leading name first; tools without a twin
    are left out."""
    by_tool_name: defaultdict[str, list[int]] = defaultdict(list)
    for position, tool in enumerate(tools):
        server, tool_name = split_qualified_name(tool.name)
        if server and tool.name not in flagged:
            by_tool_name[tool_name].append(position)
    by_definition: defaultdict[str, list[int]] = defaultdict(list)
    for tool_name, positions in by_tool_name.items():
        if len(positions) < 2:
            continue
        for position in positions:
            unnamed = {**tools[position].definition, "name": tool_name}
            by_definition[tool_digest(unnamed)].append(position)
    groups: dict[int, tuple[int, ...]] = {}
    for positions in by_definition.values():
        if len(positions) < 2:
            continue
        group = tuple(sorted(positions, key=lambda p: (len(tools[p].name), tools[p].name)))
        groups.update(dict.fromkeys(group, group))
    return groups
