#!/usr/bin/env python3
"""A large Kineto trace for the import benchmark: the shared trace's
traceEvents repeated COPIES times, each copy shifted in time by the trace's
span, so the result is one longer profile of the same job (same event mix,
same pretty-printed layout as Kineto writes, so the same JSON bytes per event).

Usage: bench/analysis_speed/make_big_kineto.py IN.json.gz COPIES OUT.json.gz
"""
import gzip
import re
import sys


def main():
    src, copies, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    text = gzip.open(src, "rt", encoding="utf-8").read()
    start = text.index('"traceEvents": [') + len('"traceEvents": [')
    end = text.rindex("]", 0, text.rindex('"traceName"'))
    head, events, tail = text[:start], text[start:end].rstrip(), text[end:]
    ts_re = re.compile(r'"ts": (-?[0-9]+(?:\.[0-9]+)?)')
    stamps = [float(m.group(1)) for m in ts_re.finditer(events)]
    span = max(stamps) - min(stamps) + 1000.0  # microseconds, with a 1 ms gap between copies
    with gzip.open(dst, "wt", encoding="utf-8", compresslevel=6) as out:
        out.write(head)
        for k in range(copies):
            if k:
                out.write(",")
                shift = k * span
                # Keep three decimals, as Kineto writes them.
                out.write(ts_re.sub(lambda m: '"ts": %.3f' % (float(m.group(1)) + shift), events))
            else:
                out.write(events)
        out.write("\n  ")
        out.write(tail)


if __name__ == "__main__":
    main()
