"""The command line: every setting is a flag and a TOOLSEARCH_* variable, documented, with clear errors."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
import typing
from pathlib import Path
from typing import Literal

import pytest

from toolsearch.cli import build_parser, main
from toolsearch.commands import COMMANDS
from toolsearch.commands.serve import settings_from_args
from toolsearch.settings import Settings

CONFIGURATION = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def _serve_help() -> str:
    serve = build_parser()._subparsers._group_actions[0].choices["serve"]
    return serve.format_help()


@pytest.mark.parametrize("field", list(Settings.model_fields))
def test_serve_help_lists_every_setting_with_its_variable(field: str) -> None:
    help_text = " ".join(_serve_help().split())
    assert "--" + field.replace("_", "-") in help_text
    assert f"TOOLSEARCH_{field.upper()}" in help_text


@pytest.mark.parametrize(
    "field",
    [name for name, info in Settings.model_fields.items() if typing.get_origin(info.annotation) is Literal],
)
def test_serve_help_shows_the_choices_of_every_enumerated_flag(field: str) -> None:
    choices = ",".join(typing.get_args(Settings.model_fields[field].annotation))
    assert f"--{field.replace('_', '-')} {{{choices}}}" in _serve_help()


def test_serve_help_shows_true_or_false_for_switches() -> None:
    assert "--stats {true,false}" in _serve_help()


@pytest.mark.parametrize("field", list(Settings.model_fields))
def test_configuration_page_documents_every_setting(field: str) -> None:
    page = CONFIGURATION.read_text()
    assert f"`--{field.replace('_', '-')}`" in page
    assert f"`TOOLSEARCH_{field.upper()}`" in page


def test_configuration_table_is_generated_from_settings() -> None:
    script = runpy.run_path(str(CONFIGURATION.parents[1] / "scripts" / "settings_table.py"))
    assert script["settings_table"]() in CONFIGURATION.read_text()


def test_flags_override_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSEARCH_PORT", "9000")
    monkeypatch.setenv("TOOLSEARCH_CATALOG_TTL", "30")
    args = build_parser().parse_args(["serve", "--port", "9100"])
    settings = settings_from_args(args)
    assert (settings.port, settings.catalog_ttl) == (9100, 30.0)


def test_list_flags_take_repeats_and_commas() -> None:
    args = build_parser().parse_args(["serve", "--pin", "a_*,b_*", "--pin", "c"])
    assert settings_from_args(args).pin == ["a_*", "b_*", "c"]


def test_invalid_value_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--upstream", "http://x/mcp", "--max-batch-calls", "500"]) == 2
    assert re.search(r"invalid --max-batch-calls: .*less than or equal to 100", capsys.readouterr().err)


def test_an_upstream_without_its_scheme_is_refused_at_start_with_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve", "--upstream", "localhost:8080/mcp"]) == 2
    err = capsys.readouterr().err
    assert "invalid --upstream: " in err and "e.g. http://localhost:8080/mcp" in err


def test_serve_without_an_upstream_says_how_to_give_one() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolsearch", "serve"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
        timeout=60,
    )
    assert done.returncode == 2
    assert "pass --upstream URL (or set TOOLSEARCH_UPSTREAM)" in done.stderr
    assert "Traceback" not in done.stderr


def _toolsearch(*arguments: str, code: str = "") -> subprocess.CompletedProcess[str]:
    """`toolsearch ARGUMENTS` in a fresh interpreter (after `code`, when given, which runs it)."""
    command = (
        [sys.executable, "-c", code, *arguments] if code else [sys.executable, "-m", "toolsearch", *arguments]
    )
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
        timeout=60,
    )


def test_help_lists_every_command_with_what_it_does() -> None:
    done = _toolsearch("--help")
    assert done.returncode == 0
    listed = re.findall(r"^    (\w+) +\S", done.stdout, re.MULTILINE)
    assert listed == list(COMMANDS)
    description = " ".join(done.stdout.split("\n\n")[1].split())
    assert all(name in description for name in COMMANDS)


def test_help_imports_no_command_module() -> None:
    # Importing the commands loads the MCP SDK, the HTTP server and the search stack: seconds.
    shows_imports = (
        "import sys\nfrom toolsearch.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n"
        "    print(sorted(m for m in sys.modules if m.startswith(('toolsearch.', 'mcp', 'numpy'))))"
    )
    done = _toolsearch("--help", code=shows_imports)
    assert done.stdout.splitlines()[-1] == "['toolsearch.cli', 'toolsearch.commands']"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_answers_its_own_help(name: str) -> None:
    done = _toolsearch(name, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: toolsearch {name}")


def test_model_help_lists_install_fetch_and_import() -> None:
    assert "(install)" in _toolsearch("--help").stdout
    assert "{install,fetch,import}" in _toolsearch("model", "--help").stdout


@pytest.mark.parametrize(
    ("flag", "metavar"),
    [
        ("--model-dir", "DIR"),
        ("--jwt-identity-claims", "CLAIM"),
        ("--pin", "PATTERN"),
        ("--write-tools", "PATTERN"),
    ],
)
def test_list_flags_name_what_their_values_are(flag: str, metavar: str) -> None:
    assert f"{flag} {metavar}" in _serve_help()
