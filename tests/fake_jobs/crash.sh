#!/bin/sh
# Fake job that crashes with a signal (default SEGV).
echo "about to crash"
kill -"${1:-SEGV}" $$
