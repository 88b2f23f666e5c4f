#!/usr/bin/env bash
# Runs the workloads' CPU tests with the first Python that has torch,
# torchvision and numpy ($WORKLOADS_PYTHONS, else $PYTHON, python3, /usr/bin/python3); exit 77 (ctest:
# skipped) when there is none, as on CI machines without python3-torch.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for py in ${WORKLOADS_PYTHONS:-${PYTHON:-} python3 /usr/bin/python3}; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import torch, torchvision, numpy' >/dev/null 2>&1; then
    exec "$py" -m unittest discover -s "$here" -p 'test_*.py'
  fi
done
echo "skipped: no Python with torch, torchvision and numpy (Debian: apt-get install python3-torch python3-torchvision)"
exit 77
