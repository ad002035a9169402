"""Search that learns from use, replayed: recall before and after callers taught a catalog.

    python -m bench --sections learning [--quick] [--model-dir DIR]

The training requests grouped by intent (the same gold tools; different wordings and languages):
for each intent of several wordings, simulated callers (distinct tokens) search its first wording
and call its gold tool; then its other wordings (used intents) and the requests of intents nobody
taught (unused) are searched. Recall@1 and @5 before and after, by distinct callers per intent,
with `search.learning`'s aggregates as the proxy keeps them; then the poisoning runs: one token
calling an unrelated tool ten thousand times after each used wording, k-1 colluding tokens doing
the same, and k tokens teaching a tool that integrity flags. Search p50 with learning on and off
is taken in the same run. The index is the product's (`profile_index` with the profile's models);
the replay drives `search.learning` directly, as the proxy does after each followed search.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.adversarial import VECTOR_DIR
from bench.options import Options
from bench.processes import split_serve_flags
from bench.report import Floor, Section, Table
from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path
from toolsearch.integrity.flags import integrity
from toolsearch.search.hybrid import HybridIndex
from toolsearch.search.learning import LearnedCatalog, LearningPolicy, ToolAggregate, contribute, contributor
from toolsearch.search.offline.evaluation import Query, load_queries
from toolsearch.search.offline.training import training_queries_path
from toolsearch.tool import Tool, ToolInterner

CALLERS = (1, 3, 5, 10)
HAMMERING = 10_000
CATALOG = "bench-catalog"
DESIGNS = {
    "default": LearningPolicy(),
    "weight 0.03": LearningPolicy(weight=0.03),
    "weight 0.10": LearningPolicy(weight=0.10),
    "floor 0.80": LearningPolicy(floor=0.80),
    "floor 0.90": LearningPolicy(floor=0.90),
}


def intents(queries: Sequence[Query]) -> tuple[list[tuple[Query, list[Query]]], list[Query]]:
    """(taught wording, other wordings) of each intent with several wordings, and the requests of
    the intents with one (never taught)."""
    groups: dict[frozenset[str], list[Query]] = defaultdict(list)
    for query in queries:
        if query.gold:
            groups[query.gold].append(query)
    used = [(group[0], group[1:]) for group in groups.values() if len(group) > 1]
    unused = [group[0] for group in groups.values() if len(group) == 1]
    return used, unused


def _index(options: Options, tools: Sequence[Tool]) -> HybridIndex:
    from toolsearch.backends.disk_vectors import DiskVectorCache
    from toolsearch.search.build import profile_index
    from toolsearch.search.profile import load_profile

    profile = options.measured_profiles[0]
    given = [part.strip() for part in split_serve_flags(profile.model_dir)[0].split(",") if part.strip()]
    # The product's disk cache: the catalog is embedded once, then read back by every run.
    cache = DiskVectorCache(VECTOR_DIR / "disk", max_bytes=2**30)
    index = profile_index(tools, load_profile(given, threads=2), cache=cache)
    assert isinstance(index, HybridIndex)
    return index


class Replay:
    """One catalog's index and aggregates, taught as the proxy teaches them."""

    def __init__(self, index: HybridIndex, tools: Sequence[Tool], flagged: frozenset[str]) -> None:
        self.index = index
        self.names = [tool.name for tool in tools]
        self.definitions = {tool.name: tool.digest for tool in tools}
        self.flagged = flagged
        self.now = time.time()

    def vector(self, query: Query) -> np.ndarray:
        return self.index.query_vectors(self.index.request(query.text).request)

    def teach(
        self, teaching: Sequence[tuple[Query, str]], callers: int, policy: LearningPolicy, *, times: int = 1
    ) -> dict[str, ToolAggregate]:
        """Aggregates after `callers` tokens each searched every (wording, tool) of `teaching` and
        called the tool, `times` times."""
        aggregates: dict[str, ToolAggregate] = {}
        for query, tool in teaching:
            vector = self.vector(query)
            for caller in range(callers):
                for _ in range(times):
                    who = contributor(CATALOG, f"token-{caller}")
                    taught = contribute(
                        aggregates.get(tool), vector, who, self.definitions[tool], self.now, policy
                    )
                    if taught is not None:
                        aggregates[tool] = taught
        return aggregates

    def learn(self, aggregates: dict[str, ToolAggregate], policy: LearningPolicy) -> int:
        tools = [(name, self.definitions[name]) for name in self.names]
        self.index.learned = LearnedCatalog.of(aggregates, tools, self.flagged, self.now, policy)
        return 0 if self.index.learned is None else len(self.index.learned)

    def ranked(self, queries: Sequence[Query]) -> list[list[str]]:
        return [[self.names[hit.position] for hit in self.index.search(q.text, 5)] for q in queries]


def recall(ranked: Sequence[list[str]], queries: Sequence[Query], k: int) -> float:
    hits = [bool(set(names[:k]) & query.gold) for names, query in zip(ranked, queries, strict=True)]
    return round(100 * sum(hits) / max(1, len(hits)), 2)


def _p50_ms(replay: Replay, queries: Sequence[Query]) -> float:
    times = []
    for query in queries:
        started = time.perf_counter()
        replay.index.search(query.text, 5)
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 3)


def run(options: Options) -> Section:
    interner = ToolInterner()
    tools = [interner.intern(definition) for definition in load_catalog_file(recorded_catalog_path())]
    if not options.measured_profiles:
        return Section("learning", {"skipped": "no --model-dir: learning needs the dense model"}, [])
    index = _index(options, tools)
    flagged = frozenset(integrity(tools).reasons)
    replay = Replay(index, tools, flagged)
    used, unused = intents(load_queries(training_queries_path()))
    unused = unused[:: options.pick(8, 2)]
    others = [query for _, wordings in used for query in wordings]
    teaching = [(taught, sorted(taught.gold)[0]) for taught, _ in used]
    before = (replay.ranked(others), replay.ranked(unused))
    rows, data = [], {"intents": len(used), "other wordings": len(others), "unused requests": len(unused)}
    for design, policy in DESIGNS.items():
        for callers in CALLERS if design == "default" else (5,):
            effective = replay.learn(replay.teach(teaching, callers, policy), policy)
            after = (replay.ranked(others), replay.ranked(unused))
            row = [design, callers, effective]
            for k in (1, 5):
                row += [recall(before[0], others, k), recall(after[0], others, k)]
            row += [recall(before[1], unused, 1), recall(after[1], unused, 1)]
            rows.append(row)
    data["runs"] = rows
    data["cosines"] = _cosines(replay, used, unused)
    poisoning = _poisoning(replay, used, others + unused)
    data["poisoning"] = poisoning
    replay.learn(replay.teach(teaching, 5, LearningPolicy()), LearningPolicy())
    on = _p50_ms(replay, others + unused)
    replay.index.learned = None
    off = _p50_ms(replay, others + unused)
    data["p50 ms"] = {"on": on, "off": off}
    table = Table(
        "Recall of other wordings (used intents) and of unused intents, before -> after learning",
        [
            "design",
            "callers",
            "tools learned",
            "used @1 before",
            "used @1 after",
            "used @5 before",
            "used @5 after",
            "unused @1 before",
            "unused @1 after",
        ],
        rows,
        [
            f"{len(used)} intents taught by their first wording; {len(others)} other wordings; "
            f"{len(unused)} unused requests; search p50 {on} ms on, {off} ms off"
        ],
    )
    poison_table = Table(
        "Poisoning: requests whose top 5 holds the hostile tool, and rankings changed",
        ["run", "requests with it in the top 5 (before)", "after", "rankings changed"],
        [[name, *figures.values()] for name, figures in poisoning.items()],
    )
    default5 = next(row for row in rows if row[0] == "default" and row[1] == 5)
    below_k = next(row for row in rows if row[0] == "default" and row[1] == 1)
    floors = [
        Floor(
            "used intents @1 +15 points after 5 callers",
            f"{default5[3]} -> {default5[4]}",
            default5[4] - default5[3] >= 15,
        ),
        Floor(
            "unused intents @1 within 0.5 points",
            f"{default5[7]} -> {default5[8]}",
            abs(default5[8] - default5[7]) <= 0.5,
        ),
        Floor(
            "nothing moves below k callers",
            f"{below_k[3]} -> {below_k[4]}, {below_k[2]} tools learned",
            below_k[2] == 0,
        ),
        Floor("search p50 within 1 ms of off", f"{on} ms on, {off} ms off", on - off <= 1.0),
    ]
    return Section("learning", data, [table, poison_table], floors)


def _cosines(
    replay: Replay, used: Sequence[tuple[Query, list[Query]]], unused: Sequence[Query]
) -> dict[str, float]:
    """How far apart requests are in the first model's space: each other wording to its intent's
    taught wording, and each unused request to the nearest taught wording (medians). Learning by
    request similarity can only tell the first from the second if they differ."""
    taught = np.stack([replay.vector(first) for first, _ in used])
    same = [
        float(replay.vector(other) @ replay.vector(first)) for first, wordings in used for other in wordings
    ]
    nearest = [float((taught @ replay.vector(query)).max()) for query in unused]
    return {
        "other wording to its taught wording": round(statistics.median(same), 3),
        "unused request to the nearest taught wording": round(statistics.median(nearest), 3),
    }


def _poisoning(
    replay: Replay, used: Sequence[tuple[Query, list[Query]]], searched: Sequence[Query]
) -> dict[str, Any]:
    """Each run teaches an unrelated tool (the catalog's first unflagged tool that no request wants,
    or its first flagged tool) after every used wording, then counts requests with it in the top 5."""
    policy = LearningPolicy()
    wanted = {name for query in searched for name in query.gold}
    target = next(name for name in replay.names if name not in wanted and name not in replay.flagged)
    flagged_target = next((name for name in replay.names if name in replay.flagged), None)
    replay.index.learned = None
    before = replay.ranked(searched)
    runs = {
        "one token, 10,000 calls": (target, 1, HAMMERING),
        f"{policy.k - 1} colluding tokens": (target, policy.k - 1, 1),
    }
    if flagged_target is not None:
        runs[f"{policy.k + 2} tokens teaching a flagged tool"] = (flagged_target, policy.k + 2, 1)
    results: dict[str, Any] = {}
    for name, (tool, callers, times) in runs.items():
        teaching = [(taught, tool) for taught, _ in used]
        replay.learn(replay.teach(teaching, callers, policy, times=times), policy)
        after = replay.ranked(searched)
        results[name] = {
            "before": sum(tool in names for names in before),
            "after": sum(tool in names for names in after),
            "changed": sum(a != b for a, b in zip(after, before, strict=True)),
        }
    replay.index.learned = None
    return results
