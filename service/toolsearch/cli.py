"""The `toolsearch` command: serve (the main job), demo, search, and model tools.

`serve`'s flags are generated from `Settings`, so each flag, its `TOOLSEARCH_*` variable, its
default and its help text cannot drift apart.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from toolsearch import __version__
from toolsearch.demo.run import add_demo_command
from toolsearch.embedding.commands import add_model_commands, add_train_command
from toolsearch.evaluation import add_eval_command
from toolsearch.offline import add_search_command
from toolsearch.settings import Settings
from toolsearch.stats import add_stats_command


def _flag(name: str) -> str:
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
            kwargs.update(action="append", metavar="PATTERN")
        else:
            kwargs["metavar"] = name.upper()
        parser.add_argument(_flag(name), **kwargs)


def settings_from_args(args: argparse.Namespace) -> Settings:
    given = {name: getattr(args, name) for name in Settings.model_fields if hasattr(args, name)}
    for name, value in given.items():
        if isinstance(value, list):  # repeated flags and comma-separated values both work
            given[name] = [part.strip() for item in value for part in item.split(",") if part.strip()]
    return Settings(**given)


def _serve(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    from toolsearch.logs import configure_logging

    configure_logging(settings.log_format, settings.log_level)
    if settings.transport == "stdio":
        from toolsearch.proxy import Proxy
        from toolsearch.stdio import serve_stdio

        proxy = Proxy.from_settings(settings)
        asyncio.run(serve_stdio(proxy))
    else:
        import uvicorn

        from toolsearch.app import create_app

        app = create_app(settings)
        proxy = app.state.proxy
        uvicorn.run(
            app,
            host=settings.host,
            port=settings.port,
            log_config=None,
            access_log=False,
            proxy_headers=False,  # X-Forwarded-* count only with --trust-forwarded-headers, in the app
            timeout_graceful_shutdown=settings.shutdown_grace,
        )
    # uvicorn re-raises the SIGTERM it handled, which ends the process before this line, except as
    # PID 1 (a container without an init), where the kernel ignores it. Finalizing the interpreter
    # while a model run goes on in the embedding thread aborts the process: leave without it then.
    if proxy.embedding_running:
        logging.shutdown()
        os._exit(0)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolsearch", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"toolsearch {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="run the proxy in front of an upstream MCP server",
        description="Run the MCP tool-search proxy. Every flag can also be set by its TOOLSEARCH_* variable.",
    )
    add_settings_flags(serve)
    serve.set_defaults(handler=_serve)
    add_demo_command(commands)
    add_search_command(commands)
    add_model_commands(commands)
    add_eval_command(commands)
    add_train_command(commands)
    add_stats_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):  # a command group named without its subcommand
        parser.parse_args([*(argv if argv is not None else sys.argv[1:]), "--help"])
    try:
        return int(args.handler(args) or 0)
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"])
            print(f"toolsearch: invalid {_flag(field)}: {error['msg']}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"toolsearch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
