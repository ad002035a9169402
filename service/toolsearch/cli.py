"""The `toolsearch` command: serve (the main job), demo, search, model, eval, train and stats.

Each command lives in `toolsearch.commands`; this is the entry point that puts them together and
turns the errors every command may raise into one line and an exit status. Only the module of the
command named is imported (the others are listed by their summary in `COMMANDS`): importing them
all loads the MCP SDK, the HTTP server and the search stack, seconds before `--help` could answer.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from toolsearch import __version__
from toolsearch.commands import COMMANDS


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or, given `command`, of that one (the others by name only)."""
    parser = argparse.ArgumentParser(prog="toolsearch", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"toolsearch {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, entry in COMMANDS.items():
        if command is None or name == command:
            module = importlib.import_module(f"toolsearch.commands.{entry.module}")
            getattr(module, entry.register)(commands)
        else:
            commands.add_parser(name, help=entry.summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    named = next((word for word in given if not word.startswith("-")), None)
    parser = build_parser(named if named in COMMANDS else "")
    args = parser.parse_args(given)
    if not hasattr(args, "handler"):  # a command group named without its subcommand
        parser.parse_args([*given, "--help"])
    try:
        return int(args.handler(args) or 0)
    except ValueError as exc:
        from pydantic import ValidationError

        from toolsearch.commands.serve import flag

        if not isinstance(exc, ValidationError):
            print(f"toolsearch: {exc}", file=sys.stderr)
            return 2
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"])
            print(f"toolsearch: invalid {flag(field)}: {error['msg']}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
