#!/usr/bin/env bash
# Browser tests of the HTML report: node's test runner drives Debian's chromium
# (headless, through playwright-core) over reports made by the given scalescope.
# Screenshots go to build/artifacts/. Usage: scripts/browser-tests.sh PATH_TO_scalescope
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$(realpath "${1:?usage: scripts/browser-tests.sh PATH_TO_scalescope}")"
web="$here/report/web"
if [ ! -d "$web/node_modules/playwright-core" ]; then
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error)
fi
artifacts="${ARTIFACTS:-$here/build/artifacts}"
mkdir -p "$artifacts"
cd "$web"
SCALESCOPE="$bin" ARTIFACTS="$artifacts" node --test --test-reporter=spec test/
