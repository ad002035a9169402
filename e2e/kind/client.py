"""MCP SDK client of the kind end-to-end run: talks to the injected proxy and checks what it shows.

Usage: python client.py http://127.0.0.1:18090/mcp
"""

from __future__ import annotations

import asyncio
import json
import sys

from mcp import Client

META_TOOLS = {"search_tools", "describe_tool", "call_read_tool", "call_write_tool"}


async def main(url: str) -> None:
    async with Client(url) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        missing = META_TOOLS - listed
        assert not missing, f"the proxy does not show {sorted(missing)}; it shows {sorted(listed)}"
        print("tools shown by the proxy:", ", ".join(sorted(listed)))

        found = await client.call_tool("search_tools", {"query": "convert celsius to fahrenheit"})
        assert not found.is_error, found.content
        answer = json.loads(found.content[0].text)
        names = [tool["name"] for tool in answer["results"][0]["tools"]]
        converter = next((name for name in names if name.endswith("celsius_to_fahrenheit")), None)
        assert converter, f"search_tools did not find the converter behind agentgateway: {names}"
        print(f"search_tools found {converter} among {answer['total']} upstream tools")

        called = await client.call_tool("call_read_tool", {"name": converter, "arguments": {"celsius": 100}})
        assert not called.is_error, called.content
        text = " ".join(getattr(part, "text", "") for part in called.content)
        assert "212" in text, f"100 °C should be 212 °F, got {text!r}"
        print(f"call_read_tool {converter}(100) -> {text.strip()}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1]))
