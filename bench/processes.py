"""The servers a benchmark runs: each its own process on 127.0.0.1, started together, stopped on exit.

The benchmark upstream (`bench.upstream_server`), toolsearch (`python -m toolsearch serve`), the
peer (`bench/peer_server.py` under the peer's virtualenv) and nginx as a round-robin balancer.
Everything listens on loopback; every process is ended by its own id when the `with` block ends.
"""

from __future__ import annotations

import os
import shutil
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
from toolsearch.demo.serving import base_url, free_port, proxy_command

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


def upstream_server(tools: int | None) -> Server:
    """The demo upstream serving the first `tools` recorded tools (all when None)."""
    port = free_port()
    command = [sys.executable, "-m", "bench.upstream_server", "--port", str(port)]
    if tools is not None:
        command += ["--tools", str(tools)]
    return Server("upstream", command, port, READY_PATH, env=_python_path(SERVICE_DIR))


def toolsearch_server(
    upstream: Server,
    *,
    service_dir: Path = SERVICE_DIR,
    model_dir: Path | None = None,
    name: str = "toolsearch",
    flags: Sequence[str] = (),
) -> Server:
    """`toolsearch serve` in front of `upstream`, from the sources in `service_dir`."""
    port = free_port()
    command = proxy_command(upstream.mcp_url, port, "--log-level=warning", *flags)
    if model_dir is not None:
        command.append(f"--model-dir={model_dir}")
    return Server(name, command, port, env=_python_path(service_dir))


def _python_path(service_dir: Path) -> dict[str, str]:
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
                _stop(entry.process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after a grace period."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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

_NGINX_CONF = """\
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    upstream toolsearch {{
{servers}
        keepalive 128;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://toolsearch;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
    }}
}}
"""


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (path for path in ("/usr/sbin/nginx",) if os.access(path, os.X_OK)), None
    )


@contextmanager
def nginx_balancer(backends: Sequence[Server]) -> Iterator[Server]:
    """nginx on a free loopback port, round robin over `backends`; config and logs in a temp dir."""
    binary = nginx_binary()
    if binary is None:
        raise RuntimeError("nginx is not installed (Debian package nginx)")
    with tempfile.TemporaryDirectory(prefix="bench-nginx-") as directory:
        os.chmod(directory, 0o755)  # nginx's workers may run as another user when started as root
        port = free_port()
        servers = "\n".join(f"        server 127.0.0.1:{backend.port};" for backend in backends)
        config = Path(directory) / "nginx.conf"
        config.write_text(_NGINX_CONF.format(dir=directory, servers=servers, port=port))
        balancer = Server(
            "nginx",
            [binary, "-p", directory, "-c", str(config), "-e", f"{directory}/error.log", "-g", "daemon off;"],
            port,
        )
        with running(balancer):
            yield balancer
