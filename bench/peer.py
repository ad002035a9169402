"""The peer's virtualenv (bench/.venv-peer) and its server.

FastMCP pins its own `mcp` release, which need not match toolsearch's, so the peer gets a
virtualenv of its own, made on first use with the ordinary `venv` and `pip` from PyPI.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from functools import cache

from bench.processes import BENCH_DIR, Server
from toolsearch.testing import free_port

PEER_VENV = BENCH_DIR / ".venv-peer"
PEER_REQUIREMENTS = ("fastmcp>=4,<5", "uvloop", "httptools", "orjson")
"""FastMCP 4 (its BM25SearchTransform), served as toolsearch is (uvloop, httptools); orjson for the
demo upstream's canned results, which the peer shares."""
PEER_SCRIPT = BENCH_DIR / "peer_server.py"


def peer_python() -> str:
    """The peer virtualenv's interpreter, after creating the virtualenv if it is missing."""
    python = PEER_VENV / "bin" / "python"
    probe = [str(python), "-c", "import fastmcp, uvloop, httptools, orjson"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return str(python)
    print(f"bench: creating the peer's virtualenv in {PEER_VENV} (FastMCP from PyPI)", file=sys.stderr)
    venv.EnvBuilder(with_pip=True, clear=True).create(PEER_VENV)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PEER_REQUIREMENTS],
        check=True,
    )
    return str(python)


@cache
def peer_version() -> str:
    """`fastmcp <version> (mcp <version>)` as installed in the peer virtualenv."""
    script = "import importlib.metadata as m; print(m.version('fastmcp'), m.version('mcp'))"
    fastmcp, mcp = subprocess.run(
        [peer_python(), "-c", script], capture_output=True, text=True, check=True
    ).stdout.split()
    return f"fastmcp {fastmcp} (mcp {mcp})"


def peer_server(tools: int | None, *, max_results: int = 10) -> Server:
    """FastMCP with BM25SearchTransform serving the first `tools` recorded tools (all when None)."""
    port = free_port()
    command = [peer_python(), str(PEER_SCRIPT), "--port", str(port), "--max-results", str(max_results)]
    if tools is not None:
        command += ["--tools", str(tools)]
    return Server("peer", command, port)
