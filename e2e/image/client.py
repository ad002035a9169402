"""MCP SDK client of the image end-to-end run: a search, then a call of its best read-only hit.

Usage: python client.py http://127.0.0.1:18090/mcp "list all Airtable bases"
"""

from __future__ import annotations

import asyncio
import json
import sys

from mcp import Client

from toolsearch.testing import example_arguments


async def main(url: str, query: str) -> None:
    async with Client(url) as client:
        found = await client.call_tool("search_tools", {"query": query})
        assert not found.is_error, found.content
        answer = json.loads(found.content[0].text)
        hits = answer["results"][0]["tools"]
        best = next(tool for tool in hits if tool["readOnly"] is True)  # "inferred" needs --read-inferred
        print(f"search_tools {query!r}: {best['name']} first of {len(hits)} among {answer['total']} tools")

        described = await client.call_tool("describe_tool", {"names": [best["name"]]})
        (definition,) = json.loads(described.content[0].text)["tools"]
        arguments = example_arguments(definition["inputSchema"])
        called = await client.call_tool("call_read_tool", {"name": best["name"], "arguments": arguments})
        assert not called.is_error, called.content
        print(f"call_read_tool {best['name']}: {called.content[0].text[:100]!r}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
