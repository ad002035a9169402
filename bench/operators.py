"""Where one query's embedding goes: onnxruntime's own profile of a model's runs, by operator type.

    python -m bench.operators [--model-dir DIR] [--queries N] [--threads N]

Loads the model as serve does (one intra-op thread by default), embeds each of the first N dev
queries (with the model's query prefix) once untimed and then once with onnxruntime's profiler
on, and sums the kernels' time per operator type. Prints a table; writes
bench/results/operators-<model directory name>-<date>.json.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import statistics
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort

from bench.report import RESULTS_DIR, machine
from bench.stats import dev_queries
from toolsearch.embedding import load_model
from toolsearch.embedding.manifest import MODEL_FILE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=Path("models/default/e5"))
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    embedder = load_model(args.model_dir, threads=args.threads)
    texts = [embedder.manifest.query_prefix + query["query"] for query in dev_queries()[: args.queries]]
    token_ids = embedder._tokenizer.token_ids(texts)  # the ids serve feeds the model
    with tempfile.TemporaryDirectory() as scratch:
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(scratch) / "profile")
        session = ort.InferenceSession(
            str(args.model_dir / MODEL_FILE), options, providers=["CPUExecutionProvider"]
        )
        feeds = [
            {"input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), np.int64)}
            for ids in token_ids
        ]
        for feed in feeds:  # warm-up runs are profiled too: dropped below by count
            session.run(None, feed)
        for feed in feeds:
            session.run(None, feed)
        events = json.loads(Path(session.end_profiling()).read_text())
    runs = [event["dur"] for event in events if event.get("name") == "model_run"][len(feeds) :]
    kernels: collections.Counter[str] = collections.Counter()
    nodes: collections.Counter[str] = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            kernels[event["args"]["op_name"]] += event["dur"]
            nodes[event["args"]["op_name"]] += 1
    total_runs = 2 * len(feeds)
    per_run = {op: kernels[op] / total_runs / 1000 for op in kernels}
    rows = sorted(per_run.items(), key=lambda item: -item[1])
    kernel_ms = sum(per_run.values())
    tokens = statistics.median(map(len, token_ids))
    print(
        f"{args.model_dir.name}: {len(feeds)} dev queries, median {tokens} tokens,"
        f" model run p50 {statistics.median(runs) / 1000:.2f} ms, kernels {kernel_ms:.2f} ms a run"
    )
    print(f"{'operator':24s} {'ms a run':>9s} {'share':>6s} {'nodes':>6s}")
    for op, ms in rows[:12]:
        print(f"{op:24s} {ms:9.3f} {ms / kernel_ms:6.1%} {nodes[op] // total_runs:6d}")
    document = {
        "machine": machine(),
        "model_dir": str(args.model_dir),
        "queries": len(feeds),
        "threads": args.threads,
        "median_tokens": tokens,
        "model_run_p50_ms": statistics.median(runs) / 1000,
        "kernels_ms_per_run": kernel_ms,
        "operators": [
            {"operator": op, "ms_per_run": ms, "nodes_per_run": nodes[op] // total_runs} for op, ms in rows
        ],
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"operators-{args.model_dir.name}-{dt.date.today().isoformat()}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
