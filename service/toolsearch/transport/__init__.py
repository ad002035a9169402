"""How callers reach the proxy: streamable HTTP (`http`, with OAuth discovery and health) and stdio
(`stdio`), both answering through the proxy's one MCP server (`toolsearch.server`).
"""

from toolsearch.transport.http import create_app
from toolsearch.transport.stdio import serve_stdio

__all__ = ["create_app", "serve_stdio"]
