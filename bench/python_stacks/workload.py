"""A CPU-only Python job for the inside/outside comparison: the main process
and two forked workers each run steps of hot() (pure Python, its loop body at
HOT_LINE) for a fixed wall time, then the main process prints one JSON line:
steps of each process, wall seconds, and the CPU seconds of all three.

With SCALESCOPE_BENCH_INSIDE_DIR set, the bootstrap's sampler
(collect/python/scalescope_bootstrap/_pystacks.py) runs in every process at
SCALESCOPE_BENCH_HZ with its window open for the whole run, writing its
python-stacks-*.json files there, as it does inside a window of a real job.

Run: /usr/bin/python3 bench/python_stacks/workload.py SECONDS
"""
import json
import multiprocessing as mp
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HOT_LINE = 27  # the loop body of hot(); checked at start


def hot(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def run(seconds):
    steps = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        hot(20000)
        steps += 1
    return steps


def worker(seconds, q):
    q.put((os.getpid(), run(seconds)))


def main():
    assert hot.__code__.co_firstlineno == HOT_LINE - 3, "HOT_LINE is not hot()'s loop body"
    seconds = float(sys.argv[1])
    inside_dir = os.environ.get("SCALESCOPE_BENCH_INSIDE_DIR")
    if inside_dir:
        sys.path.insert(0, os.path.join(HERE, "..", "..", "collect", "python"))
        import atexit

        from scalescope_bootstrap import _pystacks

        sampler = _pystacks.Sampler(inside_dir, float(os.environ.get("SCALESCOPE_BENCH_HZ", "100")))
        sampler.window(True)
        sampler.start()
        atexit.register(sampler.at_exit)
    mp.set_start_method("fork")
    q = mp.Queue()
    t0 = time.perf_counter()
    workers = [mp.Process(target=worker, args=(seconds, q)) for _ in range(2)]
    for w in workers:
        w.start()
    steps = {os.getpid(): run(seconds)}
    for _ in workers:
        pid, n = q.get()
        steps[pid] = n
    for w in workers:
        w.join()
    wall = time.perf_counter() - t0
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    print(json.dumps({"steps": sum(steps.values()), "per_process": list(steps.values()), "wall_s": wall,
                      "cpu_s": cpu}), flush=True)


if __name__ == "__main__":
    main()
