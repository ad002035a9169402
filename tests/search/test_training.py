"""The learned ranking and abstention, end to end on a tiny generated model and a generated training
set (no network): training is repeatable, its artifacts are checked before they are trusted, and a
profile is loaded whole."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.embedding.tiny_models import write_model
from tests.search.test_hybrid import _tokenizer
from toolsearch.commands.train import add_train_command
from toolsearch.embedding import Embedder, ModelError, load_model
from toolsearch.search.abstention import FEATURES as ABSTENTION_FEATURES
from toolsearch.search.abstention import Abstainer
from toolsearch.search.build import build_index
from toolsearch.search.dictionaries import Dictionaries, Dictionary, Table
from toolsearch.search.hybrid import HybridIndex, QueryVectors
from toolsearch.search.offline.abstention_training import abstention_threshold, train_abstainer
from toolsearch.search.offline.evaluation import Query
from toolsearch.search.offline.inspection import explain
from toolsearch.search.offline.training import (
    cross_fitted,
    fit_adapter,
    fit_weights,
    server_fold,
    train_ranker,
)
from toolsearch.search.profile import load_profile, write_profile
from toolsearch.search.ranking import (
    FEATURES,
    Ranker,
    ServerGroups,
    candidates,
    feature_names,
    initial_weights,
)
from toolsearch.search.signals import Signals
from toolsearch.tool import Tool, ToolInterner

SERVERS = {
    "files": ["find files in a folder", "delete files in a folder", "create a folder"],
    "tracker": ["create an issue in the tracker", "delete an issue", "find an issue"],
    "weather": ["weather forecast for a city", "find a city"],
    "calendar": ["create a calendar event", "delete a calendar event", "find events in a calendar"],
}
WORDS = sorted({word for texts in SERVERS.values() for text in texts for word in text.split()})


def _tools() -> list[Tool]:
    interner = ToolInterner()
    return [
        interner.intern(
            {"name": f"{server}_{'_'.join(text.split()[:2])}", "description": text, "inputSchema": {}}
        )
        for server, texts in SERVERS.items()
        for text in texts
    ]


def _queries(tools: list[Tool]) -> list[Query]:
    """One request per tool, in the tool's own words and in others'."""
    return [
        Query(f"T{number}", text, "en", frozenset({tool.name}), "unnamed")
        for number, (tool, text) in enumerate(
            (tool, phrasing)
            for tool in tools
            for phrasing in (tool.description, f"please {tool.description} now")
        )
    ]


@pytest.fixture(scope="module")
def model_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    write_model(root / "first", tokenizer=_tokenizer(WORDS), name="tiny-first")
    write_model(root / "second", tokenizer=_tokenizer(WORDS), name="tiny-second")
    write_model(root / "third", tokenizer=_tokenizer(WORDS), name="tiny-third")
    return root


@pytest.fixture(scope="module")
def models(model_root: Path) -> list[Embedder]:
    return [load_model(model_root / "first"), load_model(model_root / "second")]


@pytest.fixture(scope="module")
def index(models: list[Embedder]) -> HybridIndex:
    built = build_index(_tools(), models[0], companions=[QueryVectors(models[1])])
    assert isinstance(built, HybridIndex)
    return built


def _train(index: HybridIndex, models: list[Embedder]) -> Ranker:
    fingerprints = [model.fingerprint for model in models]
    return train_ranker(index, _queries(_tools()), fingerprints=fingerprints, training={"data": "generated"})


UNSERVABLE = [
    Query(f"U{number}", text, "en", frozenset(), "unservable", family)
    for number, (text, family) in enumerate(
        [
            ("order a pizza", "physical"),
            ("carry the boxes downstairs", "physical"),
            ("book a flight to a city", "word-overlap"),
            ("renew the car insurance", "absent"),
            ("share a folder with a friend", "near-miss"),
            ("water the plants", "physical"),
        ]
    )
]


def _train_abstainer(index: HybridIndex, ranker: Ranker) -> Abstainer:
    fitted = cross_fitted(index, _queries(_tools()))
    return train_abstainer(index, ranker, fitted, UNSERVABLE, training={"data": "generated"})[0]


def test_training_is_repeatable_to_the_bit(index: HybridIndex, models: list[Embedder]) -> None:
    first, second = _train(index, models), _train(index, models)
    assert np.array_equal(first.weights, second.weights)
    assert all(np.array_equal(a, b) for a, b in zip(first.adapters, second.adapters, strict=True))


def test_a_trained_ranker_records_its_models_and_data(index: HybridIndex, models: list[Embedder]) -> None:
    ranker = _train(index, models)
    assert ranker.models == tuple(model.fingerprint for model in models)
    assert ranker.training["data"] == "generated"
    assert ranker.training["requests"] == 2 * len(_tools())
    assert [adapter.shape for adapter in ranker.adapters] == [(models[0].dimensions, models[0].dimensions)]


def test_a_saved_ranker_loads_as_it_was(index: HybridIndex, models: list[Embedder], tmp_path: Path) -> None:
    ranker = _train(index, models)
    ranker.save(tmp_path)
    loaded = Ranker.load(tmp_path)
    assert np.allclose(loaded.weights, ranker.weights)
    assert loaded.models == ranker.models


def test_a_ranker_whose_adapter_file_changed_is_refused(
    index: HybridIndex, models: list[Embedder], tmp_path: Path
) -> None:
    _train(index, models).save(tmp_path)
    np.save(tmp_path / "adapter-0.npy", np.zeros((16, 16), np.float32))
    with pytest.raises(ModelError, match=r"adapter-0\.npy: missing, or its sha256"):
        Ranker.load(tmp_path)


def test_a_ranker_whose_weights_were_edited_is_refused(
    index: HybridIndex, models: list[Embedder], tmp_path: Path
) -> None:
    _train(index, models).save(tmp_path)
    document = json.loads((tmp_path / "ranker.json").read_text())
    document["weights"][0] = 10.0
    (tmp_path / "ranker.json").write_text(json.dumps(document))
    with pytest.raises(ModelError, match="do not match its sha256"):
        Ranker.load(tmp_path)


def test_a_ranker_without_a_weight_for_each_feature_is_refused(
    index: HybridIndex, models: list[Embedder], tmp_path: Path
) -> None:
    _train(index, models).save(tmp_path)
    document = json.loads((tmp_path / "ranker.json").read_text())
    document["weights"].append(0.5)
    document["sha256"] = hashlib.sha256(
        json.dumps({k: v for k, v in document.items() if k != "sha256"}, sort_keys=True).encode()
    ).hexdigest()
    (tmp_path / "ranker.json").write_text(json.dumps(document))
    with pytest.raises(ModelError, match="other features than this version reads"):
        Ranker.load(tmp_path)


def test_a_ranker_applies_only_to_the_models_it_was_trained_for(
    index: HybridIndex, models: list[Embedder]
) -> None:
    ranker = _train(index, models)
    assert ranker.fits([model.fingerprint for model in models])
    assert not ranker.fits([models[1].fingerprint, models[0].fingerprint])
    other = HybridIndex(index.lexical, index.semantic, QueryVectors(models[1]), ranker=ranker)
    assert other.ranker is None  # ranks by the fusion


def _profile(root: Path, model_root: Path, ranker: Ranker) -> Path:
    for name in ("first", "second"):
        shutil.copytree(model_root / name, root / name)
    ranker.save(root / "ranker")
    write_profile(root, ["first", "second"], "ranker")
    return root


def test_a_profile_directory_loads_its_models_and_ranker(
    index: HybridIndex, models: list[Embedder], model_root: Path, tmp_path: Path
) -> None:
    profile = load_profile([_profile(tmp_path, model_root, _train(index, models))])
    assert [model.name for model in profile.models] == ["tiny-first", "tiny-second"]
    assert profile.ranker is not None


def test_a_profile_whose_ranker_was_trained_for_other_models_is_refused(
    index: HybridIndex, models: list[Embedder], model_root: Path, tmp_path: Path
) -> None:
    root = _profile(tmp_path, model_root, _train(index, models))
    write_profile(root, ["second", "first"], "ranker")
    with pytest.raises(ModelError, match="trained for other models"):
        load_profile([root])


def _dictionaries() -> Dictionaries:
    return Dictionaries({"lt": Dictionary(Table.of({"byla": "files"}), Table.of({}))})


def test_a_ranker_records_the_dictionaries_it_was_trained_with(
    index: HybridIndex, models: list[Embedder], tmp_path: Path
) -> None:
    translating = HybridIndex(
        index.lexical,
        index.semantic,
        QueryVectors(models[0]),
        companions=index.companions,
        dictionaries=_dictionaries(),
    )
    ranker = _train(translating, models)
    ranker.save(tmp_path)
    loaded = Ranker.load(tmp_path)
    fingerprints = [model.fingerprint for model in models]
    assert loaded.dictionaries == _dictionaries().digest
    assert loaded.fits(fingerprints, _dictionaries())
    assert not loaded.fits(fingerprints)


def test_a_ranker_trained_without_dictionaries_does_not_rank_with_them(
    index: HybridIndex, models: list[Embedder]
) -> None:
    ranker = _train(index, models)
    translating = HybridIndex(
        index.lexical,
        index.semantic,
        QueryVectors(models[0]),
        companions=index.companions,
        ranker=ranker,
        dictionaries=_dictionaries(),
    )
    assert translating.ranker is None  # ranks by the fusion


def test_a_profile_whose_ranker_was_trained_without_its_dictionaries_is_refused(
    index: HybridIndex, models: list[Embedder], model_root: Path, tmp_path: Path
) -> None:
    root = _profile(tmp_path, model_root, _train(index, models))
    _dictionaries().save(root / "dictionaries")
    write_profile(root, ["first", "second"], "ranker", "dictionaries")
    with pytest.raises(ModelError, match="trained for other dictionaries"):
        load_profile([root])


def test_the_learned_ranking_serves_searches(index: HybridIndex, models: list[Embedder]) -> None:
    ranker = _train(index, models)
    learned = HybridIndex(
        index.lexical, index.semantic, QueryVectors(models[0]), companions=index.companions, ranker=ranker
    )
    tools = _tools()
    hits = learned.search("delete a calendar event", 3)
    assert tools[hits[0].position].name == "calendar_delete_a"


def test_fitted_weights_rank_first_what_the_training_requests_want_first() -> None:
    features = np.zeros((3, len(FEATURES)))
    features[:, 0] = [1.0, 0.0, 0.5]  # the fusion prefers candidate 0
    features[:, 1] = [0.0, 1.0, 0.0]  # the lexical feature marks candidate 1, the gold one
    weights = fit_weights([(features, np.array([False, True, False]))] * 20, l2=0.01)
    assert int(np.argmax(features @ weights)) == 1


def test_without_data_pulling_it_the_ranking_stays_the_fusion() -> None:
    rows = [(np.zeros((3, len(FEATURES))), np.array([True, False, False]))]
    assert np.allclose(fit_weights(rows), initial_weights())


def _tools_and_gold(generator: np.random.Generator) -> tuple[np.ndarray, list[np.ndarray]]:
    """30 unit tool vectors in 8 dimensions, and the gold tool of each of 60 requests."""
    tools = generator.normal(size=(30, 8)).astype(np.float32)
    tools /= np.linalg.norm(tools, axis=1, keepdims=True)
    return tools, [np.array([number % 30]) for number in range(60)]


def test_an_adapter_brings_each_request_nearer_the_tools_that_serve_it() -> None:
    generator = np.random.default_rng(0)
    tools, gold = _tools_and_gold(generator)
    # Requests that point at their tool only faintly, through noise.
    vectors = 0.3 * tools[[g[0] for g in gold]] + generator.normal(size=(60, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)

    def hits(adapter: np.ndarray) -> int:
        moved = vectors + vectors @ adapter
        return int(sum((moved[row] @ tools.T).argmax() == g[0] for row, g in enumerate(gold)))

    assert hits(fit_adapter(vectors, tools, gold)) > hits(np.zeros((8, 8), np.float32))


def test_an_adapter_learns_little_from_requests_its_prior_already_ranks_right() -> None:
    generator = np.random.default_rng(0)
    tools, gold = _tools_and_gold(generator)
    vectors = generator.normal(size=(60, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    prior = np.zeros((60, 30), np.float32)
    prior[np.arange(60), [g[0] for g in gold]] = 50.0  # the fusion puts every gold tool far ahead

    unaided = np.abs(fit_adapter(vectors, tools, gold)).max()
    assert np.abs(fit_adapter(vectors, tools, gold, prior)).max() < unaided / 10


def test_an_adapter_starts_from_no_change() -> None:
    vectors = np.eye(4, dtype=np.float32)
    adapter = fit_adapter(vectors, vectors, [np.array([row]) for row in range(4)])
    assert np.abs(adapter).max() < 0.2  # already right: it barely moves


def test_requests_of_one_server_share_a_fold() -> None:
    folds = {server_fold([f"github_{tool}"]) for tool in ("create_issue", "list_pulls", "get_file")}
    assert len(folds) == 1


def test_server_groups_give_each_tool_its_servers_best_value() -> None:
    groups = ServerGroups(["a", "b", "a", "", ""])
    assert groups.best(np.array([1.0, 5.0, 3.0, 2.0, 4.0])).tolist() == [3.0, 5.0, 3.0, 2.0, 4.0]


def test_a_learned_hits_explanation_adds_up_to_its_score(index: HybridIndex, models: list[Embedder]) -> None:
    ranker = _train(index, models)
    learned = HybridIndex(
        index.lexical, index.semantic, QueryVectors(models[0]), companions=index.companions, ranker=ranker
    )
    explained = explain(learned, "find a city", 3)
    assert len(explained) == 3
    for hit, parts in explained:
        assert set(parts) == {*FEATURES, "best_sentence", "named"}
        assert sum(value for name, value in parts.items() if name != "named") == pytest.approx(hit.score)


def test_a_ranker_reads_a_feature_of_each_further_companion(model_root: Path, tmp_path: Path) -> None:
    models = [load_model(model_root / name) for name in ("first", "second", "third")]
    three = build_index(_tools(), models[0], companions=[QueryVectors(model) for model in models[1:]])
    assert isinstance(three, HybridIndex)
    ranker = _train(three, models)
    assert ranker.features == (*FEATURES, "companion_2") == feature_names(2)
    assert len(ranker.weights) == len(ranker.features)
    ranker.save(tmp_path)
    assert Ranker.load(tmp_path).features == ranker.features
    learned = HybridIndex(
        three.lexical, three.semantic, QueryVectors(models[0]), companions=three.companions, ranker=ranker
    )
    explained = explain(learned, "find a city", 3)
    assert len(explained) == 3
    for hit, parts in explained:
        assert set(parts) == {*ranker.features, "best_sentence", "named"}
        assert sum(value for name, value in parts.items() if name != "named") == pytest.approx(hit.score)


def test_a_companion_that_sat_out_the_query_brings_no_candidates() -> None:
    tools = 200
    rising = np.linspace(0.0, 1.0, tools)  # the first tools are the worst by every signal
    signals = Signals(
        fusion=rising,
        lexical=rising,
        server_lexical=np.zeros(tools),
        dense=rising,
        companions=(np.zeros(tools),),
        named=np.array([], np.int64),
        english=True,
        vector=np.zeros(4),
    )
    assert candidates(signals).min() >= tools - 50


def test_a_long_requests_explanation_adds_its_best_sentence_to_its_features(
    index: HybridIndex, models: list[Embedder]
) -> None:
    ranker = _train(index, models)
    learned = HybridIndex(
        index.lexical, index.semantic, QueryVectors(models[0]), companions=index.companions, ranker=ranker
    )
    request = " ".join(["please find files in a folder now."] * 3 + ["create a calendar event now."] * 3)
    explained = explain(learned, request, 3)
    assert any(parts["best_sentence"] != 0.0 for _, parts in explained)
    for hit, parts in explained:
        assert sum(value for name, value in parts.items() if name != "named") == pytest.approx(hit.score)


def test_abstention_training_is_repeatable_to_the_bit(index: HybridIndex, models: list[Embedder]) -> None:
    ranker = _train(index, models)
    first, second = _train_abstainer(index, ranker), _train_abstainer(index, ranker)
    assert np.array_equal(first.weights, second.weights)
    assert (first.bias, first.threshold) == (second.bias, second.threshold)


def test_an_abstainer_is_trained_for_its_ranker_and_records_what_it_measured(
    index: HybridIndex, models: list[Embedder]
) -> None:
    ranker = _train(index, models)
    abstainer = _train_abstainer(index, ranker)
    assert abstainer.fits([model.fingerprint for model in models], None, ranker.digest)
    assert len(abstainer.weights) == len(ABSTENTION_FEATURES)
    assert abstainer.training["unservable"] == len(UNSERVABLE)
    assert 0.0 <= abstainer.training["held_out_wrongly_abstained"] <= 0.1


def test_a_ranker_digest_is_the_same_saved_and_loaded(
    index: HybridIndex, models: list[Embedder], tmp_path: Path
) -> None:
    ranker = _train(index, models)
    ranker.save(tmp_path)
    assert Ranker.load(tmp_path).digest == ranker.digest


def test_the_threshold_abstains_on_at_most_the_allowed_share_of_servable_requests() -> None:
    servable = np.linspace(0.0, 1.0, 200)
    threshold = abstention_threshold(servable, wrong=0.03)
    assert (servable > threshold).mean() <= 0.03


def _learned(index: HybridIndex, models: list[Embedder], ranker: Ranker, abstainer: Abstainer) -> HybridIndex:
    return HybridIndex(
        index.lexical,
        index.semantic,
        QueryVectors(models[0]),
        companions=index.companions,
        ranker=ranker,
        abstainer=abstainer,
    )


def _always(abstainer: Abstainer) -> Abstainer:
    return dataclasses.replace(abstainer, threshold=-1.0)


def test_search_abstains_as_its_abstainer_decides(index: HybridIndex, models: list[Embedder]) -> None:
    ranker = _train(index, models)
    abstainer = _train_abstainer(index, ranker)
    assert all(
        hit.weak for hit in _learned(index, models, ranker, _always(abstainer)).search("find a city", 3)
    )
    never = dataclasses.replace(abstainer, threshold=1.0)
    assert not any(hit.weak for hit in _learned(index, models, ranker, never).search("find a city", 3))


def test_a_request_that_names_a_tool_is_never_abstained_on(
    index: HybridIndex, models: list[Embedder]
) -> None:
    ranker = _train(index, models)
    learned = _learned(index, models, ranker, _always(_train_abstainer(index, ranker)))
    assert not learned.search("weather_weather_forecast", 3)[0].weak


def test_an_abstainer_trained_for_another_ranker_is_not_used(
    index: HybridIndex, models: list[Embedder]
) -> None:
    ranker = _train(index, models)
    abstainer = _always(_train_abstainer(index, ranker))
    other = dataclasses.replace(ranker, weights=ranker.weights + 0.5)
    learned = _learned(index, models, other, abstainer)
    assert learned.abstainer is None
    assert not any(hit.weak for hit in learned.search("find a city", 3))  # the tiny model has no thresholds


def test_a_profile_whose_abstainer_was_trained_for_another_ranker_is_refused(
    index: HybridIndex, models: list[Embedder], model_root: Path, tmp_path: Path
) -> None:
    ranker = _train(index, models)
    root = _profile(tmp_path, model_root, ranker)
    dataclasses.replace(_train_abstainer(index, ranker), ranker="another").save(root / "abstention")
    write_profile(root, ["first", "second"], "ranker", None, "abstention")
    with pytest.raises(ModelError, match="trained for another ranker"):
        load_profile([root])


def test_a_profile_loads_its_abstainer(
    index: HybridIndex, models: list[Embedder], model_root: Path, tmp_path: Path
) -> None:
    ranker = _train(index, models)
    root = _profile(tmp_path, model_root, ranker)
    _train_abstainer(index, ranker).save(root / "abstention")
    write_profile(root, ["first", "second"], "ranker", None, "abstention")
    assert load_profile([root]).abstainer is not None


def _write_jsonl(path: Path, queries: list[Query]) -> Path:
    rows = [
        {
            "id": q.id,
            "query": q.text,
            "lang": q.lang,
            "gold": sorted(q.gold),
            "kind": q.kind,
            "family": q.family,
        }
        for q in queries
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_the_train_command_trains_an_abstention_model_for_the_profiles_ranker_and_names_it(
    index: HybridIndex, models: list[Embedder], model_root: Path, tmp_path: Path
) -> None:
    ranker = _train(index, models)
    root = _profile(tmp_path / "profile", model_root, ranker)
    servers = [
        {
            "server": server,
            "tools": [{"name": "_".join(text.split()[:2]), "description": text, "inputSchema": {}}],
        }
        for server, texts in SERVERS.items()
        for text in texts
    ]
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"servers": servers}))
    parser = argparse.ArgumentParser(prog="toolsearch")
    add_train_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        [
            "train",
            "--model-dir",
            str(root),
            "--abstention",
            "--catalog",
            str(catalog),
            "--queries",
            str(_write_jsonl(tmp_path / "train.jsonl", _queries(_tools()))),
            "--unservable",
            str(_write_jsonl(tmp_path / "unservable.jsonl", UNSERVABLE)),
        ]
    )
    assert args.handler(args) == 0
    profile = load_profile([root])
    assert profile.abstainer is not None
    assert profile.ranker is not None and profile.abstainer.ranker == profile.ranker.digest
