"""The official MCP conformance suite against toolsearch, in front of the suite's own fixtures and in
front of the reference server from npm.

Runs both versions of `@modelcontextprotocol/conformance` that tests/node pins, the released one
(protocol 2025-11-25 and before) and the 2026-07-28 prerelease (`--requirements 2026-07-28`), through
`toolsearch serve --pin '*'` (every upstream tool listed as itself, so the suite finds the tools it
calls) in front of two upstreams:

- `toolsearch.testing.conformance.ConformanceUpstream`, the fixtures the suite calls (both eras; for
  the released suite, handshake era only, so that toolsearch speaks `initialize` to it): what fails
  here is what toolsearch cannot carry;
- `@modelcontextprotocol/server-everything` (TypeScript SDK, stateful streamable HTTP), a server
  written by others, which lacks the suite's fixtures.

Each run is checked against its baseline in this folder (`expected-failures-*.yaml`, every entry
with its reason): a scenario failing that is not listed, or listed and passing, fails the run.
Prints each run's scenario counts; exits non-zero if any baseline check failed. Everything it
starts, it stops. Needs the Node packages of scripts/node-packages.sh (`make test` installs them).

    python e2e/conformance/run.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "service"), str(ROOT)]

from tests.support.node import NODE, NODE_MODULES, everything_server  # noqa: E402
from toolsearch.testing import serve_app, serve_proxy_process  # noqa: E402
from toolsearch.testing.conformance import ConformanceUpstream  # noqa: E402

HERE = Path(__file__).resolve().parent
SUITES = {
    "released": ("conformance-released", ()),
    "2026-07-28": ("conformance-2026-07-28", ("--requirements", "2026-07-28")),
}
RUNS = (
    # (suite, upstream, baseline)
    ("released", "conformance-legacy", "expected-failures-released.yaml"),
    ("2026-07-28", "conformance", "expected-failures-2026-07-28.yaml"),
    ("released", "server-everything", "expected-failures-everything-released.yaml"),
    ("2026-07-28", "server-everything", "expected-failures-everything-2026-07-28.yaml"),
)
_TOTAL = re.compile(r"^Total: (\d+) passed, (\d+) failed", re.MULTILINE)
_SCENARIO = re.compile(r"^([✓✗]) \S+: \d+ passed", re.MULTILINE)
_LISTED = re.compile(r"^  ~ ", re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_suite(suite: str, url: str, baseline: str, output: Path) -> tuple[bool, str]:
    """One suite version against `url`: whether its baseline check passed, and its summary lines."""
    package, flags = SUITES[suite]
    command = [
        str(NODE),
        str(NODE_MODULES / package / "dist" / "index.js"),
        "server",
        "--url",
        url,
        *flags,
        "--expected-failures",
        str(HERE / baseline),
        "-o",
        str(output / baseline.removesuffix(".yaml")),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    text = _ANSI.sub("", finished.stdout + finished.stderr)
    summary = text[text.find("=== SUMMARY ===") :] if "=== SUMMARY ===" in text else text[-4000:]
    return finished.returncode == 0, summary


@contextmanager
def upstream_server(name: str) -> Iterator[str]:
    """The MCP URL of the named upstream, served while the block runs."""
    if name == "server-everything":
        with everything_server() as url:
            yield url
        return
    with serve_app(ConformanceUpstream(legacy_only=name == "conformance-legacy").app()) as base:
        yield f"{base}/mcp"


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
        for suite, upstream, baseline in RUNS:
            with upstream_server(upstream) as url, serve_proxy_process(url, "--pin", "*") as proxy:
                passed, summary = run_suite(suite, proxy.url + "/mcp", baseline, output)
            verdict = "ok" if passed else "FAILED"
            print(
                f"\n##### conformance {suite}, in front of {upstream}: {_counts(summary)}; baseline {verdict}"
            )
            print(summary)
            if not passed:
                failed.append(f"{suite} ({upstream})")
    if failed:
        print(f"conformance baseline failed for: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
