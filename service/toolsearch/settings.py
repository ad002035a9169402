"""Configuration: every option is a `toolsearch serve` flag and a `TOOLSEARCH_*` environment variable.

pydantic-settings reads and validates the environment (types, ranges, comma-separated lists) so
that the command line (`cli`) only has to lay flags over it; the field descriptions are the help
text of both, and README's configuration table is generated from the same fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


@dataclass(frozen=True)
class Metavar:
    """What the values of a list setting are, as its flag's help names them: `--pin PATTERN`."""

    name: str


PatternList = Annotated[list[str], NoDecode, Metavar("PATTERN")]
DirectoryList = Annotated[list[str], NoDecode, Metavar("DIR")]
ClaimList = Annotated[list[str], NoDecode, Metavar("CLAIM")]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TOOLSEARCH_", extra="forbid", frozen=True)

    upstream: str = Field(
        "",
        description="URL of the upstream MCP endpoint (streamable HTTP), e.g. http://127.0.0.1:8080/mcp.",
    )
    transport: Literal["http", "stdio"] = Field(
        "http",
        description="Serve MCP over streamable HTTP, or over stdin/stdout (stdio: no caller credentials "
        "reach the upstream).",
    )
    host: str = Field("127.0.0.1", description="Address to listen on (HTTP transport).")
    port: int = Field(8090, ge=0, le=65535, description="Port to listen on (HTTP transport).")
    path: str = Field("/mcp", description="Path of the MCP endpoint.")
    public_url: str = Field(
        "",
        description="The MCP endpoint's URL as clients reach it (e.g. https://tools.example.com/mcp): the "
        "OAuth protected resource clients get tokens for. Empty: each request's scheme and Host (or "
        "X-Forwarded-Proto and -Host, with --trust-forwarded-headers) and --path.",
    )
    trust_forwarded_headers: bool = Field(
        False,
        description="Take the public URL from X-Forwarded-Proto and X-Forwarded-Host (only behind a "
        "reverse proxy that sets them).",
    )
    allowed_origins: PatternList = Field(
        default_factory=lambda: ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"],
        description="Glob patterns of browser Origins allowed to call the proxy (DNS rebinding "
        "protection); requests without an Origin header are always allowed.",
    )
    catalog_ttl: float = Field(
        600.0,
        gt=0,
        description="Seconds a caller's catalog is fresh; after that it is listed again in the "
        "background while the old one keeps serving.",
    )
    pin: PatternList = Field(
        default_factory=list,
        description="Glob patterns of tools listed as themselves next to the meta-tools.",
    )
    write_tools: PatternList = Field(
        default_factory=list,
        description="Glob patterns of tools treated as writes even when the upstream marks them read-only.",
    )
    read_inferred: bool = Field(
        False,
        description="Let call_read_tool(s) take tools without a readOnlyHint that are judged reads by "
        'their name, description and schema (search answers show them as `readOnly: "inferred"`); '
        "--write-tools still wins. Without it only tools their upstream marks read-only are reads.",
    )
    hide_suspicious: bool = Field(
        False,
        description="Keep tools flagged suspicious (text that instructs the model, a look-alike or copy of "
        "another tool) out of search and calls; without it they are served after the others, marked "
        "`suspicious`.",
    )
    allow_lookalike: PatternList = Field(
        default_factory=list,
        description="Glob patterns of tool names never flagged as look-alikes of another tool (when the "
        "rule is wrong about them, e.g. `acme-eu_*` for a vendor's second server one letter off).",
    )
    on_tool_change: Literal["allow", "quarantine"] = Field(
        "allow",
        description="What a tool whose definition changed since its catalog first listed it gets: allow "
        "(logged and counted) or quarantine (neither searchable nor callable until its new digest is in "
        "--approved-tools).",
    )
    approved_tools: str = Field(
        "",
        description="File of approved tool digests, one a line (`#` comments; a name may precede the "
        "digest), read again when it changes: the changed tools --on-tool-change quarantine lets through.",
    )
    max_batch_calls: int = Field(
        10,
        ge=0,
        le=100,
        description="Most calls in one call_read_tools request; 0 removes that tool.",
    )
    search_schemas: int = Field(
        3,
        ge=0,
        le=25,
        description="How many of the best search results (the leaders) carry their input schema, compacted, "
        "as the answer's budget allows.",
    )
    search_answer_chars: int = Field(
        1500,
        ge=800,
        le=100_000,
        description="Most characters of a search_tools answer per query (a call of n queries gets n times "
        "as many): the leaders' schemas are compacted, then left out, then the last results, and the "
        "answer says what was left out.",
    )
    max_instructions: int = Field(
        10_000,
        ge=0,
        description="Most characters of instructions (ours, then the upstream's) sent to clients.",
    )
    max_request_bytes: int = Field(
        4 * 1024 * 1024,
        ge=1024,
        description="Largest accepted request body, in bytes.",
    )
    upstream_timeout: float = Field(
        60.0,
        gt=0,
        description="Seconds an upstream request (a listing page or a tool call) may take.",
    )
    upstream_connect_timeout: float = Field(
        5.0, gt=0, description="Seconds to establish a connection to the upstream."
    )
    max_list_pages: int = Field(
        100,
        ge=1,
        description="Most pages of upstream tools/list followed for one catalog.",
    )
    max_upstream_response_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1024,
        description="Largest accepted upstream response (a listing page or a tool result), in bytes.",
    )
    max_catalog_tools: int = Field(
        10_000,
        ge=1,
        description="Most tools in one caller's catalog; the upstream's further tools are left out, with a "
        "warning in the log.",
    )
    redis_url: str = Field(
        "",
        description="Redis shared by replicas for catalogs, tools and embeddings: redis://, rediss:// (TLS), "
        "unix://, redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db] or, for a Redis "
        "Cluster, redis+cluster://[[user]:password@]host:port[,host:port...] (rediss+ for TLS). Empty: "
        "catalogs stay in this process.",
    )
    redis_prefix: str = Field("toolsearch:", description="Prefix of every Redis key toolsearch writes.")
    redis_timeout: float = Field(
        1.0,
        gt=0,
        description="Seconds a Redis operation may take; past it the replica serves from its own cache or "
        "the upstream, and leaves Redis alone for a second before trying again.",
    )
    redis_ttl: float = Field(
        86_400.0,
        gt=0,
        description="Seconds a catalog is kept in Redis after it was listed (a stale one serves while it is "
        "listed again); tool definitions live as long as a catalog lists them.",
    )
    max_cached_catalogs: int = Field(
        1024,
        ge=1,
        description="Most catalogs one process keeps ready to search (least recently used dropped; with "
        "Redis they are read back from it).",
    )
    model_dir: DirectoryList = Field(
        default_factory=list,
        description="A profile directory from `toolsearch model install` (its models and trained ranker), or "
        "embedding model directories (from `toolsearch model import` or `model fetch`) for hybrid search, "
        "comma-separated or the flag repeated: the first ranks, expands queries and decides abstention; "
        "each further one (a companion, e.g. use-multilingual) adds its similarity to the fusion. Empty: "
        "lexical (BM25) search only.",
    )
    search_threads: int = Field(
        1,
        ge=1,
        le=64,
        description="onnxruntime intra-op threads per model run (1 lets a request's runs, which go at "
        "once, and concurrent searches use separate cores; a query's few tokens gain nothing from more).",
    )
    embedding_workers: int = Field(
        0,
        ge=0,
        le=64,
        description="Model runs at once while a catalog is embedded, each on one core. 0: the CPUs the "
        "process may use (its affinity within a cgroup CPU limit), at most 4.",
    )
    vector_cache_dir: str = Field(
        "",
        description="Directory (local disk) that keeps tool vectors between restarts, so that a restarted "
        "process, or another one sharing the directory, does not embed a known catalog again; safe with "
        "several processes. With Redis it sits in front of Redis's shared vectors. Empty: vectors live in "
        "memory (and in Redis when configured).",
    )
    vector_cache_max_mb: int = Field(
        1024,
        ge=1,
        description="Most disk the --vector-cache-dir entries take, in MB (least recently used removed past "
        "it); 5,000 tools with the e5+use profile take about 100 MB.",
    )
    embedding_wait: float = Field(
        1.0,
        ge=0,
        le=3600,
        description="Seconds a new catalog's first search waits for its tools to be embedded; past that it "
        "is answered by BM25 while embedding goes on in the background (a catalog of known tools is ready "
        "well within a second). A large value always waits for hybrid search.",
    )
    catalog_identity: Literal["token", "jwt"] = Field(
        "token",
        description="What a catalog is cached under: the token's SHA-256 (never kept past the token's exp), "
        "or with jwt the verified JWT's issuer, subject and --jwt-identity-claims, so that a refreshed "
        "token keeps its catalog (an unverifiable token falls back to its hash).",
    )
    jwt_jwks_url: str = Field("", description="JWKS URL of the token issuer (--catalog-identity jwt).")
    jwt_issuer: str = Field("", description="Required `iss` of verified tokens (--catalog-identity jwt).")
    jwt_audience: str = Field("", description="Required `aud` of verified tokens (--catalog-identity jwt).")
    jwt_identity_claims: ClaimList = Field(
        default_factory=lambda: ["scope"],
        description="Claims that decide which tools a caller sees; with issuer and subject they make the "
        "catalog identity (--catalog-identity jwt).",
    )
    search_outcome_window: float = Field(
        300.0,
        gt=0,
        le=3600,
        description="Seconds after a search within which the caller's next tool call is judged against "
        "its answer (followed, at which rank, or not); no call by then counts the search as unfollowed. "
        "Only the answer's tool names are kept, never the query.",
    )
    learning: bool = Field(
        False,
        description="Learn from use: when a search is followed by a call of a tool it did not rank first, "
        "that catalog's ranking learns that such requests lead to the tool (an aggregate of request "
        "vectors per tool, never the text; no effect until --learning-k distinct callers taught it).",
    )
    learning_k: int = Field(
        3,
        ge=1,
        le=1000,
        description="Distinct callers (tokens) who must have led to a tool before what they taught changes "
        "any ranking (--learning).",
    )
    learning_half_life: float = Field(
        14 * 86_400.0,
        gt=0,
        description="Seconds after which what callers taught counts half (--learning).",
    )
    stats: bool = Field(
        False,
        description="Serve GET /stats: what callers did with search answers (share followed by a call of "
        "a result, by rank; tools most often called without search; abstentions), as JSON, next to "
        "/metrics and like it without authentication.",
    )
    shutdown_grace: float = Field(
        10.0,
        ge=0,
        description="Seconds in-flight requests may take to finish after SIGTERM before the process exits.",
    )
    log_format: Literal["text", "json"] = Field("text", description="Log line format.")
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="Log level.")

    @field_validator("upstream")
    @classmethod
    def _an_http_url(cls, value: str) -> str:
        """Refused at start, not at the first request: a URL without its scheme reaches nothing."""
        if value and not value.lower().startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL; e.g. http://{value}")
        return value

    @field_validator(
        "allowed_origins", "pin", "write_tools", "jwt_identity_claims", "model_dir", mode="before"
    )
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value
