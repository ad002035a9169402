"""toolsearch: an MCP tool-search proxy."""

__version__ = "0.1.0"
