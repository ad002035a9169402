"""Node parts for the tests: Node 22 and the npm packages of tests/node (installed by
scripts/node-packages.sh, which `make test` runs): the reference MCP server `server-everything`
(TypeScript SDK, stateful streamable HTTP), the TypeScript SDK client and the conformance suite, and
the scripts of tests/node that serve MCP (`node_server`).

    with everything_server() as url:          # http://127.0.0.1:PORT/mcp
        ...
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from toolsearch.testing import free_port, stop_process

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
NODE_MODULES = NODE_DIR / "node_modules"
NODE = NODE_MODULES / ".bin" / "node"
EVERYTHING = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"

requires_node = pytest.mark.skipif(
    not NODE.exists(), reason="Node packages missing: run scripts/node-packages.sh (make test does)"
)


@contextmanager
def everything_server(port: int | None = None, *, startup_timeout: float = 30.0) -> Iterator[str]:
    """`server-everything` over streamable HTTP on loopback `port` (a free one by default); its MCP URL.
    Stopped when the block ends; starting it again on the same port is a restart (sessions lost)."""
    with node_server(EVERYTHING, "streamableHttp", port=port, startup_timeout=startup_timeout) as url:
        yield url


@contextmanager
def node_server(
    script: Path, *args: str, port: int | None = None, startup_timeout: float = 30.0
) -> Iterator[str]:
    """A Node MCP server (`script`, listening on `PORT` at /mcp) on loopback; its MCP URL."""
    port = port or free_port()
    process = subprocess.Popen(
        [str(NODE), str(script), *args],
        env={"PORT": str(port), "PATH": str(NODE.parent)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(process, script.name, port, startup_timeout)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process, 5.0)


def _wait_listening(process: subprocess.Popen[bytes], name: str, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with status {process.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not listen on port {port} within {timeout:g} s") from None
            time.sleep(0.05)
