#!/usr/bin/env bash
# Makes `import scalescope` work for the user who runs it, in the Python given
# (default python3): a scalescope.pth in that Python's user site-packages (in
# a virtualenv: the venv's site-packages)
# pointing at this checkout's python/ folder. The package finds the library at
# build/capi/libscalescope.so of the same checkout (or $SCALESCOPE_LIBRARY).
# Usage: scripts/install-python.sh [PYTHON]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${1:-python3}"
# A virtualenv ignores the user site: there the .pth goes into the venv's own.
site="$("$py" -c 'import site, sys; print(site.getsitepackages()[0] if sys.prefix != sys.base_prefix else site.getusersitepackages())')"
mkdir -p "$site"
echo "$here/python" > "$site/scalescope.pth"
if "$py" -c 'import scalescope' 2>/dev/null; then
  echo "scalescope: 'import scalescope' works in $py ($site/scalescope.pth)"
else
  echo "scalescope: wrote $site/scalescope.pth; 'import scalescope' still fails in $py:" >&2
  "$py" -c 'import scalescope' 2>&1 | tail -1 >&2 || true
fi
