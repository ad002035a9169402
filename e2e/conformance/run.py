"""The official MCP conformance suite against toolsearch, in front of the reference server from npm.

Starts `@modelcontextprotocol/server-everything` (TypeScript SDK, streamable HTTP) and
`toolsearch serve --pin '*'` in front of it (every upstream tool listed as itself, so the suite
finds the tools it calls), then runs both versions of `@modelcontextprotocol/conformance` that
tests/node pins: the released one (protocol 2025-11-25 and before) and the 2026-07-28 prerelease
(`--requirements 2026-07-28`). Each run is checked against its baseline in this folder
(`expected-failures-*.yaml`, every entry with its reason): a scenario failing that is not listed,
or listed and passing, fails the run. Prints each suite's scenario counts; exits non-zero if any
baseline check failed. Everything it starts, it stops. Needs the Node packages of
scripts/node-packages.sh (`make test` installs them).

    python e2e/conformance/run.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "service"), str(ROOT)]

from tests.support.node import NODE, NODE_MODULES, everything_server  # noqa: E402
from toolsearch.testing import serve_proxy_process  # noqa: E402

HERE = Path(__file__).resolve().parent
SUITES = (
    ("released", "conformance-released", ()),
    ("2026-07-28", "conformance-2026-07-28", ("--requirements", "2026-07-28")),
)
_TOTAL = re.compile(r"^Total: (\d+) passed, (\d+) failed", re.MULTILINE)
_SCENARIO = re.compile(r"^([✓✗]) \S+: \d+ passed", re.MULTILINE)
_LISTED = re.compile(r"^  ~ ", re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_suite(name: str, package: str, flags: tuple[str, ...], url: str, output: Path) -> tuple[bool, str]:
    """One suite version against `url`: whether its baseline check passed, and its summary lines."""
    command = [
        str(NODE),
        str(NODE_MODULES / package / "dist" / "index.js"),
        "server",
        "--url",
        url,
        *flags,
        "--expected-failures",
        str(HERE / f"expected-failures-{name}.yaml"),
        "-o",
        str(output / name),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    text = _ANSI.sub("", finished.stdout + finished.stderr)
    summary = text[text.find("=== SUMMARY ===") :] if "=== SUMMARY ===" in text else text[-4000:]
    return finished.returncode == 0, summary


def _counts(summary: str) -> str:
    """Scenarios passed and failed, how many failures the baseline lists, and checks."""
    marks = _SCENARIO.findall(summary)
    listed = len(_LISTED.findall(summary))
    totals = _TOTAL.search(summary)
    checks = f"checks {totals[1]} passed, {totals[2]} failed" if totals else "no check totals"
    scenarios = f"scenarios {marks.count('✓')} passed, {marks.count('✗')} failed"
    return f"{scenarios} ({listed} in the baseline); {checks}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="write the suites' check results under DIR")
    args = parser.parse_args()
    if not NODE.exists():
        print("Node packages missing: run scripts/node-packages.sh (make test does)", file=sys.stderr)
        return 1
    failed = []
    with tempfile.TemporaryDirectory() as scratch:
        output = args.keep or Path(scratch)
        with everything_server() as upstream, serve_proxy_process(upstream, "--pin", "*") as proxy:
            for name, package, flags in SUITES:
                passed, summary = run_suite(name, package, flags, proxy.url + "/mcp", output)
                verdict = "ok" if passed else "FAILED"
                print(f"\n##### conformance {name}: {_counts(summary)}; baseline {verdict}")
                print(summary)
                if not passed:
                    failed.append(name)
    if failed:
        print(f"conformance baseline failed for: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
