"""The `toolsearch` commands, one module each (`toolsearch.cli` puts them together).

Each module's `add_..._command(subparsers)` (`add_model_commands` for the `model` group) registers
its command and sets `handler` on the parsed namespace: a callable taking the namespace and
returning the exit status. `COMMANDS` names them all with the line `toolsearch --help` shows, so
that the help is printed without importing any of them.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Final, TypeAlias


@dataclass(frozen=True)
class Command:
    """One command: what it does (its `--help` line), and where its `add_...` function is."""

    summary: str
    module: str
    register: str


COMMANDS: Final = {
    "serve": Command("run the proxy in front of an upstream MCP server", "serve", "add_serve_command"),
    "demo": Command(
        "try toolsearch on this machine: a demo upstream with recorded tools, and the proxy",
        "demo",
        "add_demo_command",
    ),
    "search": Command("search a catalog file offline", "search", "add_search_command"),
    "model": Command(
        "make the search profile (install), or one embedding model directory (fetch or import)",
        "model",
        "add_model_commands",
    ),
    "eval": Command("measure search quality on a query set", "eval", "add_eval_command"),
    "train": Command(
        "train a profile's learned ranking (query adapter and re-ranker), or its abstention model",
        "train",
        "add_train_command",
    ),
    "stats": Command(
        "what callers did with search answers, from running proxies' /stats", "stats", "add_stats_command"
    ),
}


Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""The CLI's subparsers, on which each command registers itself."""


def command_parser(subparsers: Subparsers, name: str, description: str | None) -> argparse.ArgumentParser:
    """The parser of command `name`, with its line of `toolsearch --help` (`COMMANDS`)."""
    return subparsers.add_parser(name, help=COMMANDS[name].summary, description=description)
