"""The Python stack sampler's cost to a pure-Python loop, in-process A/B.

One process, one sampler thread (collect/python/scalescope_bootstrap/
_pystacks.py) running throughout; rounds alternate the window flag on
(sampling at --hz) and off (the thread only polls the flag), each round the
same fixed pure-Python work, timed by wall clock and by process CPU time.
Prints per-round times, the medians, the per-pair slowdown (on / off - 1)
with its median and spread, and the sampler's own CPU time per second of
window as it writes it in its file.

Run: /usr/bin/python3 bench/python_stacks/ab.py [--rounds 10] [--hz 100] [--threads 0]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "collect", "python"))

from scalescope_bootstrap import _pystacks  # noqa: E402


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work():
    """A fixed amount of pure-Python work: calls, arithmetic, a dict."""
    d = {}
    for i in range(300):
        d[i] = fib(20) + sum(k * k for k in range(2000))
    return d


def timed():
    w, c = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - w, time.process_time() - c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--hz", type=float, default=_pystacks.DEFAULT_HZ)
    ap.add_argument("--threads", type=int, default=0, help="extra idle Python threads (each sampled too)")
    a = ap.parse_args()
    stop = threading.Event()
    for _ in range(a.threads):
        threading.Thread(target=stop.wait, daemon=True).start()
    run_dir = tempfile.mkdtemp(prefix="pystacks-ab-")
    sampler = _pystacks.Sampler(run_dir, a.hz)
    sampler.start()
    timed()  # warm-up
    rows = []
    for r in range(a.rounds):
        pair = {}
        order = (True, False) if r % 2 == 0 else (False, True)  # ABBA: neither side always first
        for on in order:
            sampler.window(on)
            time.sleep(0.1)  # the thread sees the flag
            pair[on] = timed()
        sampler.window(False)
        rows.append(pair)
        print("round %2d  on %.3f s wall %.3f s cpu   off %.3f s wall %.3f s cpu" %
              (r + 1, pair[True][0], pair[True][1], pair[False][0], pair[False][1]))
    time.sleep(0.1)
    sampler.write()
    with open(sampler.path()) as f:
        written = json.load(f)
    for k, name in ((0, "wall"), (1, "cpu")):
        on = [p[True][k] for p in rows]
        off = [p[False][k] for p in rows]
        slow = sorted(p[True][k] / p[False][k] - 1 for p in rows)
        print("%-4s median on %.3f s, off %.3f s; slowdown per pair: median %+.2f %%, min %+.2f %%, max %+.2f %%, "
              "interquartile %+.2f .. %+.2f %%" %
              (name, statistics.median(on), statistics.median(off), 100 * statistics.median(slow),
               100 * slow[0], 100 * slow[-1], 100 * slow[len(slow) // 4], 100 * slow[(3 * len(slow)) // 4]))
    print("sampler: %d samples in %.2f s of window (%.0f /s, asked %g Hz), its CPU %.2f ms per second of window, "
          "%d threads seen" % (written["samples"], written["window_seconds"],
                               written["samples"] / max(written["window_seconds"], 1e-9), a.hz,
                               1000 * written["sampler_cpu_per_second"], len(written["threads"])))
    stop.set()


if __name__ == "__main__":
    main()
