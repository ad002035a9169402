"""The five meta-tools a model sees instead of the whole catalog, and calls through to upstream tools.

Their names and argument shapes are the public interface (`definitions`; README documents them).
What a call comes to for the model is decided by pure rules (`call_rules`, and `answer` for
search_tools' answer); `MetaTools` fetches the caller's catalog, calls the upstream, hops off the
event loop where a search may embed a query, and records telemetry and search outcomes. Its
collaborators are the Protocols below, which the proxy's parts satisfy.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from contextlib import AbstractContextManager
from typing import Any, Protocol

from opentelemetry.metrics import Histogram

from toolsearch.catalog.learning import CatalogLearning
from toolsearch.catalog.service import Catalog
from toolsearch.mcp.caller import CallerHeaders, CallerInput
from toolsearch.mcp.errors import InputNotRelayed, UpstreamAuthError, UpstreamError, UpstreamRpcError
from toolsearch.mcp.jsonrpc import INVALID_PARAMS, JsonRpcError
from toolsearch.metatools.answer import search_answer
from toolsearch.metatools.call_rules import (
    SearchRequest,
    as_arguments,
    batch_result,
    call_refusal,
    catalog_unavailable,
    described,
    error_result,
    json_result,
    parse_problem,
    passed_through,
    schema_error,
    search_request,
    unknown_tool,
    unparsed_arguments,
    upstream_failure,
    with_parsed_arguments,
)
from toolsearch.metatools.definitions import (
    CALL_READ,
    CALL_READ_BATCH,
    DESCRIBE,
    SEARCH,
    definitions,
    listed_tools,
)
from toolsearch.metatools.policy import ToolPolicy
from toolsearch.metatools.validation import argument_problems
from toolsearch.telemetry import Telemetry, elapsed
from toolsearch.tool import tool_digest

logger = logging.getLogger(__name__)


class Catalogs(Protocol):
    """Where a caller's catalog comes from (`catalog.CatalogService`)."""

    async def get(self, caller: CallerHeaders) -> Catalog: ...


class ToolCaller(Protocol):
    """Who calls an upstream tool for a caller (`upstream.UpstreamClient`)."""

    async def call_tool(
        self,
        caller: CallerHeaders,
        name: str,
        arguments: Mapping[str, Any],
        input_schema: Mapping[str, Any] | None = None,
        caller_input: CallerInput | None = None,
    ) -> dict[str, Any]: ...


class Outcomes(Protocol):
    """What follows each search (`outcomes.SearchOutcomes`)."""

    async def searched(self, caller: CallerHeaders, results: Sequence[Mapping[str, Any]]) -> None: ...

    async def called(self, caller: CallerHeaders, name: str) -> int | None: ...

    def unknown_tool(self, *, typo: bool) -> None: ...


class SearchTelemetry(Protocol):
    """A span and a duration per search (`telemetry.Telemetry`)."""

    def span(
        self, name: str, *, attributes: Mapping[str, Any] | None = None
    ) -> AbstractContextManager[Any]: ...

    @property
    def search_duration(self) -> Histogram: ...


class MetaTools:
    """The meta-tools, and direct calls of upstream tools by their real names."""

    def __init__(
        self,
        catalogs: Catalogs,
        upstream: ToolCaller,
        policy: ToolPolicy,
        *,
        outcomes: Outcomes,
        work: Executor,
        max_batch_calls: int = 10,
        search_schemas: int = 3,
        answer_chars: int = 1500,
        telemetry: SearchTelemetry | None = None,
        learning: CatalogLearning | None = None,
    ) -> None:
        """Searches run on `work`, off the event loop (the proxy's threads); `outcomes` records
        what follows each search, and `learning` (when on) learns from it."""
        self._learning = learning
        self._telemetry = telemetry or Telemetry(use_environment=False)
        self._outcomes = outcomes
        self._catalogs = catalogs
        self._upstream = upstream
        self._policy = policy
        self._search_schemas = search_schemas
        self._answer_chars = answer_chars
        self._work = work
        self.definitions: list[dict[str, Any]] = definitions(
            max_batch_calls, read_inferred=policy.read_inferred
        )
        self._schemas = {d["name"]: d["inputSchema"] for d in self.definitions}
        # Validators are cached by schema content; the batch tool's schema depends on the settings.
        self._schema_keys = {name: tool_digest(schema) for name, schema in self._schemas.items()}

    def is_meta_tool(self, name: object) -> bool:
        return name in self._schemas

    def listed_tools(self, catalog: Catalog | None) -> list[dict[str, Any]]:
        """What `tools/list` shows (`definitions.listed_tools`)."""
        return listed_tools(self.definitions, catalog, self._policy)

    async def call(
        self, name: str, arguments: Any, caller: CallerHeaders, caller_input: CallerInput | None = None
    ) -> dict[str, Any]:
        """`tools/call`: a meta-tool, or any tool of the caller's catalog by its real name.

        `caller_input` (2026-07-28 callers only) goes upstream with a single call, so that a tool that
        asks for input gets the caller's answers on the retry; without it such a tool's call fails."""
        arguments = as_arguments(arguments)
        if name not in self._schemas:
            try:
                catalog = await self._catalogs.get(caller)
            except UpstreamError as exc:
                return catalog_unavailable(exc)
            return await self._call_upstream(
                catalog,
                name,
                arguments,
                caller,
                require_read_only=False,
                direct=True,
                caller_input=caller_input,
            )
        started = time.perf_counter()
        if not isinstance(arguments, dict):
            parsing = f": they {parse_problem(arguments)}" if isinstance(arguments, str) else ""
            return error_result(f"Arguments of {name} must be a JSON object{parsing}.")
        arguments = with_parsed_arguments(arguments)
        unparsed = unparsed_arguments(arguments)
        problems = argument_problems(self._schemas[name], arguments, key=self._schema_keys[name])
        if unparsed is not None:
            result = error_result(unparsed)
        elif problems:
            result = schema_error(name, problems, self._schemas[name])
        else:
            try:
                result = await self._meta_tool(name, arguments, caller, caller_input)
            except UpstreamError as exc:
                result = catalog_unavailable(exc)
            except UpstreamAuthError:
                _log_call(name, "unauthorized", started)
                raise
        _log_call(name, "error" if result.get("isError") else "ok", started)
        return result

    async def _meta_tool(
        self, name: str, arguments: dict[str, Any], caller: CallerHeaders, caller_input: CallerInput | None
    ) -> dict[str, Any]:
        if name == SEARCH:
            request = search_request(arguments)
            return await self._search(request, caller) if isinstance(request, SearchRequest) else request
        catalog = await self._catalogs.get(caller)
        if name == DESCRIBE:
            return json_result(described(catalog, arguments["names"], self._policy.read_only_label))
        if name == CALL_READ_BATCH:
            return await self._call_read_batch(catalog, arguments["calls"], caller)
        return await self._call_upstream(
            catalog,
            arguments["name"],
            arguments.get("arguments", {}),
            caller,
            require_read_only=name == CALL_READ,
            caller_input=caller_input,
        )

    async def _search(self, request: SearchRequest, caller: CallerHeaders) -> dict[str, Any]:
        catalog = await self._catalogs.get(caller)
        if self._learning is not None:
            await self._learning.before_search(catalog)
        searches = []
        for query in request.queries:
            with self._telemetry.span("search", attributes={"toolsearch.catalog.tools": len(catalog)}):
                started = time.perf_counter()
                # A model may embed the query: off the event loop, so other callers are not held up.
                hits = await asyncio.get_running_loop().run_in_executor(
                    self._work, catalog.hits, query, request.limit
                )
                self._telemetry.search_duration.record(elapsed(started))
            searches.append((query, hits))
        answer = search_answer(
            searches,
            catalog,
            read_only=self._policy.read_only_label,
            limit=request.limit,
            leaders=self._search_schemas,
            chars_per_query=self._answer_chars,
            schemas=request.schemas,
        )
        await self._outcomes.searched(caller, answer["results"])
        if self._learning is not None:
            queries = [query for query, _ in searches]
            vectors = await asyncio.get_running_loop().run_in_executor(
                self._work, self._learning.vectors, catalog, queries
            )
            await self._learning.searched(caller, catalog, vectors)
        return json_result(answer)

    async def _call_read_batch(
        self, catalog: Catalog, calls: list[dict[str, Any]], caller: CallerHeaders
    ) -> dict[str, Any]:
        outcomes = await asyncio.gather(
            *(
                self._call_upstream(
                    catalog, c["name"], c.get("arguments", {}), caller, require_read_only=True
                )
                for c in calls
            ),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, UpstreamAuthError):
                raise outcome  # refused credentials answer the whole request, not one call of it
        return batch_result(calls, outcomes)

    async def _call_upstream(
        self,
        catalog: Catalog,
        name: str,
        arguments: Any,
        caller: CallerHeaders,
        *,
        require_read_only: bool,
        direct: bool = False,
        caller_input: CallerInput | None = None,
    ) -> dict[str, Any]:
        """Call `name` for the model (problems come back as `isError` results it can read) or, when
        `direct` (a `tools/call` by the tool's real name), as the upstream would: an unknown tool and
        the upstream's JSON-RPC errors are JSON-RPC errors."""
        tool = catalog.get(name)
        if tool is None or (tool.app_only and not direct):  # direct: the app calls its own tools
            message, typo = unknown_tool(name, catalog.names)
            self._outcomes.unknown_tool(typo=typo)
            if direct:
                raise JsonRpcError(INVALID_PARAMS, message)
            return error_result(message)
        rank = await self._outcomes.called(caller, name)
        if self._learning is not None:
            await self._learning.called(caller, catalog, name, rank)
        refusal = call_refusal(catalog, tool, arguments, self._policy, require_read_only=require_read_only)
        if refusal is not None:
            return refusal
        started = time.perf_counter()
        try:
            result = await self._upstream.call_tool(caller, name, arguments, tool.input_schema, caller_input)
        except UpstreamError as exc:
            _log_call(name, _failure_outcome(exc), started)
            if direct and isinstance(exc, UpstreamRpcError):
                raise JsonRpcError(exc.code, exc.message, exc.data) from None
            return upstream_failure(name, exc, tool.input_schema)
        _log_call(name, "error" if result.get("isError") else "ok", started)
        return passed_through(name, result, relay_input=caller_input is not None)


def _failure_outcome(exc: UpstreamError) -> str:
    """What the call log says of an upstream failure."""
    if isinstance(exc, UpstreamRpcError):
        return "upstream_error"
    return "input_not_relayed" if isinstance(exc, InputNotRelayed) else "upstream_unavailable"


def _log_call(tool: str, outcome: str, started: float) -> None:
    logger.info(
        "tool call",
        extra={
            "tool": tool,
            "outcome": outcome,
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        },
    )
