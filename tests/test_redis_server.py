"""The test Redis helper starts where its port was taken between choosing and binding it."""

from __future__ import annotations

import socket

import pytest

from toolsearch.testing import RedisServer, redis_server_binary

pytestmark = pytest.mark.skipif(redis_server_binary() is None, reason="redis-server is not installed")


def test_a_chosen_port_taken_before_the_first_start_is_chosen_again() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        taken = squatter.getsockname()[1]
        server = RedisServer()
        server.port = taken  # another process got the chosen port first
        with server:
            assert server.port != taken
            assert server.client().ping()


def test_a_port_given_by_the_caller_is_never_changed() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        taken = squatter.getsockname()[1]
        with pytest.raises(RuntimeError, match="exited with status"), RedisServer(port=taken):
            pass
