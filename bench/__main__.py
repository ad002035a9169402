"""Run the benchmark suite: `python -m bench [--quick] [--sections a,b] [--model-dir DIR[,DIR...]]...`.

Sections (each also runs alone, e.g. `python -m bench.tokens --quick`):

    tokens      tools/list and search answer sizes (chars / 4, and cl100k_base when available)
    answers     characters of search_tools answers (1, 3 and 5 queries a call): now, at aeb1b66, the peer
    quality     recall@5, MRR@10 and search latency versus the peer; latency versus catalog size
    adversarial hostile tools (stuffing, instructions, look-alike names...) in the top 1 and 5, recall cost
    throughput  wrk against one and two toolsearch processes (nginx round robin) and the peer
    overhead    a tools/call through toolsearch versus straight to the upstream
    coldstart   a new caller's first request at 1,500 and 5,000 tools
    learning    search that learns from use, replayed: recall before and after, poisoning, p50 on/off
    profile     py-spy profiles of warm search and of a proxied tools/call (not in --quick)

Results are merged into bench/results/<date>.json and .md, with PNG plots beside them; the tables
are printed as they come. Every server listens on 127.0.0.1 and is stopped when its section ends.

Each --model-dir is one hybrid profile, passed unchanged to `toolsearch serve --model-dir=` (the
primary model first, then its companions): `--model-dir models/use --model-dir models/e5,models/use`
measures `toolsearch hybrid (use)` and `toolsearch hybrid (e5+use)` side by side. `@flag=value`
after a profile runs it with that serve flag: `--model-dir models/default --model-dir
models/default@embedding-workers=1` measures the default against one model run at a time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.options import Options, profile_label
from bench.processes import SERVICE_DIR
from bench.report import RESULTS_DIR, Section, machine, print_section, results_path, save

SECTIONS = (
    "tokens",
    "answers",
    "quality",
    "adversarial",
    "throughput",
    "overhead",
    "coldstart",
    "profile",
    "learning",
)
QUICK_SECTIONS = ("tokens", "answers", "quality", "adversarial", "throughput", "overhead", "coldstart")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer queries, sizes and seconds (about 3 minutes)"
    )
    parser.add_argument(
        "--sections",
        default=None,
        help=f"comma-separated sections to run (default: all; with --quick: {','.join(QUICK_SECTIONS)})",
    )
    parser.add_argument(
        "--model-dir",
        action="append",
        default=[],
        metavar="DIR[,DIR...][@FLAG=VALUE...]",
        help="one hybrid profile: embedding model directories for `toolsearch serve --model-dir`, the "
        "primary first, or a profile directory; each @flag=value after it is passed to serve as "
        "--flag=value (repeatable: each occurrence is measured side by side)",
    )
    parser.add_argument(
        "--service-dir",
        type=Path,
        default=SERVICE_DIR,
        help="toolsearch sources to benchmark (default: this checkout's service/; a patched copy "
        "measures a fix)",
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where results are written")
    parser.add_argument("--no-save", action="store_true", help="print the tables only")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    chosen = args.sections.split(",") if args.sections else list(QUICK_SECTIONS if args.quick else SECTIONS)
    unknown = [name for name in chosen if name not in SECTIONS]
    if unknown:
        print(
            f"bench: unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}", file=sys.stderr
        )
        return 2
    labels = [profile_label(value) for value in args.model_dir]
    shared = sorted({label for label in labels if labels.count(label) > 1})
    if shared:
        print(
            f"bench: several --model-dir values make the same profile {', '.join(shared)}; give each "
            "profile a different set of directory names",
            file=sys.stderr,
        )
        return 2
    options = Options(
        quick=args.quick,
        model_dirs=tuple(args.model_dir),
        service_dir=args.service_dir.resolve(),
        results_dir=args.results_dir.resolve(),
    )
    sections: list[Section] = []
    for name in chosen:
        started, ran_at, before = time.monotonic(), dt.datetime.now(dt.UTC), machine()
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        section: Section = importlib.import_module(f"bench.{name}").run(options)
        section.seconds = time.monotonic() - started
        section.ran_at = ran_at.isoformat(timespec="seconds")
        section.machine = before
        print_section(section)
        sections.append(section)
    if not args.no_save:
        document = save(sections, options.results_dir, options.as_dict())
        written = [results_path(options.results_dir, "json"), results_path(options.results_dir, "md")]
        try:
            from bench.plots import plot
        except ImportError:
            print("bench: no plots: matplotlib is not installed (pip install -e '.[bench]')", file=sys.stderr)
        else:
            written += plot(document, options.results_dir)
        for path in written:
            print(f"bench: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
