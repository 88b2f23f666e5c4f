#!/usr/bin/env python3
"""Checks of a collector trace exported to SQLite (`scalescope export --format
sqlite`), for the collector's GPU cost calls: per process with kernels, how many kernels
have their launch call in the trace (same correlation id), the launch calls'
median duration, the iteration ranges (ProfilerStep#N) kept, and whether the
launch calls' thread ids are those of the NVTX ranges of the same thread
(CUPTI numbers both; the callbacks path must number them alike).

  window_check.py TRACE.sqlite [EXPECTED_STEPS [SKIP:K:EVERY:TOTAL]]

Prints one line per process; with EXPECTED_STEPS, exits 1 unless every
process with kernels holds exactly that many ProfilerStep ranges and a launch
call for at least 99 % of its kernels (CUDA graph replays and NCCL kernels of
driver launches aside, a traced step's kernels all have one), and the trace
counts no malformed event (an NVTX range end without its start is one). With
a schedule (the collector's --skip-iterations, --iterations, --repeat-every
and the job's step count), the ranges must be exactly ProfilerStep#N for the
traced N, each once. Each line also gives the GPU's busy share of the traced
steps (kernels, copies and sets merged, inside each ProfilerStep range: a
launch-bound step leaves the GPU idle between kernels) and the kernels per
step.
  window_check.py --self-test
"""
import sqlite3
import statistics
import sys


def traced_steps(skip, active, every, total):
    """The step numbers a sampled schedule traces (collect/iteration_sampler.hpp's SampleSchedule)."""
    return [i for i in range(skip, total) if (i - skip) % every < active] if every else \
        [i for i in range(skip, min(skip + active, total))]


def busy_share(intervals, ranges):
    """Share of the ranges' total time covered by the union of intervals (both lists of (start, end))."""
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    import bisect
    starts = [m[0] for m in merged]
    covered = total = 0
    for rs, re_ in ranges:
        total += re_ - rs
        k = max(bisect.bisect_right(starts, rs) - 1, 0)
        while k < len(merged) and merged[k][0] < re_:
            covered += max(0, min(re_, merged[k][1]) - max(rs, merged[k][0]))
            k += 1
    return covered / total if total else 0.0


def check(path, expected_steps=None, schedule=None):
    db = sqlite3.connect(path)
    names = dict(db.execute("select id, value from strings"))
    ok = True
    lines = []
    malformed = {}
    try:
        for pid, count in db.execute("select process_id, count from problems where problem = 'malformed_event'"):
            malformed[pid] = malformed.get(pid, 0) + count
    except sqlite3.OperationalError:
        pass
    for (pid,) in db.execute("select distinct process_id from kernels"):
        kernels = [c for (c,) in db.execute("select correlation from kernels where process_id = ?", (pid,))]
        launches = {}
        threads = set()
        durations = []
        for start, end, thread, name_id, corr in db.execute(
                "select start_ns, end_ns, thread, name_id, correlation from api where process_id = ?", (pid,)):
            if "launch" not in names.get(name_id, "").lower():
                continue
            launches[corr] = launches.get(corr, 0) + 1
            threads.add(thread)
            durations.append(end - start)
        matched = sum(1 for c in kernels if c in launches)
        steps = 0
        nvtx_threads = set()
        numbers = []
        step_ranges = []
        for text_id, thread, start, end in db.execute(
                "select text_id, thread, start_ns, end_ns from nvtx where process_id = ?", (pid,)):
            text = names.get(text_id, "")
            if text.startswith("ProfilerStep"):
                steps += 1
                nvtx_threads.add(thread)
                step_ranges.append((start, end))
                n = text.partition("#")[2]
                numbers.append(int(n) if n.isdigit() else -1)
        gpu = [(s, e) for table in ("kernels", "memcpy", "memset")
               for s, e in db.execute(f"select start_ns, end_ns from {table} where process_id = ?", (pid,))]
        busy = busy_share(gpu, step_ranges)
        share = matched / len(kernels) if kernels else 0.0
        median = statistics.median(durations) if durations else 0
        same_thread = bool(threads & nvtx_threads) if threads and nvtx_threads else None
        numbers.sort()
        shown = f"#{numbers[0]}..#{numbers[-1]}" if numbers else "none"
        lines.append(f"process {pid}: {len(kernels)} kernels, {sum(launches.values())} launch calls, "
                     f"{100 * share:.1f} % of kernels with their launch call, median launch call {median:.0f} ns, "
                     f"{steps} ProfilerStep ranges ({shown}), malformed events {malformed.get(pid, 0)}, "
                     f"launch and NVTX thread ids shared: {same_thread}; GPU busy {100 * busy:.1f} % of the "
                     f"traced steps, {len(kernels) / steps if steps else 0:.0f} kernels a step")
        if expected_steps is not None:
            want = traced_steps(*schedule) if schedule else None
            if (steps != expected_steps or share < 0.99 or same_thread is False or malformed.get(pid, 0) > 0
                    or (want is not None and numbers != want)):
                ok = False
                lines[-1] += (f"  FAIL (want {expected_steps} ranges" + (f" #{want[0]}..#{want[-1]} by the schedule"
                              if want else "") + ", >= 99 % with launch, shared thread ids, no malformed event)")
            else:
                lines[-1] += "  PASS"
    return ok, lines


def self_test():
    import os
    import tempfile
    path = os.path.join(tempfile.mkdtemp(), "t.sqlite")
    db = sqlite3.connect(path)
    db.executescript("""
      create table strings (id integer primary key, value text);
      create table kernels (process_id integer, correlation integer, start_ns integer, end_ns integer);
      create table api (process_id integer, start_ns integer, end_ns integer, thread integer, name_id integer,
                        correlation integer);
      create table nvtx (process_id integer, text_id integer, thread integer, start_ns integer, end_ns integer);
      create table memcpy (process_id integer, start_ns integer, end_ns integer);
      create table memset (process_id integer, start_ns integer, end_ns integer);
      create table problems (process_id integer, problem text, severity text, count integer);
      insert into strings values (1, 'cudaLaunchKernel_v7000'), (2, 'cudaMemcpyAsync'), (3, 'ProfilerStep#4'),
                                 (4, 'ProfilerStep#5');
      insert into kernels values (1, 10, 0, 30), (1, 11, 20, 40), (1, 12, 150, 160);
      insert into memcpy values (1, 60, 70);
      insert into api values (1, 0, 100, 7, 1, 10), (1, 0, 300, 7, 1, 11), (1, 0, 50, 7, 2, 12);
      insert into nvtx values (1, 3, 7, 0, 100), (1, 4, 7, 100, 200);
    """)
    db.commit()
    ok, lines = check(path, 2)
    assert not ok and "66.7 %" in lines[0] and "median launch call 200 ns" in lines[0], lines
    # Kernels 0-40 (merged), copy 60-70, kernel 150-160 over steps 0-200: 60 of 200 ns.
    assert "GPU busy 30.0 %" in lines[0] and "(#4..#5)" in lines[0], lines
    db.execute("insert into api values (1, 0, 200, 7, 1, 12)")
    db.commit()
    ok, lines = check(path, 2)
    assert ok and "100.0 %" in lines[0] and "shared: True" in lines[0], lines
    ok, _ = check(path, 3)
    assert not ok
    assert check(path, 2, (4, 2, 0, 10))[0] and not check(path, 2, (3, 2, 0, 10))[0]
    assert traced_steps(10, 5, 20, 50) == [10, 11, 12, 13, 14, 30, 31, 32, 33, 34]
    db.execute("insert into problems values (1, 'malformed_event', 'warning', 1)")
    db.commit()
    ok, lines = check(path, 2)
    assert not ok and "malformed events 1" in lines[0], lines
    print("window_check self-test passed")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    elif len(sys.argv) in (2, 3, 4):
        ok, lines = check(sys.argv[1], int(sys.argv[2]) if len(sys.argv) >= 3 else None,
                          tuple(int(x) for x in sys.argv[3].split(":")) if len(sys.argv) == 4 else None)
        print("\n".join(lines) or "no process with kernels")
        sys.exit(0 if ok else 1)
    else:
        sys.exit("usage: window_check.py TRACE.sqlite [EXPECTED_STEPS [SKIP:K:EVERY:TOTAL]] | --self-test")
