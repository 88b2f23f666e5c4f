#!/usr/bin/env bash
# The README's first command: installs the dependencies, builds the release
# configuration and runs the demo on the embedded data (no GPU needed).
# Usage: scripts/setup.sh [--cli-only] [DEMO_DIR]   (default: ./scalescope-demo)
#   --cli-only: no Chromium, no fuzzing compiler, no study data set
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps=()
if [ "${1:-}" = "--cli-only" ]; then
  deps=(--cli-only)
  shift
fi
"$here/scripts/install-deps.sh" "${deps[@]}"
"$here/scripts/build.sh" release
# `import scalescope` for this user, in Debian's python3 (numpy and pandas from apt).
"$here/scripts/install-python.sh" "$(command -v /usr/bin/python3 || command -v python3)"
"$here/build/cli/scalescope" demo -o "${1:-scalescope-demo}"
