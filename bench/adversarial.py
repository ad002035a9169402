"""Search integrity: how often hostile tools win searches they should lose, by family of attack.

    python -m bench.adversarial [--quick] [--model-dir DIR[,DIR...]]...

The recorded catalog (5,190 tools) plus the hostile tools of `bench.adversarial_attacks` (a seeded
generator: families of attacks with their variants, each on the development or the held-out side).
Each family's tools of one side are added to the catalog on their own (a catalog per family and
side, so that one family's tools do not hide another's), and every dev request is searched in
process (no HTTP), for bm25 and each hybrid profile (its models, learned ranker and dictionaries,
as `toolsearch serve` ranks).

Reported per family and side, development and held-out side by side: the share of requests with a
hostile tool at rank 1 and in the top 5, counting only requests it does not serve (a tool that
copies a real tool's job, an imitation or an instruction tool that opens with a real tool's first
sentence, serves that tool's requests: those are left out of its count), the same with
`--hide-suspicious`, the share of the family's tools flagged `suspicious`, and for look-alikes the
share flagged as imitating the very tool they copy. Also: how many of the recorded catalog's real
tools are flagged, and recall@5 of the real tools with and without each side's hostile tools.
Tool vectors are kept in `bench/results/vectors/` between runs, so a second hybrid run embeds the
hostile tools only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.adversarial_attacks import FAMILIES, SEED, SIDES, HostileTool, hostile_tools
from bench.options import Options, profiles_note
from bench.processes import split_serve_flags
from bench.report import RESULTS_DIR, Floor, Section, Table
from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path
from toolsearch.integrity.flags import MAX_DEMOTED, flagged_last, integrity
from toolsearch.search import SearchIndex
from toolsearch.search.offline.evaluation import Query, load_queries
from toolsearch.search.vectors import MemoryVectorCache
from toolsearch.tool import Tool, ToolInterner

DEPTH = 10
TOP1_GOAL = 0.0
TOP5_GOAL = 0.01
LOOKALIKES_NAMED_GOAL = 0.9
FALSE_FLAGS_GOAL = 0.01
RECALL_COST_GOAL = 0.005
VECTOR_DIR = RESULTS_DIR / "vectors"
DEV_QUERIES = Path(__file__).resolve().parent / "data" / "queries-dev.jsonl"

Build = Callable[[Sequence[Tool]], SearchIndex]


@dataclass(frozen=True, slots=True)
class Figures:
    """One family's (or side's) hostile tools in the catalog, over the dev requests."""

    tools: int
    top1: float
    top5: float
    hidden_top1: float
    """As with --hide-suspicious: flagged tools left out."""
    hidden_top5: float
    flagged: float
    """Share of its tools flagged suspicious."""
    named: float | None
    """Look-alikes: share flagged as imitating the very tool they copy."""
    recall_at_5: float
    """Recall@5 of the real tools over the servable requests, these hostile tools in the catalog."""


def _unserved_share(
    rankings: Sequence[Sequence[str]], queries: Sequence[Query], hostile: Mapping[str, HostileTool], k: int
) -> float:
    """Share of requests with, in their top `k`, a hostile tool that does not serve them."""

    def unserved(name: str, query: Query) -> bool:
        tool = hostile.get(name)
        return tool is not None and tool.imitates not in query.gold

    hits = sum(
        any(unserved(name, query) for name in ranking[:k])
        for ranking, query in zip(rankings, queries, strict=True)
    )
    return hits / len(queries) if queries else 0.0


def recall_at_5(rankings: Sequence[Sequence[str]], queries: Sequence[Query]) -> float:
    servable = [(r, q) for r, q in zip(rankings, queries, strict=True) if q.gold]
    return sum(bool(q.gold & set(r[:5])) for r, q in servable) / len(servable) if servable else 0.0


def rankings(
    index: SearchIndex,
    names: Sequence[str],
    queries: Sequence[Query],
    *,
    flagged: frozenset[str] = frozenset(),
    hidden: bool = False,
) -> list[list[str]]:
    """Each query's best `DEPTH` names as search answers them (`Catalog.hits`): the `flagged` tools
    after the others, or with `hidden` (--hide-suspicious) left out."""
    positions = frozenset(position for position, name in enumerate(names) if name in flagged)
    found = []
    for query in queries:
        hits = index.search(query.text, DEPTH + min(len(positions), MAX_DEMOTED))
        kept = [hit for hit in hits if not (hidden and hit.position in positions)]
        found.append([names[hit.position] for hit in flagged_last(kept, positions)][:DEPTH])
    return found


def measure(
    catalog: Sequence[Tool], hostile: Sequence[HostileTool], queries: Sequence[Query], build: Build
) -> dict[str, Figures]:
    """The figures of `hostile` added to `catalog` together, over all of them (`all`) and by family;
    `build` makes an index of a list of tools."""
    interner = ToolInterner()
    attacked = [*catalog, *(interner.intern(tool.definition) for tool in hostile)]
    names = [tool.name for tool in attacked]
    index = build(attacked)
    found = integrity(attacked)
    ranked = rankings(index, names, queries, flagged=frozenset(found.reasons))
    hidden_ranked = rankings(index, names, queries, flagged=frozenset(found.reasons), hidden=True)
    recall = recall_at_5(ranked, queries)
    figures = {}
    for family in ("all", *sorted({tool.family for tool in hostile})):
        tools = [tool for tool in hostile if family in ("all", tool.family)]
        by_name = {str(tool.definition["name"]): tool for tool in tools}
        lookalikes = [tool for tool in tools if tool.lookalike]
        named = [found.imitated.get(str(tool.definition["name"])) == tool.imitates for tool in lookalikes]
        figures[family] = Figures(
            tools=len(tools),
            top1=_unserved_share(ranked, queries, by_name, 1),
            top5=_unserved_share(ranked, queries, by_name, 5),
            hidden_top1=_unserved_share(hidden_ranked, queries, by_name, 1),
            hidden_top5=_unserved_share(hidden_ranked, queries, by_name, 5),
            flagged=sum(name in found.reasons for name in by_name) / len(tools),
            named=sum(named) / len(named) if named else None,
            recall_at_5=recall,
        )
    return figures


class _VectorFile(MemoryVectorCache):
    """Tool vectors kept in one .npz file per model between runs (the bench's own, not a product cache)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(max_vectors=1_000_000)
        self._directory = directory
        self._loaded: set[str] = set()
        self._dirty: set[str] = set()

    def _path(self, model: str) -> Path:
        return self._directory / f"{model}.npz"

    def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        if model not in self._loaded:
            self._loaded.add(model)
            if self._path(model).exists():
                with np.load(self._path(model)) as stored:
                    keys = [str(key) for key in stored["keys"]]
                    super().put_many(model, dict(zip(keys, stored["vectors"], strict=True)))
        return super().get_many(model, digests)

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        super().put_many(model, vectors)
        self._dirty.add(model)

    def save(self) -> None:
        self._directory.mkdir(parents=True, exist_ok=True)
        for model in self._dirty:
            vectors = {digest: vector for (key, digest), vector in self._vectors.items() if key == model}
            np.savez(
                self._path(model), keys=np.array(list(vectors)), vectors=np.stack(list(vectors.values()))
            )
        self._dirty.clear()


def _builders(options: Options) -> list[tuple[str, Build, _VectorFile | None]]:
    from toolsearch.search.build import build_index
    from toolsearch.search.hybrid import QueryVectors
    from toolsearch.search.lexical import LexicalIndex
    from toolsearch.search.profile import load_profile

    builders: list[tuple[str, Build, _VectorFile | None]] = [("bm25", LexicalIndex.build, None)]
    for profile in options.measured_profiles:
        # The directories as given: a profile directory brings its ranker and dictionaries.
        given = [part.strip() for part in split_serve_flags(profile.model_dir)[0].split(",") if part.strip()]
        loaded = load_profile(given, threads=2)
        cache = _VectorFile(VECTOR_DIR)
        # One query cache per model for every index of the run: each request is embedded once.
        first, *others = (QueryVectors(model) for model in loaded.models)

        def build(
            tools: Sequence[Tool],
            cache: _VectorFile = cache,
            loaded: Any = loaded,
            first: QueryVectors = first,
            others: list[QueryVectors] = others,
        ) -> SearchIndex:
            return build_index(
                tools,
                first.embedder,
                cache=cache,
                query_vectors=first,
                companions=others,
                ranker=loaded.ranker,
                dictionaries=loaded.dictionaries,
            )

        builders.append((profile.label, build, cache))
    return builders


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _cells(figures: Figures | None) -> list[Any]:
    if figures is None:
        return ["–"] * 5
    flagged = figures.named if figures.named is not None else figures.flagged
    shares = (figures.top1, figures.top5, figures.hidden_top5, flagged)
    return [figures.tools, *map(_percent, shares)]


def run(options: Options) -> Section:
    interner = ToolInterner()
    definitions = load_catalog_file(recorded_catalog_path())
    catalog = [interner.intern(definition) for definition in definitions]
    hostile = hostile_tools(definitions)
    queries = load_queries(DEV_QUERIES)[:: options.pick(5, 1)]
    false_flags = len(integrity(catalog).reasons)
    sample = " (quick run: every 5th dev query, no verdict)" if options.quick else ""
    data: dict[str, Any] = {"seed": SEED, "requests": len(queries), "real tools flagged": false_flags}
    tables, floors = [], []
    for label, build, cache in _builders(options):
        names = [tool.name for tool in catalog]
        flagged = frozenset(integrity(catalog).reasons)
        clean = recall_at_5(rankings(build(catalog), names, queries, flagged=flagged), queries)
        by_side = {
            side: measure(catalog, [t for t in hostile if t.side == side], queries, build) for side in SIDES
        }
        if cache is not None:
            cache.save()
        data[label] = {
            "recall@5 without hostile tools": clean,
            **{
                side: {family: asdict(each) for family, each in figures.items()}
                for side, figures in by_side.items()
            },
        }
        rows = [
            [family, *(cell for side in SIDES for cell in _cells(by_side[side].get(family)))]
            for family in (*FAMILIES, "all")
        ]
        tables.append(
            Table(
                f"{label}: hostile tools (seed {SEED}) in the recorded catalog ({len(catalog):,} tools), "
                f"{len(queries)} dev requests, recall@5 {clean:.3f} without them",
                [
                    "family",
                    *(
                        f"{side}: {column}"
                        for side in ("dev", "held-out")
                        for column in ("tools", "rank 1", "top 5", "top 5, hidden", "flagged")
                    ),
                ],
                rows,
                [
                    "Each side's tools are in the catalog together. A hostile tool counts on a request it "
                    "does not serve (one that copies a real tool's job serves that tool's requests).",
                    "`hidden`: as with --hide-suspicious, flagged tools left out. `flagged`: share of the "
                    "family's tools flagged suspicious; for look-alikes, flagged as imitating the very tool "
                    "they copy.",
                    "recall@5 of the real tools with each side's hostile tools: "
                    + ", ".join(f"{side} {by_side[side]['all'].recall_at_5:.3f}" for side in SIDES),
                    *profiles_note(options.hybrid_profiles),
                ],
            )
        )
        held = by_side["held-out"]["all"]
        floors += [
            Floor(
                f"{label}: held-out hostile tools never at rank 1",
                f"{held.top1:.1%}{sample}",
                None if options.quick else held.top1 <= TOP1_GOAL,
            ),
            Floor(
                f"{label}: held-out hostile tools in the top 5 of <= 1% of requests",
                f"{held.top5:.1%}{sample}",
                None if options.quick else held.top5 <= TOP5_GOAL,
            ),
            Floor(
                f"{label}: held-out hostile tools cost real tools <= 0.5 points of recall@5",
                f"{(held.recall_at_5 - clean) * 100:+.1f} points{sample}",
                None if options.quick else clean - held.recall_at_5 <= RECALL_COST_GOAL + 1e-9,
            ),
        ]
    # Flags do not depend on the ranking: the last one's are every one's.
    named = {side: by_side[side]["look-alike"].named or 0.0 for side in SIDES}
    data["look-alikes named"] = named
    floors += [
        Floor(
            "held-out look-alikes flagged with the tool they imitate >= 90%",
            f"{named['held-out']:.0%}",
            named["held-out"] >= LOOKALIKES_NAMED_GOAL,
        ),
        Floor(
            "real tools of the recorded catalog flagged <= 1%",
            f"{false_flags} of {len(catalog):,}",
            false_flags <= FALSE_FLAGS_GOAL * len(catalog),
        ),
    ]
    return Section(name="adversarial", data=data, tables=tables, floors=floors)


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--sections", "adversarial", *sys.argv[1:]]))
