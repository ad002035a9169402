"""A small streamable-HTTP MCP server for the kind end-to-end run (runs in the toolsearch image)."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("e2e-weather")
READ_ONLY = ToolAnnotations(readOnlyHint=True)


@server.tool(annotations=READ_ONLY)
def celsius_to_fahrenheit(celsius: float) -> float:
    """Convert a temperature from degrees Celsius to degrees Fahrenheit."""
    return celsius * 9 / 5 + 32


@server.tool(annotations=READ_ONLY)
def wind_chill(celsius: float, wind_kmh: float) -> float:
    """Estimate the felt temperature in degrees Celsius from air temperature and wind speed."""
    return round(13.12 + 0.6215 * celsius - 11.37 * wind_kmh**0.16 + 0.3965 * celsius * wind_kmh**0.16, 1)


@server.tool()
def file_weather_report(city: str, summary: str) -> str:
    """File a weather report for a city (a write: the proxy offers it through call_write_tool only)."""
    return f"Report for {city} filed."


if __name__ == "__main__":
    server.run(
        "streamable-http", host=os.environ.get("HOST", "0.0.0.0"), port=int(os.environ.get("PORT", "3001"))
    )
