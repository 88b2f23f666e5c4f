#!/bin/sh
# Fake job that fails: prints an error to stderr and exits with code ${1:-3}.
echo "Traceback: RuntimeError: CUDA out of memory (fake)" >&2
exit "${1:-3}"
