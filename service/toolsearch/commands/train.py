"""`toolsearch train`: fit a profile's learned ranking (query adapter and re-ranker) and its
abstention model, and write them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from toolsearch.embedding.manifest import ModelError, staged_directory


def add_train_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `train` on the CLI's subparsers."""
    train = subparsers.add_parser(
        "train",
        help="train a profile's learned ranking (query adapter and re-ranker) and abstention model",
        description="Fit the query adapter and the re-ranker of a profile's models on training requests "
        "over a catalog file, then the abstention model for that ranker on those requests and on "
        "requests no tool serves, and write the ranker and abstention directories. Deterministic: "
        "folds are whole servers.",
    )
    train.add_argument("--model-dir", type=Path, action="append", required=True, help="as for `eval`")
    train.add_argument(
        "--queries", type=Path, default=None, help="training requests (default: the shipped training set)"
    )
    train.add_argument(
        "--unservable",
        type=Path,
        default=None,
        help="requests no tool of the catalog serves, for the abstention model (default: the shipped ones)",
    )
    train.add_argument("--catalog", type=Path, default=None, help="catalog file (default: the recorded one)")
    train.add_argument(
        "--out", type=Path, default=None, help="ranker directory to write (default: the profile's own)"
    )
    train.add_argument(
        "--abstention-out",
        type=Path,
        default=None,
        help="abstention directory to write (default: the profile's own, `abstention` beside its ranker)",
    )
    train.add_argument(
        "--abstention-only",
        action="store_true",
        help="keep the profile's ranker as it is and train the abstention model for it",
    )
    train.add_argument(
        "--cross-validate",
        action="store_true",
        help="also report the fusion and the learned ranking on servers held out of training",
    )
    train.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads (default: 2)")
    train.set_defaults(handler=_train)


def _train(args: argparse.Namespace) -> int:
    from toolsearch.embedding import load_model
    from toolsearch.embedding.profile import PROFILE_FILE, load_dictionaries, profile_paths
    from toolsearch.evaluation import format_report, summarize
    from toolsearch.search.ranking import Ranker
    from toolsearch.training import (
        cross_validate,
        held_out_report,
        train_profile,
        training_queries_path,
        unservable_queries_path,
    )

    try:
        paths = profile_paths(args.model_dir)
        out = args.out or paths.ranker
        if out is None:
            raise ModelError("--out is needed: the model directories named are not a profile")
        abstention_out = args.abstention_out or paths.abstention or out.parent / "abstention"
        models = [load_model(path, threads=args.threads) for path in paths.models]
        dictionaries = load_dictionaries(paths)
        kept = None
        if args.abstention_only:
            kept = Ranker.load(out)
            if not kept.fits([model.fingerprint for model in models], dictionaries):
                raise ModelError(f"{out} was trained for other models or dictionaries: train it first")
        trained = train_profile(
            models,
            args.queries or training_queries_path(),
            args.unservable or unservable_queries_path(),
            args.catalog,
            dictionaries=dictionaries,
            ranker=kept,
        )
        if kept is None:
            with staged_directory(out, replace=True) as staging:
                trained.ranker.save(staging)
        with staged_directory(abstention_out, replace=True) as staging:
            trained.abstainer.save(staging)
        profile_file = out.parent / PROFILE_FILE
        if paths.abstention is None and args.abstention_out is None and profile_file.is_file():
            document = json.loads(profile_file.read_text(encoding="utf-8"))
            document["abstention"] = abstention_out.name
            profile_file.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    except (ModelError, OSError, ValueError) as error:
        print(f"toolsearch train: error: {error}", file=sys.stderr)
        return 1
    if kept is None:
        print(f"a ranker trained on {trained.ranker.training['requests']} requests is in {out}")
    print(f"an abstention model for it is in {abstention_out}")
    print(held_out_report(trained.abstention, trained.held_out, trained.abstainer.threshold))
    if args.cross_validate:
        fused, learned = cross_validate(trained.index, trained.queries, trained.fitted)
        print(format_report(summarize(fused), "fusion, servers held out"))
        print(format_report(summarize(learned), "learned, servers held out of training"))
    return 0
