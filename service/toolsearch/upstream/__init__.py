"""The client toward the upstream MCP server (the gateway): it lists and calls tools for a caller,
in either protocol era (`client`), one request and its JSON or SSE answer at a time (`exchange`),
holding legacy-era sessions (`sessions`). It knows nothing of catalogs or search.
"""

from toolsearch.upstream.client import UpstreamClient

__all__ = ["UpstreamClient"]
