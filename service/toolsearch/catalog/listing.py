"""Turning an upstream's `tools/list` pages into a caller's listing.

What a caller may be shown (`visible_tools`): servable tools, at most `--max-catalog-tools`, and
none a 2026-07-28 client would have to leave out; each name once (`named_once`). A new listing is
reviewed by the operator's guard (flags logged, digests pinned) before it is served.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncIterable, Callable, Sequence
from contextlib import aclosing, suppress
from typing import Any, Final

import orjson

from toolsearch.backends.base import CatalogRecord, StoreUnavailable, catalog_digest
from toolsearch.catalog.toolsets import Toolsets
from toolsearch.identity import CallerIdentity
from toolsearch.integrity.tool_guard import ToolGuard
from toolsearch.mcp.caller import CallerHeaders
from toolsearch.mcp.headers import valid_header_annotations
from toolsearch.telemetry import OUTCOME, Telemetry, elapsed
from toolsearch.tool import Tool, ToolInterner
from toolsearch.untrusted import MAX_DEFINITION_DEPTH, MAX_NAME_CHARS, unservable
from toolsearch.upstream.client import UpstreamClient

logger = logging.getLogger(__name__)

_SHOWN: Final = "shown"
_UNSERVABLE: Final = "unservable"
_BAD_HEADERS: Final = "bad-headers"
"""Servable, but with `x-mcp-header` annotations that break the spec's rules: shown to legacy eras only."""


class UpstreamListing:
    """Lists callers' catalogs from the upstream, judging each definition once while its tool lives."""

    def __init__(
        self,
        upstream: UpstreamClient,
        toolsets: Toolsets,
        *,
        max_tools: int,
        interner: ToolInterner,
        clock: Callable[[], float],
        telemetry: Telemetry,
        guard: ToolGuard | None,
    ) -> None:
        self._upstream = upstream
        self._toolsets = toolsets
        self._max_tools = max_tools
        self.interner = interner
        self._clock = clock
        self._telemetry = telemetry
        self._guard = guard
        self._verdicts: weakref.WeakKeyDictionary[Tool, str] = weakref.WeakKeyDictionary()
        """Whether each listed tool may be shown (`visible_tools`), for as long as it is interned."""
        self.count = 0
        """Upstream listings made by this process (a counter for metrics)."""

    async def catalog(self, identity: CallerIdentity, caller: CallerHeaders) -> CatalogRecord:
        """The caller's catalog as the upstream lists it now."""
        started = time.perf_counter()
        instructions, listed = await self._visible(caller)
        tools = named_once(listed)
        shared = self._toolsets.get(catalog_digest(tools))  # callers with equal catalogs share one tuple
        if self._guard is not None:
            # A known catalog's flags are its toolset's; a new one's are found off the event loop.
            if shared is not None:
                flagged = shared.flagged
            else:
                loop = asyncio.get_running_loop()
                flagged = (await loop.run_in_executor(self._toolsets.work, self._guard.flags, tools)).reasons
            with suppress(StoreUnavailable):  # pins are checked again at the next listing
                await self._guard.review(identity.key, tools, flagged)
        logger.info(
            "catalog listed",
            extra={"tools": len(tools), "duration_ms": round((time.perf_counter() - started) * 1000, 1)},
        )
        return CatalogRecord(
            shared.tools if shared else tuple(tools), instructions, self._clock(), identity.expires_at
        )

    async def _visible(self, caller: CallerHeaders) -> tuple[str | None, list[Tool]]:
        """The upstream's instructions and visible tools for `caller`, counted and timed."""
        started = time.perf_counter()
        self.count += 1
        outcome = {OUTCOME: "error"}
        try:
            modern = await self._upstream.era(caller) == "modern"
            instructions = await self._upstream.instructions(caller)
            async with aclosing(self._upstream.tool_pages(caller)) as pages:
                listed = await visible_tools(
                    pages,
                    modern=modern,
                    max_tools=self._max_tools,
                    interner=self.interner,
                    verdicts=self._verdicts,
                )
            outcome[OUTCOME] = "ok"
        finally:
            self._telemetry.catalog_refreshes.add(1, outcome)
            self._telemetry.catalog_listing_duration.record(elapsed(started), outcome)
        return instructions, listed


def named_once(listed: Sequence[Tool]) -> list[Tool]:
    """The listed tools with a name, each name's first one only."""
    tools: list[Tool] = []
    seen: set[str] = set()
    for tool in listed:
        if not tool.name or tool.name in seen:
            continue
        seen.add(tool.name)
        tools.append(tool)
    if len(tools) < len(listed):  # one line per listing, however many a hostile upstream repeats
        logger.warning("left out %d upstream tools with an empty or duplicate name", len(listed) - len(tools))
    return tools


async def visible_tools(
    pages: AsyncIterable[list[Any]],
    *,
    modern: bool,
    max_tools: int,
    interner: ToolInterner,
    verdicts: weakref.WeakKeyDictionary[Tool, str] | None = None,
) -> list[Tool]:
    """Which of the tools an upstream lists a caller can be shown, interned: the first `max_tools`
    that are servable (`untrusted.unservable`) and, from a 2026-07-28 upstream, whose `x-mcp-header`
    annotations keep the spec's rules (clients must leave out those that break them).

    A definition is judged once for as long as its tool lives in `verdicts`: every caller listed the
    same 1,500 tools costs their digests, not 1,500 walks through their schemas.
    """
    verdicts = weakref.WeakKeyDictionary() if verdicts is None else verdicts
    tools: list[Tool] = []
    left_out = 0
    bad_headers = []
    async for page in pages:
        for definition in page:
            tool, verdict = _judged(definition, interner, verdicts)
            if tool is None:
                left_out += 1
            elif verdict == _BAD_HEADERS and modern:
                bad_headers.append(tool.name)
            else:
                tools.append(tool)
        if len(tools) > max_tools:
            logger.warning(
                "upstream listed more than %d tools; using the first ones (--max-catalog-tools)", max_tools
            )
            del tools[max_tools:]
            break
    if left_out:
        logger.warning(
            "left out %d upstream tools: a name that is not 1 to %d characters without control "
            "characters, or a definition nested more than %d levels deep",
            left_out,
            MAX_NAME_CHARS,
            MAX_DEFINITION_DEPTH,
        )
    for name in bad_headers:
        logger.warning("left out upstream tool %r: invalid x-mcp-header annotation", name)
    return tools


def _judged(
    definition: Any, interner: ToolInterner, verdicts: weakref.WeakKeyDictionary[Tool, str]
) -> tuple[Tool | None, str]:
    """`definition` interned and its verdict (`_SHOWN` or `_BAD_HEADERS`); no tool when it is unservable."""
    if not isinstance(definition, dict):
        return None, _UNSERVABLE
    try:
        tool = interner.intern(definition)
    except orjson.JSONEncodeError:  # nested past what canonical JSON allows: far too deep anyway
        return None, _UNSERVABLE
    verdict = verdicts.get(tool)
    if verdict is None:
        if unservable(definition) is not None:
            verdict = _UNSERVABLE
        else:
            verdict = _SHOWN if valid_header_annotations(definition) else _BAD_HEADERS
        verdicts[tool] = verdict
    return (None if verdict == _UNSERVABLE else tool), verdict
