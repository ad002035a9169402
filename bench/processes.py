"""The servers a benchmark runs: each its own process on 127.0.0.1, started together, stopped on exit.

The benchmark upstream (`bench.upstream_server`), toolsearch (`python -m toolsearch serve`), the
peer (`bench/peer_server.py` under the peer's virtualenv) and nginx as a round-robin balancer.
Everything listens on loopback; every process is ended by its own id when the `with` block ends.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

from bench.upstream_server import READY_PATH
from toolsearch.testing import (
    base_url,
    free_port,
    nginx_binary,
    nginx_command,
    proxy_command,
    stop_process,
    write_round_robin_config,
)

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
SERVICE_DIR = REPO_DIR / "service"
_STARTUP_SECONDS = 120.0
_STOP_SECONDS = 10.0


@dataclass(frozen=True)
class Server:
    """A server to start: its command, where it will listen, and how to tell it is ready."""

    name: str
    command: Sequence[str]
    port: int
    ready_path: str = "/healthz"
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return base_url("127.0.0.1", self.port)

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"


@dataclass
class Running:
    """A started server: its process and its captured output (stdout and stderr together)."""

    server: Server
    process: subprocess.Popen[bytes]
    log: IO[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode("utf-8", errors="replace")


def cpu_seconds(pids: Sequence[int]) -> float:
    """CPU time (user and system) the processes have used so far, from /proc."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def set_up_as_serve() -> None:
    """What `toolsearch serve` sets for the whole process before it loads models, where the tree
    measured has it (the C heap's threshold, `toolsearch.runtime.heap`): an in-process
    measurement then holds memory and runs as a served process does."""
    try:
        from toolsearch.runtime.heap import map_large_blocks  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # a tree from before it
        return
    map_large_blocks()


def upstream_server(tools: int | None) -> Server:
    """The demo upstream serving the first `tools` recorded tools (all when None)."""
    port = free_port()
    command = [sys.executable, "-m", "bench.upstream_server", "--port", str(port)]
    if tools is not None:
        command += ["--tools", str(tools)]
    return Server("upstream", command, port, READY_PATH, env=python_path(SERVICE_DIR))


WAIT_FOR_HYBRID = "--embedding-wait=3600"
FLAG_MARK = "@"


def split_serve_flags(model_dir: str) -> tuple[str, list[str]]:
    """A bench profile value's `--model-dir` and the `toolsearch serve` flags after it:
    `models/default@search-threads=2@embedding-workers=1` runs the profile with those two."""
    directories, *flags = model_dir.split(FLAG_MARK)
    return directories, [f"--{flag}" for flag in flags if flag]


def toolsearch_server(
    upstream: Server,
    *,
    service_dir: Path = SERVICE_DIR,
    model_dir: str | None = None,
    name: str = "toolsearch",
    wait_for_hybrid: bool = True,
) -> Server:
    """`toolsearch serve` in front of `upstream`, from the sources in `service_dir`; `model_dir` is
    passed unchanged to `--model-dir` (comma-separated directories: the primary model, then companions,
    or a profile directory), but for serve flags after it (`split_serve_flags`).

    With a model, a catalog's first search waits for its embedding (`--embedding-wait` an hour)
    unless `wait_for_hybrid` is off: what is measured is then hybrid search, not the BM25 that
    serves a catalog while it embeds."""
    port = free_port()
    command = proxy_command(upstream.mcp_url, port, "--log-level=warning")
    if model_dir is not None:
        directories, flags = split_serve_flags(model_dir)
        command += [f"--model-dir={directories}", *flags]
        if wait_for_hybrid:
            command.append(WAIT_FOR_HYBRID)
    return Server(name, command, port, env=python_path(service_dir))


def with_vector_cache(server: Server, directory: Path) -> Server:
    """`server` (a `toolsearch serve`) keeping its tool vectors in `directory` (`--vector-cache-dir`)."""
    return dataclasses.replace(server, command=[*server.command, f"--vector-cache-dir={directory}"])


def python_path(service_dir: Path) -> dict[str, str]:
    """The environment variables that run `service_dir`'s toolsearch (and this checkout's bench)."""
    # The service sources first, so that a patched copy (--service-dir) shadows the installed package.
    return {"PYTHONPATH": os.pathsep.join([str(service_dir), str(REPO_DIR)])}


@contextmanager
def running(*servers: Server, startup_timeout: float = _STARTUP_SECONDS) -> Iterator[list[Running]]:
    """Start every server at once, wait until each answers 200 on its ready path, stop them all on exit."""
    started: list[Running] = []
    with ExitStack() as logs:
        try:
            for server in servers:
                log = logs.enter_context(tempfile.TemporaryFile())
                process = subprocess.Popen(
                    list(server.command),
                    cwd=REPO_DIR,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, **server.env},
                )
                started.append(Running(server, process, log))
            _wait_ready(started, startup_timeout)
            yield started
        finally:
            for entry in started:
                stop_process(entry.process, _STOP_SECONDS)


def _wait_ready(started: list[Running], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    waiting = list(started)
    with httpx.Client(timeout=2.0) as client:
        while waiting:
            for entry in list(waiting):
                if entry.process.poll() is not None:
                    raise RuntimeError(
                        f"{entry.server.name} exited with status {entry.process.returncode} before it was "
                        f"ready; its output:\n{entry.output()}"
                    )
                try:
                    if client.get(entry.server.url + entry.server.ready_path).status_code == 200:
                        waiting.remove(entry)
                except httpx.TransportError:
                    pass
            if waiting and time.monotonic() > deadline:
                names = ", ".join(entry.server.name for entry in waiting)
                raise RuntimeError(f"{names} not ready within {timeout:g} s")
            time.sleep(0.05)


# -- nginx ---------------------------------------------------------------------------------------


@contextmanager
def nginx_balancer(backends: Sequence[Server]) -> Iterator[Server]:
    """nginx on a free loopback port, round robin over `backends`; config and logs in a temp dir."""
    binary = nginx_binary()
    if binary is None:
        raise RuntimeError("nginx is not installed (Debian package nginx)")
    with tempfile.TemporaryDirectory(prefix="bench-nginx-") as directory:
        port = free_port()
        backend_ports = [backend.port for backend in backends]
        config = write_round_robin_config(Path(directory), port, backend_ports, access_log=False)
        balancer = Server("nginx", nginx_command(binary, Path(directory), config), port)
        with running(balancer):
            yield balancer
