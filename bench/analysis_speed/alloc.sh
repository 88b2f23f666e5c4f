#!/bin/bash
# Allocator comparison on one scalescope binary: glibc, glibc with the hugetlb
# tunable, jemalloc and mimalloc (Debian libjemalloc2, libmimalloc2.0) with and without huge
# pages, alternated inside each round. Usage: A=BINARY bench/analysis_speed/alloc.sh TRACE.sstrace ROUNDS
# (CFGS="glibc hugetlb" picks configurations). Appends "cfg wall user sys maxrss_kib" lines to
# /tmp/perf/alloc-<trace name>.txt.
A=${A:-/tmp/perf/scalescope-main}
mkdir -p /tmp/perf
f=$1; rounds=$2
L=/usr/lib/x86_64-linux-gnu
for ((r=0;r<rounds;r++)); do
for cfg in ${CFGS:-glibc hugetlb jemalloc jemalloc-thp mimalloc mimalloc-large}; do
  case $cfg in
    glibc) e="";;
    hugetlb) e="GLIBC_TUNABLES=glibc.malloc.hugetlb=1";;
    jemalloc) e="LD_PRELOAD=$L/libjemalloc.so.2";;
    jemalloc-thp) e="LD_PRELOAD=$L/libjemalloc.so.2 MALLOC_CONF=thp:always,metadata_thp:auto";;
    mimalloc) e="LD_PRELOAD=$L/libmimalloc.so.2";;
    mimalloc-large) e="LD_PRELOAD=$L/libmimalloc.so.2 MIMALLOC_LARGE_OS_PAGES=1";;
  esac
  env $e /usr/bin/time -f "$cfg %e %U %S %M" -a -o /tmp/perf/alloc-$(basename $f).txt $A analyze $f --format csv >/dev/null 2>&1
done; done
