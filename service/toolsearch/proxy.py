"""The proxy's parts, wired from settings: upstream client -> catalogs -> meta-tools -> MCP server."""

from __future__ import annotations

from dataclasses import dataclass

from toolsearch.catalog import CatalogService
from toolsearch.metatools import MetaTools
from toolsearch.policy import ToolPolicy
from toolsearch.search.lexical import LexicalIndex
from toolsearch.server import McpServer
from toolsearch.settings import Settings
from toolsearch.store import MemoryCatalogStore
from toolsearch.upstream import UpstreamClient


@dataclass(frozen=True, slots=True)
class Proxy:
    settings: Settings
    upstream: UpstreamClient
    catalogs: CatalogService
    server: McpServer

    @classmethod
    def from_settings(cls, settings: Settings) -> Proxy:
        if not settings.upstream:
            raise ValueError("no upstream: pass --upstream URL (or set TOOLSEARCH_UPSTREAM)")
        upstream = UpstreamClient(
            settings.upstream,
            timeout=settings.upstream_timeout,
            connect_timeout=settings.upstream_connect_timeout,
            max_pages=settings.max_list_pages,
        )
        catalogs = CatalogService(
            upstream, MemoryCatalogStore(), LexicalIndex.build, ttl=settings.catalog_ttl
        )
        policy = ToolPolicy(pin_patterns=tuple(settings.pin), write_patterns=tuple(settings.write_tools))
        metatools = MetaTools(
            catalogs,
            upstream,
            policy,
            max_batch_calls=settings.max_batch_calls,
            search_schemas=settings.search_schemas,
        )
        server = McpServer(
            metatools,
            catalogs,
            max_instructions=settings.max_instructions,
            catalog_ttl=settings.catalog_ttl,
            catalog_in_tools_list=bool(settings.pin),
        )
        return cls(settings=settings, upstream=upstream, catalogs=catalogs, server=server)

    async def aclose(self) -> None:
        await self.catalogs.aclose()
        await self.upstream.aclose()
