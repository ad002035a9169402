"""The proxy's parts, wired from settings: upstream client -> catalogs -> meta-tools -> MCP server."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from toolsearch.catalog import CatalogService, IndexBuilder
from toolsearch.identity import Identifier, JwtIdentifier, TokenIdentifier
from toolsearch.integrity import Approvals, ToolGuard
from toolsearch.metatools import MetaTools
from toolsearch.outcomes import MemoryOutcomes, OutcomeMemory, RedisOutcomes, SearchOutcomes
from toolsearch.policy import ToolPolicy
from toolsearch.search.lexical import LexicalIndex
from toolsearch.server import McpServer
from toolsearch.settings import Settings
from toolsearch.store import CatalogStore, MemoryCatalogStore
from toolsearch.telemetry import Telemetry
from toolsearch.tool import ToolInterner
from toolsearch.upstream import UpstreamClient

if TYPE_CHECKING:
    from toolsearch.search.progressive import EmbeddingWorker
    from toolsearch.search.vectors import VectorCache

logger = logging.getLogger(__name__)

_EMBEDDING_STOP_SECONDS = 5.0
"""How long closing waits for the embedding thread; it stops after its current model run, which
takes well under a second."""


@dataclass(frozen=True, slots=True)
class Proxy:
    settings: Settings
    upstream: UpstreamClient
    catalogs: CatalogService
    server: McpServer
    telemetry: Telemetry
    outcomes: SearchOutcomes
    embedding: EmbeddingWorker | None = None
    """The thread that embeds catalogs for hybrid search (None without a model)."""

    @classmethod
    def from_settings(cls, settings: Settings, telemetry: Telemetry | None = None) -> Proxy:
        if not settings.upstream:
            raise ValueError("no upstream: pass --upstream URL (or set TOOLSEARCH_UPSTREAM)")
        telemetry = telemetry or Telemetry()
        upstream = UpstreamClient(
            settings.upstream,
            timeout=settings.upstream_timeout,
            connect_timeout=settings.upstream_connect_timeout,
            max_pages=settings.max_list_pages,
            max_response_bytes=settings.max_upstream_response_bytes,
            telemetry=telemetry,
        )
        interner = ToolInterner()
        storage = _storage(settings, interner)
        store = storage.catalogs
        index_builder, embedding = _index_builder(settings, storage.vectors, telemetry)
        identifier = _identifier(settings)
        guard = ToolGuard(
            store,
            telemetry,
            hide_suspicious=settings.hide_suspicious,
            on_change=settings.on_tool_change,
            approvals=Approvals(Path(settings.approved_tools) if settings.approved_tools else None),
            allowed_lookalikes=settings.allow_lookalike,
        )
        catalogs = CatalogService(
            upstream,
            store,
            index_builder,
            ttl=settings.catalog_ttl,
            max_materialized=settings.max_cached_catalogs,
            max_tools=settings.max_catalog_tools,
            identifier=identifier,
            interner=interner,
            telemetry=telemetry,
            guard=guard,
        )
        upstream.on_tools_changed = catalogs.tools_changed
        telemetry.observe_store_errors(lambda: getattr(store, "failures", 0))
        outcomes = SearchOutcomes(
            storage.outcomes, identifier, telemetry, window=settings.search_outcome_window
        )
        policy = ToolPolicy(pin_patterns=tuple(settings.pin), write_patterns=tuple(settings.write_tools))
        metatools = MetaTools(
            catalogs,
            upstream,
            policy,
            max_batch_calls=settings.max_batch_calls,
            search_schemas=settings.search_schemas,
            answer_chars=settings.search_answer_chars,
            telemetry=telemetry,
            outcomes=outcomes,
        )
        server = McpServer(
            metatools,
            catalogs,
            upstream,
            max_instructions=settings.max_instructions,
            catalog_ttl=settings.catalog_ttl,
            telemetry=telemetry,
        )
        return cls(
            settings=settings,
            upstream=upstream,
            catalogs=catalogs,
            server=server,
            telemetry=telemetry,
            outcomes=outcomes,
            embedding=embedding,
        )

    @property
    def embedding_running(self) -> bool:
        """Whether the embedding thread is still inside a model run (after `aclose` timed out)."""
        return self.embedding is not None and self.embedding.running

    async def aclose(self) -> None:
        if self.embedding is not None and not await asyncio.to_thread(
            self.embedding.close, _EMBEDDING_STOP_SECONDS
        ):
            logger.warning("the embedding thread did not stop within %g s", _EMBEDDING_STOP_SECONDS)
        await self.outcomes.aclose()
        await self.catalogs.aclose()
        await self.upstream.aclose()
        self.telemetry.shutdown()


@dataclass(frozen=True, slots=True)
class _Storage:
    """Where catalogs (with their leases and pins), search outcomes and shared tool vectors live:
    this process, or a Redis all replicas share, chosen once from the settings."""

    catalogs: CatalogStore
    outcomes: OutcomeMemory
    vectors: VectorCache | None
    """Tool vectors shared between replicas (None: each process keeps its own)."""


def _storage(settings: Settings, interner: ToolInterner) -> _Storage:
    if not settings.redis_url:
        return _Storage(MemoryCatalogStore(max_catalogs=settings.max_cached_catalogs), MemoryOutcomes(), None)
    from toolsearch.redis_store import RedisCatalogStore, RedisVectorCache

    store = RedisCatalogStore.from_url(
        settings.redis_url,
        interner,
        prefix=settings.redis_prefix,
        ttl=settings.redis_ttl,
        timeout=settings.redis_timeout,
    )
    return _Storage(store, RedisOutcomes(store), RedisVectorCache(store))


def _index_builder(
    settings: Settings, shared: VectorCache | None, telemetry: Telemetry
) -> tuple[IndexBuilder, EmbeddingWorker | None]:
    """Hybrid search with the model of --model-dir, and the thread that embeds catalogs for it;
    without one, lexical search (said once)."""
    if not settings.model_dir:
        logger.info("no --model-dir: search is lexical (BM25) only")
        return LexicalIndex.build, None
    from toolsearch.embedding import ModelError
    from toolsearch.embedding.embedder import usable_cores
    from toolsearch.search.build import index_builder
    from toolsearch.search.dictionaries import languages_of
    from toolsearch.search.profile import load_profile
    from toolsearch.search.progressive import EmbeddingWorker

    try:
        workers = settings.embedding_workers or usable_cores()
        profile = load_profile(settings.model_dir, threads=settings.search_threads, workers=workers)
    except ModelError as error:
        raise ValueError(f"--model-dir: {error}") from None
    embedder, *companions = profile.models
    logger.info(
        "hybrid search with the embedding model %s (%d dimensions)%s; ranking: %s; dictionaries: %s",
        embedder.name,
        embedder.dimensions,
        "".join(f", companion {companion.name}" for companion in companions),
        "learned" if profile.ranker is not None else "fusion",
        languages_of(profile.dictionaries),
    )
    cache = _vector_cache(settings, shared)
    # The gauge reads the queue when metrics are collected, after `embedding` exists.
    embedding = EmbeddingWorker(
        (embedder, *companions), on_done=telemetry.observe_embedding(lambda: embedding.pending)
    )
    builder = index_builder(
        embedder,
        cache,
        companions,
        wait_seconds=settings.embedding_wait,
        embedding=embedding,
        ranker=profile.ranker,
        dictionaries=profile.dictionaries,
        abstainer=profile.abstainer,
    )
    return builder, embedding


def _vector_cache(settings: Settings, shared: VectorCache | None) -> VectorCache | None:
    """Where tool vectors are kept: `shared` (Redis) shares them between replicas; --vector-cache-dir
    keeps them on this machine's disk across restarts, in front of Redis (a restart reads no network)
    or of this process's memory (an index build reads no disk). None: the index keeps its own in
    memory."""
    from toolsearch.search.vectors import DiskVectorCache, LayeredVectorCache, MemoryVectorCache

    if not settings.vector_cache_dir:
        return shared
    disk = DiskVectorCache(settings.vector_cache_dir, max_bytes=settings.vector_cache_max_mb * 1_000_000)
    if shared is not None:
        return LayeredVectorCache(disk, shared)
    return LayeredVectorCache(MemoryVectorCache(), disk)


def _identifier(settings: Settings) -> Identifier:
    if settings.catalog_identity == "token":
        return TokenIdentifier()
    missing = [
        flag
        for flag, value in (
            ("--jwt-jwks-url", settings.jwt_jwks_url),
            ("--jwt-issuer", settings.jwt_issuer),
            ("--jwt-audience", settings.jwt_audience),
        )
        if not value
    ]
    if missing:
        raise ValueError(f"--catalog-identity jwt needs {', '.join(missing)}")
    return JwtIdentifier(
        settings.jwt_jwks_url,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
        claims=settings.jwt_identity_claims,
    )
