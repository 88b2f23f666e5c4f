#!/usr/bin/env python3
"""Whether any CUPTI code runs on the job's threads between and after
windows: from `scalescope export --format sqlite` of a profiled run with
host stack samples (the default), the share of the main thread's samples
whose stack holds a frame in libcupti, in four spans:
  inside windows (between a window's first and last kernel),
  between windows (from 1 s after one window's last kernel to 1 s before
    the next one's first: the attach before a window is not counted),
  after the last window (from 1 s after its last kernel to the end).

  python3 bench/trigger/cupti_share.py TRACE.sqlite
"""
import sqlite3
import sys

GAP_NS = 200_000_000  # kernels further apart than this belong to different windows
EDGE_NS = 1_000_000_000


def main(path):
    db = sqlite3.connect(path)
    strings = dict(db.execute("select id, value from strings"))
    parent, in_cupti = {}, {}
    for p, cid, par, mod in db.execute("select process_id, id, parent, module_id from host_callsites"):
        parent[(p, cid)] = (p, par) if par else None
        in_cupti[(p, cid)] = "libcupti" in strings.get(mod, "")  # module_id: the module path's string id

    def touches(p, cid):
        key = (p, cid)
        while key is not None:
            if in_cupti.get(key):
                return True
            key = parent.get(key)
        return False

    starts = sorted(db.execute("select start_ns, end_ns from kernels"))
    windows = []
    for s, e in starts:
        if windows and s - windows[-1][1] < GAP_NS:
            windows[-1][1] = max(windows[-1][1], e)
        else:
            windows.append([s, e])
    pids = {p for p, in db.execute("select distinct pid from host_stack_samples")}
    spans = {"inside windows": [(a, b) for a, b in windows],
             "between windows": [(windows[i][1] + EDGE_NS, windows[i + 1][0] - EDGE_NS) for i in range(len(windows) - 1)],
             "after the last window": [(windows[-1][1] + EDGE_NS, 1 << 62)] if windows else []}
    counts = {k: [0, 0] for k in spans}
    for p, t, pid, tid, cid in db.execute("select process_id, time_ns, pid, tid, callsite from host_stack_samples"):
        if tid != pid:
            continue
        for name, ranges in spans.items():
            if any(a <= t < b for a, b in ranges):
                counts[name][0] += 1
                counts[name][1] += touches(p, cid)
    print("windows (by kernels):", [(round((b - a) / 1e6, 1)) for a, b in windows], "ms long")
    for name, (n, c) in counts.items():
        share = 100.0 * c / n if n else float("nan")
        print(f"{name}: {n} main-thread samples, {c} with a libcupti frame ({share:.2f} %)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
