"""The top 10 of every dev request, to show that a change leaves search as it was.

`python -m bench.top10 OUT.json [--model-dir DIR] [--vectors DIR]` writes, for each request of
bench/data/queries-dev.jsonl over the whole recorded catalog, its ten best tools with their exact
scores (`repr`) and weak flags; two runs on two trees compare with `cmp`. Tool vectors are kept in
`--vectors` (a disk cache), so a second run embeds nothing.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.stats import dev_queries
from toolsearch.backends.disk_vectors import DiskVectorCache
from toolsearch.catalog_file import load_catalog_tools, recorded_catalog_path
from toolsearch.embedding.embedder import usable_cores
from toolsearch.search.build import profile_index
from toolsearch.search.profile import load_profile

_CACHE_BYTES = 2_000_000_000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.top10", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="JSON file to write")
    parser.add_argument("--model-dir", type=Path, default=Path("models/default"), help="search profile")
    parser.add_argument("--vectors", type=Path, default=Path("bench/results/vectors"), help="vector cache")
    args = parser.parse_args(argv)
    tools = load_catalog_tools(recorded_catalog_path())
    profile = load_profile([args.model_dir], threads=2)
    cache = DiskVectorCache(args.vectors, max_bytes=_CACHE_BYTES)
    with ThreadPoolExecutor(usable_cores(), thread_name_prefix="toolsearch-query-runs") as runs:
        index = profile_index(tools, profile, cache=cache, query_runs=runs)
        rows = [
            {
                "id": query["id"],
                "hits": [
                    [tools[hit.position].name, repr(hit.score), hit.weak]
                    for hit in index.search(query["query"], 10)
                ],
            }
            for query in dev_queries()
        ]
    args.out.write_text(json.dumps(rows, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote the top 10 of {len(rows)} requests to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
