"""The trained query side's abstention cosine, measured on the training requests.

`python -m bench.calibration --trained-dir DIR [--model-dir models/default] [--vectors DIR]`
ranks every servable training request that names no tool (the shipped training set and
`data/training/requests.jsonl`) and every unservable one (`data/training/unservable.jsonl`) over
the recorded catalog with the profile of `--model-dir` (e5 as imported) and again with the e5 of
`--trained-dir` (`model install --trained-encoder`'s) in its place, and prints the share of
requests e5's threshold doubts and the cosine that doubts the same share of the trained side's
(`search.offline.calibration`): the value `E5_SMALL_TRAINED_QUERY_CALIBRATION` holds. Tool
vectors are kept in `--vectors` (a disk cache), so a second run embeds no tool.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from toolsearch.backends.disk_vectors import DiskVectorCache
from toolsearch.catalog_file import load_catalog_tools, recorded_catalog_path
from toolsearch.embedding import load_model
from toolsearch.embedding.embedder import usable_cores
from toolsearch.embedding.manifest import E5_SMALL_CALIBRATION
from toolsearch.search.build import profile_index
from toolsearch.search.hybrid import HybridIndex
from toolsearch.search.offline.calibration import cosine_at_share, doubted_share, judged_cosines
from toolsearch.search.offline.evaluation import load_queries
from toolsearch.search.offline.training import training_queries_path
from toolsearch.search.profile import Profile, load_profile

_CACHE_BYTES = 2_000_000_000
_TRAINING = Path(__file__).resolve().parents[1] / "data" / "training"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.calibration", description=__doc__.splitlines()[0])
    parser.add_argument("--trained-dir", type=Path, required=True, help="profile with the trained e5")
    parser.add_argument("--model-dir", type=Path, default=Path("models/default"), help="search profile")
    parser.add_argument("--vectors", type=Path, default=Path("bench/results/vectors"), help="vector cache")
    args = parser.parse_args(argv)
    tools = load_catalog_tools(recorded_catalog_path())
    cache = DiskVectorCache(args.vectors, max_bytes=_CACHE_BYTES)
    shipped = load_profile([args.model_dir], threads=2)
    trained_e5 = load_model(args.trained_dir / "e5", threads=2)
    servable = load_queries(training_queries_path()) + load_queries(_TRAINING / "requests.jsonl")
    unservable = load_queries(_TRAINING / "unservable.jsonl")
    cosines: dict[str, list[np.ndarray]] = {}
    with ThreadPoolExecutor(usable_cores(), thread_name_prefix="toolsearch-query-runs") as runs:
        for name, models in (("e5", shipped.models), ("trained", (trained_e5, *shipped.models[1:]))):
            # The fusion's best tool is what the thresholds judge: no ranker.
            profile = Profile(tuple(models), None, shipped.dictionaries)
            index = profile_index(tools, profile, cache=cache, query_runs=runs)
            assert isinstance(index, HybridIndex)
            cosines[name] = [judged_cosines(index, queries) for queries in (servable, unservable)]
    threshold = E5_SMALL_CALIBRATION.abstention.cosine
    share = doubted_share(cosines["e5"][0], threshold)
    carried = cosine_at_share(cosines["trained"][0], share)
    counts = [len(each) for each in cosines["e5"]]
    print(f"training requests naming no tool: {counts[0]} servable, {counts[1]} unservable")
    medians = [float(np.median(cosines[name][0])) for name in ("e5", "trained")]
    print(f"median cosine: e5 {medians[0]:.3f}, trained {medians[1]:.3f}")
    print(f"e5's {threshold} doubts {share:.1%} of them; the trained side's cosine at that share: {carried}")
    print(
        f"unservable doubted: e5 at {threshold} {doubted_share(cosines['e5'][1], threshold):.1%}, "
        f"trained at {carried} {doubted_share(cosines['trained'][1], carried):.1%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
