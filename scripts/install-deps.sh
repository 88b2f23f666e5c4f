#!/usr/bin/env bash
# Installs every build, test and report dependency from Debian's packages and
# the npm registry. Idempotent: packages already present are not fetched again.
# Usage: scripts/install-deps.sh [--cli-only]
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git xz-utils python3
  libcli11-dev libfmt-dev nlohmann-json3-dev libsimdjson-dev libzstd-dev zstd zlib1g-dev libdeflate-dev
  libsqlite3-dev sqlite3 libgtest-dev libgmock-dev libbenchmark-dev libboost-math-dev
  libhwloc-dev libnuma-dev libxxhash-dev libre2-dev
  libmimalloc-dev
  libdw-dev
  python3-numpy python3-pandas python3-pytest python3-matplotlib python3-xxhash
)
# Not needed to build and use the command line: clang (the compiler of the
# sanitizer and fuzz build), the study's data set and the browser of the
# report's browser tests.
EXTRA_PACKAGES=(clang libclang-rt-14-dev dataset-fashion-mnist chromium)
# --cli-only: the command line, its tests and the HTML report, nothing more.
[ "${1:-}" = "--cli-only" ] || APT_PACKAGES+=("${EXTRA_PACKAGES[@]}")
# INSTALL_DEPS_LIST=1: print the Debian packages this call would need, install nothing (tests).
if [ "${INSTALL_DEPS_LIST:-}" = "1" ]; then
  printf '%s\n' "${APT_PACKAGES[@]}"
  exit 0
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm may come from outside Debian (the machine image ships its own);
# only ask apt for them when no npm is on the PATH.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "scalescope: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The HTML report bundles a chart library from npm; the browser tests use playwright-core.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -f "$here/report/web/package.json" ] && [ ! -d "$here/report/web/node_modules" ]; then
  (cd "$here/report/web" && npm ci --no-audit --no-fund --loglevel=error)
fi
