"""Serve HTTP apps on loopback for the demo and the tests: in a background thread, or as a subprocess.

Both start on a port that is free, wait until the server answers, and stop it again when the `with`
block ends, so nothing outlives its user: no thread, socket or process is left behind.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import IO

import httpx
import uvicorn
from starlette.types import ASGIApp

_POLL_SECONDS = 0.02


def base_url(host: str, port: int) -> str:
    """`http://host:port`, with an IPv6 address in brackets."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@contextmanager
def serve_app(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    startup_timeout: float = 30.0,
    shutdown_timeout: float = 5.0,
    keep_alive: float = 5.0,
    log_level: str = "warning",
) -> Iterator[str]:
    """Run `app` under uvicorn in a background thread; yield its base URL (`http://127.0.0.1:PORT`).

    `port=0` takes a free port and reads the bound one back. The app's lifespan runs (the MCP SDK's
    session manager needs it). On exit the server stops accepting, closes its connections, waits at
    most `shutdown_timeout` seconds for requests in flight, and its thread is joined. An idle
    connection is closed after `keep_alive` seconds (uvicorn's default, 5).
    """
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        log_config=None,  # leave the process's logging configuration alone
        log_level=log_level,
        access_log=False,
        proxy_headers=False,  # what X-Forwarded-* headers count for is the app's to decide
        timeout_graceful_shutdown=max(1, round(shutdown_timeout)),
        timeout_keep_alive=round(keep_alive),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn {host}:{port}", daemon=True)
    thread.start()
    try:
        _wait_started(server, thread, startup_timeout)
        bound_port = server.servers[0].sockets[0].getsockname()[1]
        yield base_url(host, bound_port)
    finally:
        server.should_exit = True
        thread.join(shutdown_timeout + 5)
        if thread.is_alive():
            server.force_exit = True
            thread.join(5)


def _wait_started(server: uvicorn.Server, thread: threading.Thread, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the HTTP server did not start (port in use, or the app's startup failed)")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the HTTP server did not start within {timeout:g} s")
        time.sleep(_POLL_SECONDS)


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago, for servers that must be told their port up front."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class ServedProcess:
    """A server running as a child process, with its combined stdout and stderr captured."""

    url: str
    process: subprocess.Popen[bytes]
    _log: IO[bytes]

    def output(self) -> str:
        """Everything the process has written so far (stdout and stderr, interleaved)."""
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode("utf-8", errors="replace")


@contextmanager
def serve_process(
    command: Sequence[str],
    *,
    url: str,
    ready_path: str = "/healthz",
    env: Mapping[str, str] | None = None,
    startup_timeout: float = 60.0,
    stop_timeout: float = 10.0,
) -> Iterator[ServedProcess]:
    """Start `command` (a server that will listen at `url`), wait until `GET url+ready_path` is 200.

    Readiness is polled for at most `startup_timeout` seconds; if the process exits or does not get
    ready, it is stopped and the error carries its output. On exit the process gets SIGTERM, then
    SIGKILL after `stop_timeout` seconds. `env` is added to this process's environment.

        port = free_port()
        with serve_process([sys.executable, "-m", "toolsearch", "serve", "--port", str(port), ...],
                           url=base_url("127.0.0.1", port)) as served:
            httpx.get(served.url + "/healthz")
    """
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
        served = ServedProcess(url=url.rstrip("/"), process=process, _log=log)
        try:
            _wait_ready(served, served.url + ready_path, startup_timeout)
            yield served
        finally:
            stop_process(process, stop_timeout)


def stop_process(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM, then SIGKILL if `process` has not exited after `grace` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def proxy_command(upstream_url: str, port: int, *flags: str) -> list[str]:
    """The command running `toolsearch serve` in front of `upstream_url` on loopback port `port`."""
    serve = [sys.executable, "-m", "toolsearch", "serve"]
    return [*serve, f"--upstream={upstream_url}", f"--port={port}", *flags]


def serve_proxy_process(
    upstream_url: str, *flags: str, env: Mapping[str, str] | None = None
) -> AbstractContextManager[ServedProcess]:
    """`toolsearch serve` as a child process on a free port (see `serve_process`); started on entry.

    `env` defaults to this interpreter's `sys.path` as `PYTHONPATH`, so the child imports what we do.
    """
    port = free_port()
    return serve_process(
        proxy_command(upstream_url, port, *flags),
        url=base_url("127.0.0.1", port),
        env=env if env is not None else {"PYTHONPATH": os.pathsep.join(sys.path)},
    )


def _wait_ready(served: ServedProcess, ready_url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2.0) as client:
        while True:
            if served.process.poll() is not None:
                raise RuntimeError(
                    f"the server exited with status {served.process.returncode} before it was ready; "
                    f"its output:\n{served.output()}"
                )
            try:
                if client.get(ready_url).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{ready_url} did not answer 200 within {timeout:g} s; the server's output:\n"
                    f"{served.output()}"
                )
            time.sleep(0.05)
