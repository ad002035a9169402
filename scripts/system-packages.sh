#!/usr/bin/env bash
# Debian packages: `system-packages.sh profile` installs those the search profile is made from,
# FreeDict's dictionaries into English (`toolsearch model install` makes the profile's bilingual
# dictionaries from them; tests/search/test_freedict.py keeps this list equal to
# `search.freedict.DEBIAN_PACKAGES`); `system-packages.sh` installs those and what the tests use:
# redis-server (shared catalog store), redis-tools' redis-cli (it makes the Redis Cluster of the
# cluster tests), nginx (the replicas e2e), npm (it installs the Node packages of
# scripts/node-packages.sh) and prometheus' promtool (it checks the chart's alerts and dashboard
# queries).
# Installed only when missing and when apt-get can be used (root); otherwise the commands and tests
# that need them say what is missing.
set -euo pipefail
DICTIONARIES=(deu-eng spa-eng eng-spa fra-eng eng-fra jpn-eng lit-eng eng-lit)
missing=()
for dictionary in "${DICTIONARIES[@]}"; do
  [ -f "/usr/share/dictd/freedict-$dictionary.index" ] || missing+=("dict-freedict-$dictionary")
done
if [ "${1:-}" != "profile" ]; then
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
  command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: ${missing[*]} not installed and apt-get unavailable; what needs them will say so" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
