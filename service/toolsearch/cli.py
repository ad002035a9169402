"""The `toolsearch` command: serve (the main job), demo, search, and model tools.

Each command lives in `toolsearch.commands`; this is the entry point that puts them together and
turns the errors every command may raise into one line and an exit status.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from toolsearch import __version__
from toolsearch.commands.demo import add_demo_command
from toolsearch.commands.eval import add_eval_command
from toolsearch.commands.model import add_model_commands
from toolsearch.commands.search import add_search_command
from toolsearch.commands.serve import add_serve_command, flag
from toolsearch.commands.stats import add_stats_command
from toolsearch.commands.train import add_train_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolsearch", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"toolsearch {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_serve_command(commands)
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
            print(f"toolsearch: invalid {flag(field)}: {error['msg']}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"toolsearch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
