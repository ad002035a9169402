"""A tool near the centre of its catalog but near no tool in it loses dense similarity; the tools with
neighbours keep theirs."""

from pathlib import Path

import numpy as np

from tests.embedding.tiny_models import WORDS, word_tokenizer, write_model
from toolsearch.embedding import load_model
from toolsearch.search.isolation import (
    MIN_TOOLS,
    LanguageShares,
    Neighbourhoods,
    generality,
    isolation_penalty,
    neighbour_similarity,
    stored_neighbourhoods,
)
from toolsearch.search.semantic import SemanticIndex
from toolsearch.search.vectors import MemoryVectorCache
from toolsearch.tool import Tool, ToolInterner


def _clustered(jobs: int = 30, per_job: int = 8, dimensions: int = 64, seed: int = 1) -> np.ndarray:
    """Unit rows in `jobs` tight groups: the same job written by several servers."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(jobs, dimensions))
    rows = np.repeat(centres, per_job, axis=0) + 0.2 * rng.normal(size=(jobs * per_job, dimensions))
    unit: np.ndarray = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _with_outlier(rows: np.ndarray) -> np.ndarray:
    """`rows` and one more row between every group: the mean of them all (a text of every job)."""
    between = rows.mean(axis=0)
    return np.vstack([rows, between / np.linalg.norm(between)]).astype(np.float32)


def test_a_tool_is_not_its_own_neighbour() -> None:
    rows = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    assert neighbour_similarity(rows, 1).tolist() == [1.0, 1.0, 0.0]


def test_neighbour_similarity_is_the_mean_cosine_to_the_nearest_other_tools() -> None:
    rows = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 2.0]], dtype=np.float32)
    assert np.allclose(neighbour_similarity(rows, 2), [0.3, 0.7, 0.4])


def test_a_text_at_the_catalogs_centre_is_more_general_than_every_tool_with_neighbours() -> None:
    value = generality(_with_outlier(_clustered()))
    assert value[-1] > value[:-1].max()


def test_a_tool_between_every_job_loses_similarity_and_the_tools_with_neighbours_keep_theirs() -> None:
    penalty = isolation_penalty(_with_outlier(_clustered()), spreads=3.0, weight=1.0)
    assert penalty[-1] > 0
    assert (penalty[:-1] == 0).mean() > 0.97


def test_the_penalty_is_the_weighted_distance_past_the_catalogs_usual_range() -> None:
    rows = _with_outlier(_clustered())
    once = isolation_penalty(rows, spreads=3.0, weight=1.0)
    assert np.allclose(isolation_penalty(rows, spreads=3.0, weight=2.5), 2.5 * once)
    assert isolation_penalty(rows, spreads=6.0, weight=1.0)[-1] < once[-1]


def test_a_small_catalog_is_not_judged() -> None:
    rows = _with_outlier(_clustered(jobs=5, per_job=4))
    assert not isolation_penalty(rows, min_tools=100).any()


def test_dense_similarity_loses_the_penalty() -> None:
    rows = _with_outlier(_clustered())
    index = SemanticIndex(rows, rows, [], np.zeros((0, rows.shape[1]), dtype=np.float32))
    query = rows[-1]
    assert np.allclose(index.similarities(query), rows @ query - isolation_penalty(rows), atol=1e-5)
    assert index.penalty[-1] > 0


def _shares(languages: list[str], servers: list[str]) -> LanguageShares:
    shares = LanguageShares.of(np.array(languages, dtype=object), servers)
    assert shares is not None
    return shares


def test_a_tool_alone_in_its_language_gains_no_dense_evidence_and_a_poor_match_stays_poor() -> None:
    similarities = np.array([[0.9, 0.5, 0.1, 0.8], [0.2, 0.9, 0.3, 0.1]], dtype=np.float32)
    judged = _shares(["de", "", "ja", ""], ["a", "b", "c", "d"]).judged(similarities)
    means = similarities.mean(axis=1)
    assert np.allclose(judged[:, 0], [means[0], 0.2])
    assert np.allclose(judged[:, 2], [0.1, 0.3])
    assert np.array_equal(judged[:, [1, 3]], similarities[:, [1, 3]])


def test_a_tool_loses_what_the_tools_of_its_language_on_other_servers_gain_over_the_catalog() -> None:
    # Two English tools, a German server of two tools (bahn) and one of one (wetter).
    similarities = np.array([0.2, 0.3, 0.9, 0.5, 0.6], dtype=np.float32)
    judged = _shares(["", "", "de", "de", "de"], ["gh", "gh", "bahn", "bahn", "wetter"]).judged(similarities)
    mean = similarities.mean()
    assert np.allclose(judged[[2, 3]], similarities[[2, 3]] - (0.6 - mean))
    assert np.isclose(judged[4], 0.6 - ((0.9 + 0.5) / 2 - mean))
    assert np.array_equal(judged[:2], similarities[:2])
    assert judged[2] > mean > judged[3]  # the best of its language keeps what sets it apart


def test_a_language_of_one_server_is_judged_beside_all_its_tools_and_a_gain_below_the_mean_adds_nothing() -> (
    None
):
    similarities = np.array([[0.6, 0.2, 0.8, 0.4], [0.9, 0.8, 0.1, 0.2]], dtype=np.float32)
    judged = _shares(["", "", "fr", "fr"], ["gh", "gh", "sirene", "sirene"]).judged(similarities)
    means = similarities.mean(axis=1)
    assert np.allclose(judged[0, 2:], similarities[0, 2:] - (0.6 - means[0]))
    assert np.array_equal(judged[1], similarities[1])  # French is below the mean there: no gain to take


def test_a_catalog_in_one_language_has_no_shares_to_take() -> None:
    assert LanguageShares.of(np.array(["", ""], dtype=object), ["a", "b"]) is None


_GERMAN_REQUESTS = (
    "Dieses Werkzeug kann: Zeig mir die offenen Tickets in meinem Projekt. Erstelle eine neue Seite in "
    "der Datenbank und schicke die Rechnung an den Kunden. Wie wird das Wetter morgen in der Stadt, und "
    "welche Züge fahren heute Abend noch nach Berlin?"
)


def test_a_tool_written_in_another_language_than_its_catalog_is_known_to_the_dense_index(
    slice_tools: list[Tool], tmp_path: Path
) -> None:
    write_model(tmp_path / "model")
    foreign = ToolInterner().intern({"name": "acme_helper", "description": _GERMAN_REQUESTS})
    tools = [*slice_tools, foreign]
    index = SemanticIndex.build(tools, load_model(tmp_path / "model"), MemoryVectorCache(), words=False)
    assert index.languages is not None and index.languages.tools.tolist() == [len(slice_tools)]
    query = index.vectors[-1]
    unbounded = query @ index.blended.T - index.penalty
    assert np.isclose(index.similarities(query)[-1], min(unbounded[-1], unbounded.mean()))


_GERMAN_MARKET = {
    "bahn_verbindungen": "Sucht die Zugverbindungen zwischen zwei Bahnhöfen an einem Tag und zeigt für "
    "jede Verbindung die Abfahrt, die Ankunft, die Umstiege, die Gleise und die Preise an. Die schnellsten "
    "Verbindungen mit allen Zügen des Fernverkehrs stehen oben in der Liste.",
    "bahn_abfahrten": "Zeigt die nächsten Abfahrten eines Bahnhofs mit dem Gleis, dem Ziel und der "
    "Verspätung jedes Zuges an. Es kennt den Fernverkehr und den Nahverkehr der ganzen Region und meldet "
    "auch Ausfälle und geänderte Gleise.",
    "wetter_vorhersage": "Liefert die Wettervorhersage für eine Stadt mit der Temperatur, dem Regen und "
    "dem Wind für die nächsten sieben Tage. Es warnt vor Sturm, Gewitter und Hitze und nennt die Zeiten "
    "von Sonnenaufgang und Sonnenuntergang.",
    "steuer_umsatzsteuer": "Berechnet die Umsatzsteuer einer Rechnung nach deutschem Recht mit dem "
    "richtigen Steuersatz für jede Position. Es erstellt aus allen Rechnungen eines Monats die "
    "Voranmeldung für das Finanzamt und prüft die Nummern der Kunden.",
}


def test_a_tool_of_a_market_server_in_another_language_keeps_its_dense_evidence(
    slice_tools: list[Tool], tmp_path: Path
) -> None:
    # A model that reads the German words (each its own random direction), so that each German
    # tool is close to requests about its own job and not to the others'.
    german = sorted({word for text in _GERMAN_MARKET.values() for word in text.split()})
    write_model(tmp_path / "model", tokenizer=word_tokenizer([*WORDS, *german]))
    interner = ToolInterner()
    market = [interner.intern({"name": name, "description": text}) for name, text in _GERMAN_MARKET.items()]
    tools = [*slice_tools, *market]
    index = SemanticIndex.build(tools, load_model(tmp_path / "model"), MemoryVectorCache(), words=False)
    assert index.languages is not None
    assert index.languages.tools.tolist() == list(range(len(slice_tools), len(tools)))
    trains = len(slice_tools)
    query = index.vectors[trains]  # a request that says what the first Bahn tool does
    unbounded = query @ index.blended.T - index.penalty
    judged = index.similarities(query)
    others = unbounded[len(slice_tools) + 2 :]  # the German tools of the other servers
    assert np.isclose(judged[trains], unbounded[trains] - max(others.mean() - unbounded.mean(), 0.0))
    assert judged[trains] > unbounded.mean()  # unlike a tool alone in its language: evidence kept
    assert int(np.argmax(judged)) == trains


def _ids(rows: range) -> list[str]:
    return [f"tool-{row}" for row in rows]


def test_a_catalog_sharing_tools_with_earlier_ones_has_the_nearness_it_would_have_alone() -> None:
    rows = _clustered(jobs=40, per_job=10)
    known = Neighbourhoods()
    for catalog in (range(0, 300), range(1, 301), range(5, 290), range(0, 400), range(100, 200)):
        nearness = known.similarity("model", _ids(catalog), rows[catalog.start : catalog.stop])
        assert np.array_equal(nearness, neighbour_similarity(rows[catalog.start : catalog.stop]))


def test_a_tool_leaving_a_catalog_leaves_the_neighbourhoods_it_was_in() -> None:
    rows = _clustered(jobs=20, per_job=6)
    known = Neighbourhoods()
    known.similarity("model", _ids(range(120)), rows)
    without_first_job = range(6, 120)
    assert np.array_equal(
        known.similarity("model", _ids(without_first_job), rows[6:]), neighbour_similarity(rows[6:])
    )


def test_each_vector_space_has_its_own_neighbourhoods() -> None:
    rows, other = _clustered(seed=1), _clustered(seed=2)
    known = Neighbourhoods()
    known.similarity("first", _ids(range(len(rows))), rows)
    assert np.array_equal(
        known.similarity("second", _ids(range(len(other))), other), neighbour_similarity(other)
    )


def test_a_catalog_holding_a_tool_twice_is_judged_as_a_whole() -> None:
    rows = np.vstack([_clustered(), _clustered()[:1]])
    ids = [*_ids(range(len(rows) - 1)), "tool-0"]
    assert np.array_equal(Neighbourhoods().similarity("model", ids, rows), neighbour_similarity(rows))


def test_a_new_process_loads_a_catalogs_neighbourhoods_from_the_store_it_was_computed_into() -> None:
    rows, ids, store = _clustered(), _ids(range(240)), MemoryVectorCache()
    computed = Neighbourhoods().similarity("model", ids, rows, store=store)
    # Read, not computed: the rows given are not even looked at.
    loaded = Neighbourhoods().similarity("model", ids, np.zeros_like(rows), store=store)
    assert np.array_equal(loaded, computed)
    assert np.array_equal(computed, neighbour_similarity(rows))


def test_loaded_neighbourhoods_are_reused_by_the_next_catalog_as_computed_ones_are() -> None:
    rows, store = _clustered(jobs=40, per_job=10), MemoryVectorCache()
    Neighbourhoods().similarity("model", _ids(range(300)), rows[:300], store=store)
    restarted = Neighbourhoods()
    restarted.similarity("model", _ids(range(300)), rows[:300], store=store)
    assert np.array_equal(
        restarted.similarity("model", _ids(range(1, 301)), rows[1:301]), neighbour_similarity(rows[1:301])
    )


def test_a_changed_tool_or_space_or_order_is_another_stored_entry() -> None:
    ids = _ids(range(120))
    stored = {
        stored_neighbourhoods("model", ids),
        stored_neighbourhoods("model", [*ids[:-1], "tool-changed"]),
        stored_neighbourhoods("other model", ids),
        stored_neighbourhoods("model", ids[::-1]),
        stored_neighbourhoods("model", ids, neighbours=5),
    }
    assert len(stored) == 5


def test_a_damaged_stored_entry_is_computed_again_and_replaced() -> None:
    rows, ids, store = _clustered(), _ids(range(240)), MemoryVectorCache()
    key, catalog = stored_neighbourhoods("model", ids)
    store.put_many(key, {catalog: np.full(2 * len(ids) * 10, 7.0, dtype=np.float32)})
    expected = neighbour_similarity(rows)
    assert np.array_equal(Neighbourhoods().similarity("model", ids, rows, store=store), expected)
    zeros = np.zeros_like(rows)
    assert np.array_equal(Neighbourhoods().similarity("model", ids, zeros, store=store), expected)


def test_an_index_built_after_another_bounds_its_tools_as_one_built_alone(
    slice_tools: list[Tool], tmp_path: Path
) -> None:
    write_model(tmp_path / "model")
    model, cache, known = load_model(tmp_path / "model"), MemoryVectorCache(), Neighbourhoods()
    SemanticIndex.build(slice_tools[1:], model, cache, words=False, neighbourhoods=known)
    after = SemanticIndex.build(slice_tools, model, cache, words=False, neighbourhoods=known)
    alone = SemanticIndex.build(slice_tools, model, cache, words=False)
    assert len(slice_tools) >= MIN_TOOLS
    assert np.array_equal(after.penalty, alone.penalty)
