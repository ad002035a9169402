"""The quality harness's arithmetic, on a hand-made case whose figures are worked out by hand."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tests.embedding.tiny_models import write_model
from toolsearch.commands.eval import add_eval_command
from toolsearch.search import SearchHit
from toolsearch.search.offline.evaluation import (
    Query,
    QueryFileError,
    load_queries,
    outcome_rows,
    run_queries,
    summarize,
)

NAMES = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"]
RANKINGS = {
    # gold first: a hit at 1, 5 and 10, reciprocal rank 1
    "first": [SearchHit(0, 9.0), SearchHit(1, 8.0)],
    # gold (d) third: a hit at 5 and 10, reciprocal rank 1/3
    "third": [SearchHit(1, 9.0), SearchHit(2, 8.0), SearchHit(3, 7.0)],
    # gold (k) eleventh is past the depth searched: no hit, no reciprocal rank
    "missed": [SearchHit(position, 1.0) for position in range(10)],
    # servable, found second, but the search abstained: a wrong abstention
    "doubted": [SearchHit(4, 0.2, weak=True), SearchHit(5, 0.1, weak=True)],
    # unservable: one abstained (weak), one not
    "unservable-weak": [SearchHit(6, 0.1, weak=True)],
    "unservable-sure": [SearchHit(7, 5.0)],
}
QUERIES = [
    Query("1", "first", "en", frozenset({"a"}), "named"),
    Query("2", "third", "en", frozenset({"d", "z"}), "unnamed"),
    Query("3", "missed", "lt", frozenset({"k"}), "unnamed"),
    Query("4", "doubted", "lt", frozenset({"f"}), "paraphrase"),
    Query("5", "unservable-weak", "en", frozenset(), "unservable"),
    Query("6", "unservable-sure", "de", frozenset(), "unservable"),
]


def _search(query: str, limit: int) -> list[SearchHit]:
    return RANKINGS[query][:limit]


@pytest.fixture
def report() -> dict:
    return summarize(run_queries(_search, NAMES, QUERIES))


def test_recall_counts_servable_queries_with_a_gold_tool_in_the_top_k(report: dict) -> None:
    overall = report["overall"]
    assert overall["queries"] == 4
    assert (overall["recall@1"], overall["recall@5"], overall["recall@10"]) == (0.25, 0.75, 0.75)


def test_mrr_adds_reciprocal_ranks_of_the_first_gold_tool(report: dict) -> None:
    assert report["overall"]["mrr@10"] == pytest.approx((1 + 1 / 3 + 0 + 1 / 2) / 4)


def test_languages_are_reported_apart_and_only_for_servable_queries(report: dict) -> None:
    assert set(report["by_lang"]) == {"en", "lt"}
    assert report["by_lang"]["en"]["recall@5"] == 1.0
    assert report["by_lang"]["lt"]["recall@5"] == 0.5
    assert report["by_lang"]["lt"]["mrr@10"] == pytest.approx(0.25)


def test_kinds_are_reported_apart_and_only_for_servable_queries(report: dict) -> None:
    assert set(report["by_kind"]) == {"named", "unnamed", "paraphrase"}
    assert report["by_kind"]["unnamed"]["queries"] == 2
    assert report["by_kind"]["unnamed"]["recall@5"] == 0.5
    assert report["by_kind"]["paraphrase"]["mrr@10"] == pytest.approx(0.5)


def test_each_query_outcome_names_its_first_gold_rank_and_the_top_tools() -> None:
    rows = outcome_rows(run_queries(_search, NAMES, QUERIES))
    assert rows[1] == {"id": "2", "rank": 2, "top": ["b", "c", "d"], "abstained": False}
    assert rows[2]["rank"] is None
    assert len(rows[2]["top"]) == 10
    assert rows[3]["abstained"] is True


def test_abstention_is_right_on_unservable_queries_and_wrong_on_servable_ones(report: dict) -> None:
    overall = {key: value for key, value in report["abstention"].items() if not key.startswith("by_")}
    assert overall == {
        "unservable_queries": 2,
        "abstained_on_unservable": 0.5,
        "servable_queries": 4,
        "wrongly_abstained_on_servable": 0.25,
    }


def test_abstention_is_reported_by_language(report: dict) -> None:
    by_lang = report["abstention"]["by_lang"]
    assert by_lang["en"] == {
        "unservable_queries": 1,
        "abstained_on_unservable": 1.0,
        "servable_queries": 2,
        "wrongly_abstained_on_servable": 0.0,
    }
    assert by_lang["lt"]["wrongly_abstained_on_servable"] == 0.5
    assert by_lang["de"]["abstained_on_unservable"] == 0.0


def test_a_request_and_its_translation_agree_when_both_get_the_same_verdict() -> None:
    queries = [
        Query("5", "unservable-weak", "en", frozenset(), "unservable", pair="5"),
        Query("5-de", "unservable-sure", "de", frozenset(), "unservable", pair="5"),
        Query("1", "first", "en", frozenset({"a"}), "named", pair="1"),
        Query("1-lt", "third", "lt", frozenset({"a"}), "named", pair="1"),
    ]
    abstention = summarize(run_queries(_search, NAMES, queries))["abstention"]
    assert (abstention["translated_requests"], abstention["same_verdict"]) == (2, 0.5)


def test_abstention_on_unservable_requests_is_reported_by_their_family() -> None:
    queries = [
        Query("5", "unservable-weak", "en", frozenset(), "unservable", "physical"),
        Query("6", "unservable-sure", "en", frozenset(), "unservable", "absent"),
    ]
    by_family = summarize(run_queries(_search, NAMES, queries))["abstention"]["by_family"]
    assert by_family["physical"]["abstained_on_unservable"] == 1.0
    assert by_family["absent"]["abstained_on_unservable"] == 0.0


def test_no_hits_at_all_counts_as_abstaining() -> None:
    outcomes = run_queries(lambda query, limit: [], NAMES, [Query("1", "x", "en", frozenset())])
    assert summarize(outcomes)["abstention"]["abstained_on_unservable"] == 1.0


def test_latency_percentiles_are_reported_in_milliseconds(report: dict) -> None:
    assert set(report["latency_ms"]) == {"p50", "p99"}
    assert 0 <= report["latency_ms"]["p50"] <= report["latency_ms"]["p99"]


def test_query_files_are_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    rows = [{"id": "A1", "query": "q", "lang": "en", "gold": ["x_y"], "kind": "named"}, {"query": "r"}]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n")
    assert load_queries(path) == [
        Query("A1", "q", "en", frozenset({"x_y"}), "named"),
        Query("2", "r", "unknown", frozenset()),
    ]


def test_a_malformed_query_line_is_named_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_text('{"query": "fine"}\n{"gold": []}\n')
    with pytest.raises(QueryFileError, match=r"queries.jsonl:2: expected"):
        load_queries(path)


def _run_eval(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_eval_command(parser.add_subparsers())
    args = parser.parse_args(["eval", *argv])
    return args.handler(args)


def _write_case(directory: Path) -> tuple[Path, Path]:
    catalog = directory / "catalog.json"
    tools = [
        {"name": "create_issue", "description": "Create an issue in a repository.", "inputSchema": {}},
        {"name": "list_files", "description": "List the files of a folder.", "inputSchema": {}},
    ]
    catalog.write_text(json.dumps({"servers": [{"server": "demo", "tools": tools}]}))
    queries = directory / "queries.jsonl"
    rows = [
        {"query": "open a new issue", "lang": "en", "gold": ["demo_create_issue"]},
        {"query": "what files are in the folder", "lang": "en", "gold": ["demo_list_files"]},
    ]
    queries.write_text("\n".join(json.dumps(row) for row in rows))
    return catalog, queries


def test_the_eval_command_prints_and_writes_the_report(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    catalog, queries = _write_case(tmp_path)
    out = tmp_path / "report.json"
    assert _run_eval("--catalog", str(catalog), "--queries", str(queries), "--json", str(out)) == 0
    report = json.loads(out.read_text())
    assert {"overall", "by_lang", "by_kind", "abstention", "latency_ms", "queries"} <= set(report)
    assert report["overall"]["recall@1"] == 1.0
    assert [row["rank"] for row in report["queries"]] == [0, 0]
    assert "recall@5" in capsys.readouterr().out


def test_the_eval_command_ranks_with_a_model_and_its_companions(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    catalog, queries = _write_case(tmp_path)
    write_model(tmp_path / "first", name="tiny-first")
    write_model(tmp_path / "second", name="tiny-second")
    models = ["--model-dir", str(tmp_path / "first"), "--model-dir", str(tmp_path / "second")]
    assert _run_eval("--catalog", str(catalog), "--queries", str(queries), *models) == 0
    assert "hybrid, tiny-first, tiny-second: 2 queries over 2 tools" in capsys.readouterr().out


def test_the_eval_command_needs_a_model_for_dense_ranking(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"query": "x", "gold": []}\n')
    assert _run_eval("--queries", str(queries), "--mode", "dense") == 2
    assert "--mode dense needs --model-dir" in capsys.readouterr().err


def test_the_eval_command_names_a_missing_query_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert _run_eval("--queries", str(tmp_path / "absent.jsonl")) == 2
    assert "absent.jsonl: cannot read it" in capsys.readouterr().err
