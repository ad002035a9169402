"""`toolsearch serve`: the proxy, over streamable HTTP or stdio.

Its flags are generated from `Settings`, so each flag, its `TOOLSEARCH_*` variable, its default and
its help text cannot drift apart.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import typing
from typing import Any

from toolsearch.commands import Subparsers, command_parser
from toolsearch.runtime.heap import map_large_blocks
from toolsearch.settings import Metavar, Settings


def flag(name: str) -> str:
    """The flag of a `Settings` field: `model_dir` -> `--model-dir`."""
    return "--" + name.replace("_", "-")


def add_settings_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per `Settings` field; unset flags fall back to the environment, then the default."""
    for name, info in Settings.model_fields.items():
        default = info.get_default(call_default_factory=True)
        shown = ",".join(default) if isinstance(default, list) else default
        help_text = f"{info.description} [env TOOLSEARCH_{name.upper()}; default: {shown!r}]"
        annotation = info.annotation
        kwargs: dict[str, Any] = {"dest": name, "default": argparse.SUPPRESS, "help": help_text}
        if typing.get_origin(annotation) is typing.Literal:
            kwargs["choices"] = typing.get_args(annotation)  # --help shows them: {text,json}
        elif annotation is bool:
            kwargs["metavar"] = "{true,false}"
        elif typing.get_origin(annotation) is list or isinstance(default, list):
            names = [item.name for item in info.metadata if isinstance(item, Metavar)]
            kwargs.update(action="append", metavar=names[0] if names else name.upper())
        else:
            kwargs["metavar"] = name.upper()
        parser.add_argument(flag(name), **kwargs)


def settings_from_args(args: argparse.Namespace) -> Settings:
    given = {name: getattr(args, name) for name in Settings.model_fields if hasattr(args, name)}
    for name, value in given.items():
        if isinstance(value, list):  # repeated flags and comma-separated values both work
            given[name] = [part.strip() for item in value for part in item.split(",") if part.strip()]
    return Settings(**given)


_YOUNG_COLLECTION_THRESHOLD = 50_000
"""Container allocations between two young garbage collections (CPython's default is 700)."""


def _serve(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    # A listing of 1,500 tools parses into some 100,000 containers that live a moment. At CPython's
    # default threshold the collector scans them mid-parse, promotes them to the oldest generation,
    # and soon collects the whole heap (catalogs, indexes): hundreds of milliseconds during which no
    # request is served and Redis round trips time out. Rarer young collections let them die by
    # reference counting first.
    gc.set_threshold(_YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])
    map_large_blocks()  # what a catalog's embedding allocated goes back to the system after it
    from toolsearch.logs import configure_logging

    configure_logging(settings.log_format, settings.log_level)
    if settings.transport == "stdio":
        from toolsearch.proxy import Proxy
        from toolsearch.transport.stdio import serve_stdio

        async def wired_and_served() -> Proxy:
            proxy = Proxy.from_settings(settings)  # on the event loop that serves it
            await serve_stdio(proxy)
            return proxy

        proxy: Proxy | None = asyncio.run(wired_and_served())
    else:
        import uvicorn

        from toolsearch.transport.http import create_app

        app = create_app(settings)
        uvicorn.run(
            app,
            host=settings.host,
            port=settings.port,
            log_config=None,
            access_log=False,
            proxy_headers=False,  # X-Forwarded-* count only with --trust-forwarded-headers, in the app
            # uvicorn annotates whole seconds but waits with asyncio.wait_for, which takes any.
            timeout_graceful_shutdown=settings.shutdown_grace,  # type: ignore[arg-type]
        )
        proxy = getattr(app.state, "proxy", None)  # wired in the app's lifespan
    # uvicorn re-raises the SIGTERM it handled, which ends the process before this line, except as
    # PID 1 (a container without an init), where the kernel ignores it. Finalizing the interpreter
    # while a model run goes on in the embedding thread aborts the process: leave without it then.
    if proxy is not None and proxy.embedding_running:
        logging.shutdown()
        os._exit(0)
    return 0


_DESCRIPTION = "Run the MCP tool-search proxy. Every flag can also be set by its TOOLSEARCH_* variable."


def add_serve_command(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register `serve`; the parsed arguments' `handler(args) -> int` runs the proxy (exit status)."""
    parser = command_parser(subparsers, "serve", _DESCRIPTION)
    add_settings_flags(parser)
    parser.set_defaults(handler=_serve)
    return parser
