"""`toolsearch search`: ranked tools of a catalog file, as a table or as JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tests.embedding.tiny_models import write_model
from tests.search.test_hybrid import _tokenizer
from toolsearch.commands.search import add_search_command, search_catalog_file, verdict
from toolsearch.search import SearchHit

CATALOG = {
    "servers": [
        {
            "server": "notes",
            "tools": [
                {"name": "create_note", "description": "Create a note in a notebook.\nMarkdown is accepted."},
                {"name": "delete_note", "description": "Delete a note."},
            ],
        },
        {"server": "weather", "tools": [{"name": "forecast", "description": "Weather forecast for a city."}]},
    ]
}


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(CATALOG))
    return path


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="toolsearch")
    add_search_command(parser.add_subparsers())
    args = parser.parse_args(["search", *argv])
    return args.handler(args)


def test_search_ranks_the_catalog_file_tools(catalog: Path) -> None:
    results = search_catalog_file(catalog, "weather forecast for Vilnius", limit=5)
    assert [name for name, _ in results] == ["weather_forecast"]
    assert results[0][1] > 0


def test_the_command_prints_a_ranked_table(catalog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--catalog", str(catalog), "create a note") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "search: BM25F (no --model-dir); matched: true"
    assert lines[1].split() == ["#", "tool", "score", "description"]
    assert lines[2].split()[:2] == ["1", "notes_create_note"]
    assert lines[2].endswith("Create a note in a notebook.")


def test_the_command_prints_json_on_request(catalog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--catalog", str(catalog), "--json", "--limit", "1", "note") == 0
    printed = capsys.readouterr()
    (row,) = json.loads(printed.out)
    assert row["name"] in {"notes_create_note", "notes_delete_note"}
    assert set(row) == {"name", "score", "weak", "description"}
    assert printed.err.startswith("search: BM25F (no --model-dir); matched: ")


def test_the_command_searches_the_recorded_catalog_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--json", "--limit", "3", "github_create_issue") == 0
    assert json.loads(capsys.readouterr().out)[0]["name"] == "github_create_issue"


def test_the_command_says_when_nothing_matches(catalog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--catalog", str(catalog), "zzzz") == 0
    assert (
        capsys.readouterr().out.strip()
        == "search: BM25F (no --model-dir); matched: false (no tool matches; the proxy answers so)"
    )


def test_a_weak_best_hit_is_said_as_the_proxy_answers_it() -> None:
    weak = [(SearchHit(0, 0.2, weak=True), {"bm25f": 0.2})]
    assert verdict(weak).startswith("matched: false (the best hit is weak")
    assert verdict([(SearchHit(0, 3.0), {"bm25f": 3.0})]) == "matched: true"


def test_a_bad_catalog_file_is_an_error_message_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.json").write_text("[]")
    assert _run("--catalog", str(tmp_path / "bad.json"), "note") == 2
    assert capsys.readouterr().err.startswith("toolsearch search: error: ")


def test_a_limit_below_one_is_refused(catalog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--catalog", str(catalog), "--limit", "0", "note") == 2
    assert "--limit" in capsys.readouterr().err


def test_explain_shows_what_each_signal_added(catalog: Path, capsys: pytest.CaptureFixture) -> None:
    assert _run("--catalog", str(catalog), "--explain", "delete a note") == 0
    assert "bm25f +" in capsys.readouterr().out.splitlines()[2]


def test_explain_in_json_lists_the_contributions(catalog: Path, capsys: pytest.CaptureFixture) -> None:
    assert _run("--catalog", str(catalog), "--explain", "--json", "forecast") == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["name"] == "weather_forecast"
    assert row["contributions"]["bm25f"] == row["score"]


def test_search_with_a_model_ranks_hybrid_and_explains_it(
    catalog: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    write_model(tmp_path / "model", tokenizer=_tokenizer(["delete", "note", "weather", "forecast", "city"]))
    assert (
        _run("--catalog", str(catalog), "--model-dir", str(tmp_path / "model"), "--explain", "delete note")
        == 0
    )
    assert "lexical +" in capsys.readouterr().out
