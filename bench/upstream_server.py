"""The benchmark upstream: the demo upstream (a real MCP SDK server) serving the first N recorded tools.

    python -m bench.upstream_server --port 8200 --tools 1500

Every caller sees all N tools, except that a bearer token `drop-K-...` hides tool K: each such
token gets a catalog of its own (a distinct search index in the proxy) made of tools the proxy has
already seen, which is how the cold-start section makes new catalogs without a new process.
Calls get the demo upstream's canned result; nothing outside this machine is contacted.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection
from functools import partial

import uvicorn

from toolsearch.testing import DemoUpstream, recorded_tools

READY_PATH = "/.well-known/oauth-protected-resource"
"""A path the demo upstream answers with 200 once it serves (it has no health endpoint)."""
DROP_PREFIX = "drop-"


def _visible(
    names: tuple[str, ...], everything: frozenset[str], authorization: str | None
) -> Collection[str]:
    token = (authorization or "").removeprefix("Bearer ")
    if token.startswith(DROP_PREFIX):
        position = token[len(DROP_PREFIX) :].partition("-")[0]
        if position.isdigit() and int(position) < len(names):
            return everything - {names[int(position)]}
    return everything


def benchmark_upstream(tools: int | None) -> DemoUpstream:
    """The first `tools` recorded tools (all when None), served statelessly with JSON responses."""
    definitions = recorded_tools(limit=tools)
    names = tuple(tool["name"] for tool in definitions)
    return DemoUpstream(
        definitions,
        visibility=partial(_visible, names, frozenset(names)),
        stateless=True,
        json_response=True,
        name="toolsearch-bench-upstream",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tools", type=int, default=None, help="serve the first N recorded tools")
    args = parser.parse_args()
    app = benchmark_upstream(args.tools).app()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
