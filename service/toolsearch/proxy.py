"""The proxy's parts, wired from settings: upstream client -> catalogs -> meta-tools -> MCP server.

What runs where: requests, and the backend's reads and writes, on the event loop; searches,
BM25F index builds, a new catalog's integrity flags and the disk's tool vectors on the proxy's
`work` threads; catalog embeddings on the `EmbeddingWorker`'s thread (each model spreading a
catalog's batches over its own workers), a request's further model runs on the worker's
`query_runs`. Every task and pool is started or made by the proxy's one `Supervisor`, and
`Proxy.aclose` ends all of them.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from toolsearch.backends import open_backend
from toolsearch.backends.base import Backend
from toolsearch.catalog.learning import CatalogLearning
from toolsearch.catalog.service import CatalogService
from toolsearch.identity import Identifier, JwtIdentifier, TokenIdentifier
from toolsearch.integrity.tool_guard import Approvals, ToolGuard
from toolsearch.metatools.policy import ToolPolicy
from toolsearch.metatools.service import MetaTools
from toolsearch.outcomes import SearchOutcomes
from toolsearch.runtime import Supervisor
from toolsearch.search.learning import LearningPolicy
from toolsearch.server import McpServer
from toolsearch.settings import Settings
from toolsearch.telemetry import Telemetry
from toolsearch.tool import ToolInterner
from toolsearch.upstream.client import UpstreamClient

if TYPE_CHECKING:
    from toolsearch.search.build import IndexBuilder
    from toolsearch.search.profile import Profile
    from toolsearch.search.progressive import EmbeddingWorker
    from toolsearch.search.vectors import VectorStore

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
    backend: Backend
    """Where catalogs, tool vectors and search outcomes are kept (`toolsearch.backends`)."""
    indexes: IndexBuilder
    supervisor: Supervisor
    """The owner of every task and thread pool of the proxy's parts."""
    work: Executor
    """The threads that search, build BM25F indexes, flag new catalogs and read and write tool
    vectors on disk."""
    embedding: EmbeddingWorker | None = None
    """The thread that embeds catalogs for hybrid search (None without a model)."""
    learning: CatalogLearning | None = None
    """What catalogs learn from use (`catalog.learning`; None unless --learning)."""

    @classmethod
    def from_settings(cls, settings: Settings, telemetry: Telemetry | None = None) -> Proxy:
        """The proxy the settings describe, its search profile loaded from --model-dir."""
        return cls.wired(settings, settings_profile(settings), telemetry)

    @classmethod
    def wired(cls, settings: Settings, profile: Profile | None, telemetry: Telemetry | None = None) -> Proxy:
        """The proxy the settings describe, searching with `profile` (already loaded: an HTTP app
        loads it when it is made, to refuse a bad --model-dir at once, and wires the proxy when it
        starts, on its event loop)."""
        check_settings(settings)
        telemetry = telemetry or Telemetry()
        supervisor = Supervisor()
        upstream = UpstreamClient(
            settings.upstream,
            supervisor=supervisor,
            timeout=settings.upstream_timeout,
            connect_timeout=settings.upstream_connect_timeout,
            max_pages=settings.max_list_pages,
            max_response_bytes=settings.max_upstream_response_bytes,
            telemetry=telemetry,
        )
        interner = ToolInterner()
        work = supervisor.pool("work")
        backend = open_backend(settings, interner, supervisor, work)
        indexes, embedding = _indexes(settings, profile, backend.vectors, supervisor, work, telemetry)
        identifier = _identifier(settings)
        catalogs = CatalogService(
            upstream,
            backend.catalogs,
            indexes,
            ttl=settings.catalog_ttl,
            max_materialized=settings.max_cached_catalogs,
            max_tools=settings.max_catalog_tools,
            identifier=identifier,
            interner=interner,
            telemetry=telemetry,
            guard=_guard(settings, backend, telemetry),
            supervisor=supervisor,
            work=work,
        )
        upstream.on_tools_changed = catalogs.tools_changed
        telemetry.observe_store_errors(lambda: backend.failures)
        window = settings.search_outcome_window
        outcomes = SearchOutcomes(
            backend.outcomes, identifier, telemetry, supervisor=supervisor, window=window
        )
        learning = _learning(settings, backend, identifier, window, telemetry)
        return cls(
            settings=settings,
            upstream=upstream,
            catalogs=catalogs,
            server=_server(settings, catalogs, upstream, outcomes, telemetry, work, learning),
            telemetry=telemetry,
            outcomes=outcomes,
            backend=backend,
            indexes=indexes,
            supervisor=supervisor,
            work=work,
            embedding=embedding,
            learning=learning,
        )

    @property
    def embedding_running(self) -> bool:
        """Whether the embedding thread is still inside a model run (after `aclose` timed out)."""
        return self.embedding is not None and self.embedding.running

    async def aclose(self) -> None:
        """Stop embedding, write back what was embedded last, stop every task and pool (the
        supervisor), then close the connections."""
        if self.embedding is not None and not await asyncio.get_running_loop().run_in_executor(
            self.work, self.embedding.close, _EMBEDDING_STOP_SECONDS
        ):
            logger.warning("the embedding thread did not stop within %g s", _EMBEDDING_STOP_SECONDS)
        await self.indexes.aclose()
        await self.supervisor.aclose()
        await self.catalogs.aclose()
        await self.backend.aclose()
        await self.upstream.aclose()
        self.telemetry.shutdown()


def _learning(
    settings: Settings, backend: Backend, identifier: Identifier, window: float, telemetry: Telemetry
) -> CatalogLearning | None:
    """What catalogs learn from use, with --learning: kept by the backend, shared like catalogs."""
    if not settings.learning:
        return None
    policy = LearningPolicy(k=settings.learning_k, half_life=settings.learning_half_life)
    return CatalogLearning(backend.learning, policy, identifier, window=window, telemetry=telemetry)


def _server(
    settings: Settings,
    catalogs: CatalogService,
    upstream: UpstreamClient,
    outcomes: SearchOutcomes,
    telemetry: Telemetry,
    work: Executor,
    learning: CatalogLearning | None,
) -> McpServer:
    metatools = MetaTools(
        catalogs,
        upstream,
        ToolPolicy(
            pin_patterns=tuple(settings.pin),
            write_patterns=tuple(settings.write_tools),
            read_inferred=settings.read_inferred,
        ),
        max_batch_calls=settings.max_batch_calls,
        search_schemas=settings.search_schemas,
        answer_chars=settings.search_answer_chars,
        telemetry=telemetry,
        outcomes=outcomes,
        work=work,
        learning=learning,
    )
    return McpServer(
        metatools,
        catalogs,
        upstream,
        max_instructions=settings.max_instructions,
        catalog_ttl=settings.catalog_ttl,
        telemetry=telemetry,
    )


def _guard(settings: Settings, backend: Backend, telemetry: Telemetry) -> ToolGuard:
    return ToolGuard(
        backend.catalogs,
        telemetry,
        hide_suspicious=settings.hide_suspicious,
        on_change=settings.on_tool_change,
        approvals=Approvals(Path(settings.approved_tools) if settings.approved_tools else None),
        allowed_lookalikes=settings.allow_lookalike,
    )


def check_settings(settings: Settings) -> None:
    """Refuse settings no proxy can start with (ValueError, saying what to pass)."""
    if not settings.upstream:
        raise ValueError("no upstream: pass --upstream URL (or set TOOLSEARCH_UPSTREAM)")
    missing = _missing_jwt_flags(settings)
    if missing:
        raise ValueError(f"--catalog-identity jwt needs {', '.join(missing)}")


def settings_profile(settings: Settings) -> Profile | None:
    """The models, ranker and dictionaries of --model-dir (said once); None without one."""
    if not settings.model_dir:
        logger.info("no --model-dir: search is lexical (BM25) only")
        return None
    from toolsearch.embedding import ModelError
    from toolsearch.embedding.embedder import usable_cores
    from toolsearch.search.dictionaries import languages_of
    from toolsearch.search.profile import load_profile

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
    return profile


def _indexes(
    settings: Settings,
    profile: Profile | None,
    vectors: VectorStore,
    supervisor: Supervisor,
    work: Executor,
    telemetry: Telemetry,
) -> tuple[IndexBuilder, EmbeddingWorker | None]:
    """How each catalog's index is built: hybrid with the profile's models, embedded on the thread
    returned, tool vectors kept in `vectors`; BM25F alone without a profile."""
    from toolsearch.search.build import index_builder
    from toolsearch.search.progressive import EmbeddingWorker

    if profile is None:
        return index_builder((), vectors, supervisor, executor=work), None

    # The gauge reads the queue when metrics are collected, after `embedding` exists.
    embedding = EmbeddingWorker(
        profile.models, supervisor, on_done=telemetry.observe_embedding(lambda: embedding.pending)
    )
    builder = index_builder(
        profile.models,
        vectors,
        supervisor,
        embedding=embedding,
        wait_seconds=settings.embedding_wait,
        ranker=profile.ranker,
        dictionaries=profile.dictionaries,
        abstainer=profile.abstainer,
        executor=work,
    )
    return builder, embedding


def _missing_jwt_flags(settings: Settings) -> list[str]:
    """The flags `--catalog-identity jwt` needs that the settings leave empty (none for tokens)."""
    if settings.catalog_identity != "jwt":
        return []
    required = (
        ("--jwt-jwks-url", settings.jwt_jwks_url),
        ("--jwt-issuer", settings.jwt_issuer),
        ("--jwt-audience", settings.jwt_audience),
    )
    return [flag for flag, value in required if not value]


def _identifier(settings: Settings) -> Identifier:
    """The caller identity the settings ask for (`check_settings` refused what is missing)."""
    if settings.catalog_identity == "token":
        return TokenIdentifier()
    return JwtIdentifier(
        settings.jwt_jwks_url,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
        claims=settings.jwt_identity_claims,
    )
