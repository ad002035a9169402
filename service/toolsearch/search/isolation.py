"""Isolation: a bound on what a tool that describes no one job gains in dense search.

A text that describes no one job (frequent words stuffed together, claims of every capability, a
bag of requests, a name of the most requested verbs) embeds near the centre of the catalog, where
every request's vector has some similarity, yet near no tool in particular: real tools have
neighbours (the same job on other servers, the other tools of their server). Its `generality` is
its cosine to the catalog's mean direction less its mean cosine to its `NEIGHBOURS` nearest tools.
Each model's similarities lose, per tool, `WEIGHT` times how far its generality is past the
catalog's median by more than `SPREADS` robust spreads (median absolute deviations, which the few
hostile tools of a catalog cannot move). Most real tools are within that range and lose nothing;
what a text gains from being generic is bounded by how generic it is. It is judged against the
catalog the tool sits in, with each model's own vectors, so it needs no reference data and no
retraining: the ranker reads the penalised similarities as it reads any.

The constants were chosen on the development attack families only (docs/security.md).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse

from toolsearch.search.vectors import VectorCache

NEIGHBOURS = 10
"""How many nearest tools a tool's neighbourhood holds."""
SPREADS = 4.0
"""How many median absolute deviations past the catalog's median distance are tolerated."""
WEIGHT = 6.0
"""Cosine lost per cosine of distance past that range."""
MIN_TOOLS = 100
"""A smaller catalog has too few tools to say what a usual neighbourhood is: no penalty."""
_BLOCK_ROWS = 512
"""Tools compared with the whole catalog at once: bounds the similarity block's memory."""
_SCREEN_SPARE = 6
"""Candidates beyond the nearest kept by the float32 screen, measured exactly."""
_SCREEN_ERROR = 1e-4
"""Twice more than a float32 cosine of unit rows is off by: a candidate further below the nearest
than this is no neighbour."""
STORED_VERSION = 1
"""Part of a stored catalog's neighbourhoods' key: change it whenever what they hold changes."""


def neighbour_similarity(vectors: np.ndarray, neighbours: int = NEIGHBOURS) -> np.ndarray:
    """Each row's mean cosine to its `neighbours` most similar other rows (rows need not be
    normalised; a zero row is similar to none)."""
    count = len(vectors)
    neighbours = min(neighbours, count - 1)
    if neighbours <= 0:
        return np.zeros(count, dtype=np.float32)
    _, cosines = _nearest_rows(_unit(vectors), np.arange(count), neighbours)
    means: np.ndarray = cosines.mean(axis=1)
    return means


def _unit(vectors: np.ndarray) -> np.ndarray:
    """The rows normalised, as float64: their products rounded to float32 are the same cosines
    whichever product (a whole block or a few columns) computed them, float32 ones are not."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: np.ndarray = (vectors / np.maximum(norms, 1e-9)).astype(np.float32).astype(np.float64)
    return unit


def _cosines(
    unit: np.ndarray, rows: np.ndarray | list[int], columns: np.ndarray | list[int] | slice
) -> np.ndarray:
    cosines: np.ndarray = (unit[rows] @ unit[columns].T).astype(np.float32)
    return cosines


def _nearest(cosines: np.ndarray, neighbours: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the columns of its `neighbours` highest cosines and those cosines, ascending: the
    same cosines are summed in the same order however they were found."""
    columns = np.argpartition(cosines, cosines.shape[1] - neighbours, axis=1)[:, -neighbours:]
    order = np.argsort(np.take_along_axis(cosines, columns, axis=1), axis=1, kind="stable")
    columns = np.take_along_axis(columns, order, axis=1)
    return columns, np.take_along_axis(cosines, columns, axis=1)


def _nearest_rows(unit: np.ndarray, rows: np.ndarray, neighbours: int) -> tuple[np.ndarray, np.ndarray]:
    """`_nearest` of the given `rows` of `unit` among all its rows, the row itself left out. The
    whole catalog is screened in float32 (half the work of float64); the few candidates that can
    be among the nearest (within `_SCREEN_ERROR` of them) are measured by `_cosines`."""
    columns = np.empty((len(rows), neighbours), dtype=np.intp)
    cosines = np.empty((len(rows), neighbours), dtype=np.float32)
    rough_unit = unit.astype(np.float32)
    candidates = min(neighbours + _SCREEN_SPARE, len(unit) - 1)
    for start in range(0, len(rows), _BLOCK_ROWS):
        part = rows[start : start + _BLOCK_ROWS]
        rough = rough_unit[part] @ rough_unit.T
        rough[np.arange(len(part)), part] = -np.inf  # a tool is not its own neighbour
        kept = np.argpartition(rough, rough.shape[1] - candidates, axis=1)[:, -candidates:]
        kept_rough = np.sort(np.take_along_axis(rough, kept, axis=1), axis=1)
        # A row whose spare candidates are all close to its nearest may miss one: measured in full.
        whole = (kept_rough[:, candidates - neighbours] - kept_rough[:, 0] <= _SCREEN_ERROR) & (
            candidates < len(unit) - 1
        )
        exact = np.concatenate(
            [
                np.einsum("rd,rcd->rc", unit[part[at : at + 64]], unit[kept[at : at + 64]]).astype(np.float32)
                for at in range(0, len(part), 64)
            ]
        )
        if whole.any():
            full = _cosines(unit, part[whole], slice(None))
            full[np.arange(len(full)), part[whole]] = -np.inf
            near, _ = _nearest(full, candidates)
            kept[whole] = near
            exact[whole] = np.take_along_axis(full, near, axis=1)
        near, values = _nearest(exact, neighbours)
        columns[start : start + len(part)] = np.take_along_axis(kept, near, axis=1)
        cosines[start : start + len(part)] = values
    return columns, cosines


@dataclass(frozen=True)
class _Neighbourhood:
    """A tool's nearest tools (ids) and their cosines, ascending, in the `catalog` it was judged in."""

    catalog: frozenset[str]
    ids: tuple[str, ...]
    cosines: np.ndarray


class Neighbourhoods:
    """Each tool's nearest tools in the last catalog it was judged in, by vector space (a model's
    key) and tool id, so that a catalog sharing tools with earlier ones compares only what changed.

    A known tool's nearest tools in a new catalog are the nearest of its old ones and of the tools
    its old catalog lacked, as long as none of its old ones left: then only its cosines to those
    new tools are computed. The others (new tools, tools whose neighbours left) are compared with
    the whole catalog. The result equals `neighbour_similarity`'s (the cosines are the same
    products, summed in the same order). Each tool keeps its latest neighbourhood only; the
    lock keeps builds on several threads apart. A whole catalog's neighbourhoods also go to the
    vector cache the build is given (`stored_neighbourhoods`), so that a restarted process (or
    another replica on the same cache) loads them rather than comparing the whole catalog again."""

    def __init__(self) -> None:
        self._known: dict[str, dict[str, _Neighbourhood]] = {}
        self._lock = threading.Lock()

    def similarity(
        self,
        space: str,
        ids: Sequence[str],
        vectors: np.ndarray,
        neighbours: int = NEIGHBOURS,
        store: VectorCache | None = None,
    ) -> np.ndarray:
        """`neighbour_similarity(vectors, neighbours)`, row `i` being the tool `ids[i]`. With a
        `store`, the whole catalog's neighbourhoods are read from it when it has them
        (`stored_neighbourhoods`: a restart loads them), and written to it when they are computed."""
        count = len(ids)
        neighbours = min(neighbours, count - 1)
        if neighbours <= 0 or len(set(ids)) < count:  # a tool twice is its own neighbour: no reuse
            return neighbour_similarity(vectors, neighbours)
        catalog = frozenset(ids)
        key, catalog_id = stored_neighbourhoods(space, ids, neighbours)
        if store is not None:
            stored = _unpacked(store.get_many(key, [catalog_id]).get(catalog_id), count, neighbours)
            if stored is not None:
                return self._loaded(space, catalog, ids, *stored)
        unit = _unit(vectors)
        with self._lock:
            known = self._known.setdefault(space, {})
            earlier = [known.get(tool) for tool in ids]
        found: list[_Neighbourhood | None] = [None] * count
        groups: dict[int, list[int]] = {}
        for row, entry in enumerate(earlier):
            if entry is not None and len(entry.ids) == neighbours and catalog.issuperset(entry.ids):
                groups.setdefault(id(entry.catalog), []).append(row)
        for rows in groups.values():
            self._extend(found, catalog, ids, unit, rows, earlier, neighbours)
        missing = np.array([row for row in range(count) if found[row] is None], dtype=np.intp)
        columns, cosines = _nearest_rows(unit, missing, neighbours)
        for row, near, values in zip(missing.tolist(), columns, cosines, strict=True):
            found[row] = _Neighbourhood(catalog, tuple(ids[column] for column in near), values)
        with self._lock:
            known.update((tool, entry) for tool, entry in zip(ids, found, strict=True) if entry is not None)
        nearest = np.array([entry.cosines for entry in found if entry is not None])
        if store is not None:
            position = {tool: row for row, tool in enumerate(ids)}
            near = np.array([[position[tool] for tool in entry.ids] for entry in found if entry is not None])
            store.put_many(key, {catalog_id: _packed(near, nearest)})
        means: np.ndarray = nearest.mean(axis=1)
        return means

    def _loaded(
        self,
        space: str,
        catalog: frozenset[str],
        ids: Sequence[str],
        columns: np.ndarray,
        cosines: np.ndarray,
    ) -> np.ndarray:
        """The nearness of a catalog whose neighbourhoods were stored, each kept as if computed here."""
        entries = [
            _Neighbourhood(catalog, tuple(ids[column] for column in near), values)
            for near, values in zip(columns.tolist(), cosines, strict=True)
        ]
        with self._lock:
            self._known.setdefault(space, {}).update(zip(ids, entries, strict=True))
        means: np.ndarray = cosines.mean(axis=1)
        return means

    @staticmethod
    def _extend(
        found: list[_Neighbourhood | None],
        catalog: frozenset[str],
        ids: Sequence[str],
        unit: np.ndarray,
        rows: list[int],
        earlier: list[_Neighbourhood | None],
        neighbours: int,
    ) -> None:
        """The neighbourhoods of `rows`, tools judged in one earlier catalog: their old nearest
        tools against the tools that catalog lacked."""
        old = [entry for entry in (earlier[row] for row in rows) if entry is not None]
        added = [column for column, tool in enumerate(ids) if tool not in old[0].catalog]
        cosines = np.hstack([np.array([entry.cosines for entry in old]), _cosines(unit, rows, added)])
        names = [[*entry.ids, *(ids[column] for column in added)] for entry in old]
        columns, values = _nearest(cosines, neighbours)
        for position, (row, near) in enumerate(zip(rows, columns, strict=True)):
            found[row] = _Neighbourhood(catalog, tuple(names[position][c] for c in near), values[position])


def stored_neighbourhoods(space: str, ids: Sequence[str], neighbours: int = NEIGHBOURS) -> tuple[str, str]:
    """The key and id a catalog's neighbourhoods are stored under in a vector cache: the vector
    space (a model's key), how many neighbours, and a digest of the tools' ids (content digests) in
    catalog order. A changed tool or model, or another order, is another entry: none is reused
    stale. What is stored is the tools' nearest positions and cosines, nothing of a request."""
    digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()
    return f"{space}.neighbours{neighbours}.v{STORED_VERSION}", digest


def _packed(columns: np.ndarray, cosines: np.ndarray) -> np.ndarray:
    """A catalog's neighbourhoods as one float32 row, as a vector cache holds them: every tool's
    nearest positions (exact in float32 up to 2**24 tools), then their cosines."""
    row: np.ndarray = np.concatenate([columns.astype(np.float32).ravel(), cosines.astype(np.float32).ravel()])
    return row


def _unpacked(row: np.ndarray | None, count: int, neighbours: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The positions and cosines of a `_packed` row of a catalog of `count` tools, or None when the
    row is not one (damaged, or not written by `_packed`): they are computed again."""
    if row is None or row.shape != (2 * count * neighbours,):
        return None
    halves = row.reshape(2, count, neighbours)
    columns = halves[0].astype(np.intp)
    cosines = np.ascontiguousarray(halves[1], dtype=np.float32)
    valid = (
        np.array_equal(columns, halves[0])
        and bool(((columns >= 0) & (columns < count)).all())
        and not (columns == np.arange(count)[:, None]).any()
        and bool(np.isfinite(cosines).all())
        and bool((np.diff(cosines, axis=1) >= 0).all())
    )
    return (columns, cosines) if valid else None


def generality(
    vectors: np.ndarray, neighbours: int = NEIGHBOURS, nearness: np.ndarray | None = None
) -> np.ndarray:
    """Per row: its cosine to the catalog's mean direction less its mean cosine to its nearest other
    rows (`nearness`, when `Neighbourhoods` knows it). High for a text near the centre of the
    catalog but near no tool in particular."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    centre = unit.mean(axis=0)
    centrality = unit @ (centre / max(float(np.linalg.norm(centre)), 1e-9))
    if nearness is None:
        nearness = neighbour_similarity(vectors, neighbours)
    spread: np.ndarray = (centrality - nearness).astype(np.float32)
    return spread


def isolation_penalty(
    vectors: np.ndarray,
    *,
    neighbours: int = NEIGHBOURS,
    spreads: float = SPREADS,
    weight: float = WEIGHT,
    min_tools: int = MIN_TOOLS,
    known: tuple[Neighbourhoods, str, Sequence[str], VectorCache | None] | None = None,
) -> np.ndarray:
    """Per tool (row of `vectors`), the similarity it loses for being more general than its
    catalog's tools usually are (0 for most; all 0 in a catalog under `min_tools`). `known`: the
    `Neighbourhoods` to reuse, the vector space, each row's tool id and the store that keeps
    catalogs' neighbourhoods (`Neighbourhoods.similarity`)."""
    if len(vectors) < min_tools:
        return np.zeros(len(vectors), dtype=np.float32)
    nearness = None
    if known is not None:
        neighbourhoods, space, ids, store = known
        nearness = neighbourhoods.similarity(space, ids, vectors, neighbours, store)
    value = generality(vectors, neighbours, nearness)
    median = float(np.median(value))
    spread = float(np.median(np.abs(value - median)))
    excess = value - (median + spreads * spread)
    penalty: np.ndarray = (weight * np.maximum(excess, 0.0)).astype(np.float32)
    return penalty


@dataclass(frozen=True)
class LanguageShares:
    """What its language alone gives each tool written in another language than its catalog's
    (`documents.foreign_languages`), to be taken from its dense evidence.

    The models match a text's meaning in any language, and a request is closer to any text in
    its own language than to the catalog's: that closeness is no evidence for one tool of that
    language. What it is worth is told by the other tools written in the same language: how far
    their mean similarity to a request is above the catalog's mean. The tools of the tool's own
    server are left out of that mean when the language has tools on other servers: a server's
    tools share its subject, and their closeness to a request about it is the subject's, not
    the language's. A tool judged so keeps what sets it apart from the others in its language:
    many tools in one language (a market's servers) are ranked on their merits, as the
    catalog's are; a tool alone in its language (a bag of requests in another language than the
    catalog's, which would otherwise match each of them) gains no dense evidence: its
    similarity is at most the catalog's mean, and a poor match stays poor."""

    tools: np.ndarray
    """Positions of the tools written in another language than the catalog's."""
    block: np.ndarray
    """Per such tool, its block: the tools of one server written in one language."""
    languages: scipy.sparse.csr_array
    """Language x tool: 1 for the tools written in it."""
    blocks: scipy.sparse.csr_array
    """Block x tool: 1 for its tools."""
    language_of_block: np.ndarray
    """Per block, its row of `languages`."""
    own_left_out: np.ndarray
    """Per block, 1 when its language has tools on other servers (its own are then left out)."""
    references: np.ndarray
    """Per block, how many tools tell what its language gives."""

    @classmethod
    def of(cls, languages: np.ndarray, servers: Sequence[str]) -> LanguageShares | None:
        """The shares of a catalog's tools, by each tool's language when it is another than the
        catalog's (else "") and its server ("" for none: such a tool is a server of its own);
        None when every tool is in the catalog's language."""
        tools = np.flatnonzero(languages != "")
        if not len(tools):
            return None
        size = len(languages)
        _, language_of_tool = np.unique(languages[tools].astype(str), return_inverse=True)
        language_of_tool = language_of_tool.ravel()
        # A block per language and server; a tool without a server is a block of its own.
        keys = [f"{languages[p]}\0{servers[p] or chr(0) + str(p)}" for p in tools.tolist()]
        _, first, block = np.unique(np.array(keys), return_index=True, return_inverse=True)
        block = block.ravel()
        ones = np.ones(len(tools))
        in_language = np.bincount(language_of_tool)
        in_block = np.bincount(block)
        language_of_block = language_of_tool[first]
        others = in_language[language_of_block] - in_block
        own_left_out = (others > 0).astype(np.float64)
        return cls(
            tools=tools,
            block=block,
            languages=scipy.sparse.csr_array(
                (ones, (language_of_tool, tools)), shape=(len(in_language), size)
            ),
            blocks=scipy.sparse.csr_array((ones, (block, tools)), shape=(len(in_block), size)),
            language_of_block=language_of_block,
            own_left_out=own_left_out,
            references=np.where(others > 0, others, in_language[language_of_block]).astype(np.float64),
        )

    def judged(self, similarities: np.ndarray) -> np.ndarray:
        """`similarities` (one row per query, or one query's) less what each tool's language
        alone gives it."""
        rows = np.atleast_2d(similarities)
        by_language = (self.languages @ rows.T).T
        by_block = (self.blocks @ rows.T).T
        reference = (by_language[:, self.language_of_block] - self.own_left_out * by_block) / self.references
        gain = np.maximum(reference - rows.mean(axis=1, keepdims=True), 0.0)
        judged = rows.copy()
        judged[:, self.tools] -= gain[:, self.block].astype(rows.dtype)
        result: np.ndarray = judged.reshape(similarities.shape)
        return result
