"""`toolsearch demo`: a real upstream MCP server with recorded tools, and the proxy in front of it."""
