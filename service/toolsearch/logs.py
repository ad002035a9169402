"""Structured logs: tool names, outcomes and timings only.

Only the fields named in `FIELDS` are ever written next to a message, and no code passes a token,
query, argument or result to a logger, so none can reach a log line.
"""

from __future__ import annotations

import logging
import sys
from typing import Final

import orjson

FIELDS: Final = ("method", "tool", "outcome", "status", "tools", "duration_ms")


def _fields(record: logging.LogRecord) -> dict[str, object]:
    return {name: getattr(record, name) for name in FIELDS if hasattr(record, name)}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        extra = " ".join(f"{name}={value}" for name, value in _fields(record).items())
        return f"{super().format(record)} {extra}".rstrip()


def configure_logging(log_format: str = "text", level: str = "info") -> None:
    """Log to stderr (stdout may carry the stdio transport)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpcore", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
