"""Fixtures: a tiny model directory and a local model hub on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from .tiny_models import Hub, hub_handler, write_model


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    write_model(tmp_path / "model")
    return tmp_path / "model"


@pytest.fixture
def hub() -> Iterator[Hub]:
    state = Hub(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), hub_handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def leftovers(tmp_path: Path) -> Callable[[], list[str]]:
    """Names in tmp_path other than the test's own inputs: what a failed write left behind."""
    return lambda: sorted(p.name for p in tmp_path.iterdir() if p.name not in {"model", "source"})
