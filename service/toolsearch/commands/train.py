"""`toolsearch train`: fit a profile's learned ranking (query adapter and re-ranker), an
abstention model for its ranker, or e5's query layers, and write it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from toolsearch.commands import Subparsers, command_parser
from toolsearch.embedding.manifest import ModelError, staged_directory

_DESCRIPTION = (
    "Fit the query adapter and the re-ranker of a profile's models on training requests "
    "over a catalog file and write the ranker directory; with --abstention, fit an abstention model "
    "for the profile's ranker on those requests and on requests no tool serves instead, and write "
    "it; with --encoder, train the top layers of e5's query side against the catalog's fixed tool "
    "vectors instead. Deterministic: folds are whole servers, the encoder's batches are seeded."
)


def add_train_command(subparsers: Subparsers) -> None:
    """Register `train` on the CLI's subparsers."""
    train = command_parser(subparsers, "train", _DESCRIPTION)
    train.add_argument("--model-dir", type=Path, action="append", required=True, help="as for `eval`")
    train.add_argument(
        "--queries",
        type=Path,
        action="append",
        default=None,
        help="training requests (default: the shipped training set); --encoder reads several",
    )
    train.add_argument(
        "--unservable",
        type=Path,
        default=None,
        help="requests no tool of the catalog serves, for --abstention (default: the shipped ones)",
    )
    train.add_argument("--catalog", type=Path, default=None, help="catalog file (default: the recorded one)")
    train.add_argument(
        "--out", type=Path, default=None, help="ranker directory to write (default: the profile's own)"
    )
    train.add_argument(
        "--abstention-out",
        type=Path,
        default=None,
        help="with --abstention: directory to write (default: the profile's own, else `abstention` "
        "beside its ranker, named in the profile)",
    )
    train.add_argument(
        "--abstention",
        action="store_true",
        help="instead: keep the profile's ranker and train an abstention model for it (a profile that "
        "names one abstains by it, not by the calibrated thresholds)",
    )
    train.add_argument(
        "--cross-validate",
        action="store_true",
        help="also report the fusion and the learned ranking on servers held out of training",
    )
    train.add_argument(
        "--encoder",
        type=Path,
        default=None,
        metavar="OUT",
        help="instead: train e5's query layers (the profile's first model embeds the tools) and write "
        "the weight file and its header to OUT; needs the `train` extra (JAX)",
    )
    train.add_argument("--seed", type=int, default=0, help="with --encoder: the seed of its batches")
    train.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads (default: 2)")
    train.set_defaults(handler=_train)


def _train(args: argparse.Namespace) -> int:
    from toolsearch.embedding import load_model
    from toolsearch.search.offline.evaluation import format_report, summarize
    from toolsearch.search.offline.training import cross_validate, train_profile_ranker, training_queries_path
    from toolsearch.search.profile import load_dictionaries, profile_paths

    if args.abstention:
        return _train_abstention(args)
    if args.encoder:
        return _train_encoder(args)
    if args.queries is not None and len(args.queries) > 1:
        print("toolsearch train: error: one --queries file, except with --encoder", file=sys.stderr)
        return 2
    try:
        paths = profile_paths(args.model_dir)
        out = args.out or paths.ranker
        if out is None:
            raise ModelError("--out is needed: the model directories named are not a profile")
        models = [load_model(path, threads=args.threads) for path in paths.models]
        dictionaries = load_dictionaries(paths)
        ranker, index, queries = train_profile_ranker(
            models, (args.queries or [training_queries_path()])[0], args.catalog, dictionaries=dictionaries
        )
        with staged_directory(out, replace=True) as staging:
            ranker.save(staging)
    except (ModelError, OSError, ValueError) as error:
        print(f"toolsearch train: error: {error}", file=sys.stderr)
        return 1
    print(f"a ranker trained on {ranker.training['requests']} requests is in {out}")
    if args.cross_validate:
        fused, learned = cross_validate(index, queries)
        print(format_report(summarize(fused), "fusion, servers held out"))
        print(format_report(summarize(learned), "learned, servers held out of training"))
    return 0


def _train_abstention(args: argparse.Namespace) -> int:
    from toolsearch.embedding import load_model
    from toolsearch.search.offline.abstention_training import held_out_report, train_profile_abstainer
    from toolsearch.search.offline.training import training_queries_path, unservable_queries_path
    from toolsearch.search.profile import PROFILE_FILE, load_dictionaries, profile_paths
    from toolsearch.search.ranking import Ranker

    try:
        paths = profile_paths(args.model_dir)
        if paths.ranker is None:
            raise ModelError("an abstention model reads a ranker's scores: name a profile with one")
        out = args.abstention_out or paths.abstention or paths.ranker.parent / "abstention"
        models = [load_model(path, threads=args.threads) for path in paths.models]
        dictionaries = load_dictionaries(paths)
        ranker = Ranker.load(paths.ranker)
        if not ranker.fits([model.fingerprint for model in models], dictionaries):
            raise ModelError(f"{paths.ranker} was trained for other models or dictionaries: train it first")
        abstainer, data, held_out = train_profile_abstainer(
            models,
            ranker,
            (args.queries or [training_queries_path()])[0],
            args.unservable or unservable_queries_path(),
            args.catalog,
            dictionaries=dictionaries,
        )
        with staged_directory(out, replace=True) as staging:
            abstainer.save(staging)
        profile_file = paths.ranker.parent / PROFILE_FILE
        if args.abstention_out is None and paths.abstention is None and profile_file.is_file():
            document = json.loads(profile_file.read_text(encoding="utf-8"))
            profile_file.write_text(
                json.dumps({**document, "abstention": out.name}, indent=2) + "\n", "utf-8"
            )
    except (ModelError, OSError, ValueError) as error:
        print(f"toolsearch train: error: {error}", file=sys.stderr)
        return 1
    print(f"an abstention model for {paths.ranker} is in {out}")
    print(held_out_report(data, held_out, abstainer.threshold))
    return 0


def _train_encoder(args: argparse.Namespace) -> int:
    from toolsearch.embedding import load_model
    from toolsearch.embedding.manifest import sha256_file
    from toolsearch.search.offline.encoder_training import Settings, train_query_layers
    from toolsearch.search.offline.evaluation import load_queries
    from toolsearch.search.offline.training import training_queries_path
    from toolsearch.search.profile import profile_paths

    try:
        first = profile_paths(args.model_dir).models[0]
        paths = args.queries or [training_queries_path()]
        queries = [query for path in paths for query in load_queries(path)]
        layers = train_query_layers(
            first,
            load_model(first, threads=args.threads),
            queries,
            Settings(seed=args.seed),
            args.catalog,
            progress=lambda line: print(line, flush=True),
        )
        data = {"queries_sha256": {path.name: sha256_file(path) for path in paths}}
        digest = dataclasses.replace(layers, training={**layers.training, **data}).save(args.encoder)
    except (ModelError, OSError, ValueError) as error:
        print(f"toolsearch train: error: {error}", file=sys.stderr)
        return 1
    print(f"e5's query layers {list(layers.layers)} are in {args.encoder} (sha256 {digest})")
    return 0
