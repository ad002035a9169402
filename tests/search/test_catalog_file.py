"""Catalog files: servers with their tools, named the way agentgateway names them."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from toolsearch.catalog_file import CatalogFileError, load_catalog_file, recorded_catalog_path

SMALL_CATALOG = {
    "servers": [
        {"server": "notes", "tools": [{"name": "create_note", "description": "Create a note."}]},
        {"server": "weather", "tools": [{"name": "forecast", "description": "Forecast for a city."}]},
    ]
}


def _write(path: Path, catalog: Any, compress: bool = False) -> Path:
    data = json.dumps(catalog).encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def test_the_recorded_catalog_ships_with_the_package(recorded_definitions: list[dict[str, Any]]) -> None:
    assert recorded_catalog_path().is_file()
    assert len(recorded_definitions) > 5000
    assert "github_create_issue" in {tool["name"] for tool in recorded_definitions}


@pytest.mark.parametrize("compress", [False, True])
def test_tools_are_named_server_underscore_tool(tmp_path: Path, compress: bool) -> None:
    tools = load_catalog_file(_write(tmp_path / "catalog", SMALL_CATALOG, compress))
    assert [tool["name"] for tool in tools] == ["notes_create_note", "weather_forecast"]
    assert tools[1]["description"] == "Forecast for a city."


def test_the_definitions_in_the_file_are_copied_not_renamed_in_place(tmp_path: Path) -> None:
    tools = load_catalog_file(_write(tmp_path / "catalog.json", SMALL_CATALOG))
    tools[0]["description"] = "changed"
    assert load_catalog_file(tmp_path / "catalog.json")[0]["description"] == "Create a note."


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not JSON"),
        (gzip.compress(b"[1, 2")[:-4], "not JSON"),
        (b'{"tools": []}', '{"servers"'),
        (b'{"servers": [{"tools": []}]}', "servers[0] has no string `server`"),
        (b'{"servers": [{"server": "x", "tools": {}}]}', "servers[0] (x) has no `tools` list"),
        (
            b'{"servers": [{"server": "x", "tools": [{"description": "?"}]}]}',
            "servers[0].tools[0] has no string",
        ),
    ],
)
def test_a_file_that_is_not_a_catalog_is_refused_with_what_is_wrong(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(CatalogFileError, match=re.escape(message)):
        load_catalog_file(path)


def test_a_missing_file_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(CatalogFileError, match="cannot read it"):
        load_catalog_file(tmp_path / "absent.json.gz")
