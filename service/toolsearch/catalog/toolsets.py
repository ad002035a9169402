"""Toolsets: a distinct list of tools with its name lookup, integrity flags and search index,
shared by every caller who sees exactly these tools.

Tools are interned by content (`tool.ToolInterner`) and toolsets by their catalog digest
(`store.catalog_digest`): a thousand callers listed the same 1,500 tools hold one tuple of tools
and one index. A toolset lives as long as some caller's catalog holds it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor

from toolsearch.backends.base import catalog_digest
from toolsearch.catalog.boilerplate import server_boilerplate
from toolsearch.catalog.twins import twin_groups
from toolsearch.integrity.flags import CONFUSABLE_NAME, Integrity, integrity
from toolsearch.integrity.tool_guard import ToolGuard
from toolsearch.naming import split_qualified_name
from toolsearch.runtime import SingleFlight, Supervisor
from toolsearch.search import SearchIndex
from toolsearch.search.products import catalog_products
from toolsearch.tool import Tool

IndexBuilder = Callable[[Sequence[Tool]], Awaitable[SearchIndex]]


class Toolset:
    """A distinct list of tools, shared by every caller who sees exactly these tools."""

    __slots__ = (
        "__weakref__",
        "_servers",
        "boilerplate",
        "digest",
        "flagged",
        "flagged_positions",
        "imitated",
        "index",
        "positions",
        "products",
        "tools",
        "twins",
    )

    def __init__(
        self, tools: tuple[Tool, ...], digest: str, index: SearchIndex, flags: Integrity | None = None
    ) -> None:
        self.tools = tools
        self.digest = digest
        self.index = index
        self.positions = {tool.name: position for position, tool in enumerate(tools)}
        flags = flags or integrity(tools)
        self.flagged = flags.reasons
        """Why each flagged tool looks hostile (`integrity.integrity`), by name."""
        self.imitated = flags.imitated
        """The tool each look-alike imitates, by the look-alike's name."""
        self.flagged_positions = frozenset(
            self.positions[name] for name, reasons in self.flagged.items() if set(reasons) - {CONFUSABLE_NAME}
        )
        """Where the flagged tools are: search ranks them after the others (`integrity.flagged_last`).
        A name confusable with another's is no reason alone: where neither tool can be told to be the
        imitator both are flagged, and demoting both would let anyone push a real tool down by
        publishing a look-alike of its name."""
        self.twins = twin_groups(tools, self.flagged)
        """Each twin's position -> its group's positions, the leading name first (`twins`)."""
        self._servers: tuple[tuple[str, int], ...] | None = None
        self.boilerplate = server_boilerplate(tools)
        """Each server's sentences most of its tools share (`boilerplate`): left out of answers."""
        self.products = catalog_products(tools)
        """The names each server goes by and the words the tools use (`search.products`)."""

    @property
    def servers(self) -> tuple[tuple[str, int], ...]:
        """(server, tool count) of the servers in these tools' names, most tools first, then by name."""
        if self._servers is None:
            counts = Counter(server for server, _ in map(split_qualified_name, self.positions) if server)
            self._servers = tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
        return self._servers


class Toolsets:
    """One toolset (and index) per distinct catalog in this process, built once however many
    callers ask for it at the same time."""

    def __init__(
        self,
        index_builder: IndexBuilder,
        supervisor: Supervisor,
        work: Executor,
        guard: ToolGuard | None = None,
    ) -> None:
        self._build_index = index_builder
        self._guard = guard
        self.work = work
        """Where flags and toolsets are computed, off the event loop."""
        self._toolsets: weakref.WeakValueDictionary[str, Toolset] = weakref.WeakValueDictionary()
        self._toolset_builds: SingleFlight[Toolset] = SingleFlight(supervisor, "toolset build")

    def get(self, digest: str) -> Toolset | None:
        """The toolset of catalog `digest`, if some caller's catalog holds it."""
        return self._toolsets.get(digest)

    async def of(self, tools: tuple[Tool, ...]) -> Toolset:
        """The toolset of `tools`, built off the event loop so other callers keep being served."""
        digest = catalog_digest(tools)
        toolset = self._toolsets.get(digest)
        if toolset is not None:
            return toolset
        return await self._toolset_builds.run(digest, lambda: self._build_toolset(tools, digest))

    async def _build_toolset(self, tools: tuple[Tool, ...], digest: str) -> Toolset:
        # The index and the flags of a new catalog take a while: off the event loop.
        flags = self._guard.flags if self._guard is not None else integrity
        index = await self._build_index(tools)
        toolset = await asyncio.get_running_loop().run_in_executor(
            self.work, lambda: Toolset(tools, digest, index, flags(tools))
        )
        self._toolsets[digest] = toolset
        return toolset
