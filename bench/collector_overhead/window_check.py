#!/usr/bin/env python3
"""Checks of a collector trace exported to SQLite (`scalescope export --format
sqlite`), for issue 23's GPU call: per process with kernels, how many kernels
have their launch call in the trace (same correlation id), the launch calls'
median duration, the iteration ranges (ProfilerStep#N) kept, and whether the
launch calls' thread ids are those of the NVTX ranges of the same thread
(CUPTI numbers both; the callbacks path must number them alike).

  window_check.py TRACE.sqlite [EXPECTED_STEPS]

Prints one line per process; with EXPECTED_STEPS, exits 1 unless every
process with kernels holds exactly that many ProfilerStep ranges and a launch
call for at least 99 % of its kernels (CUDA graph replays and NCCL kernels of
driver launches aside, a traced step's kernels all have one).
  window_check.py --self-test
"""
import sqlite3
import statistics
import sys


def check(path, expected_steps=None):
    db = sqlite3.connect(path)
    names = dict(db.execute("select id, value from strings"))
    ok = True
    lines = []
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
        for text_id, thread in db.execute("select text_id, thread from nvtx where process_id = ?", (pid,)):
            if names.get(text_id, "").startswith("ProfilerStep"):
                steps += 1
                nvtx_threads.add(thread)
        share = matched / len(kernels) if kernels else 0.0
        median = statistics.median(durations) if durations else 0
        same_thread = bool(threads & nvtx_threads) if threads and nvtx_threads else None
        lines.append(f"process {pid}: {len(kernels)} kernels, {sum(launches.values())} launch calls, "
                     f"{100 * share:.1f} % of kernels with their launch call, median launch call {median:.0f} ns, "
                     f"{steps} ProfilerStep ranges, launch and NVTX thread ids shared: {same_thread}")
        if expected_steps is not None:
            if steps != expected_steps or share < 0.99 or same_thread is False:
                ok = False
                lines[-1] += f"  FAIL (want {expected_steps} ranges, >= 99 % with launch, shared thread ids)"
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
      create table kernels (process_id integer, correlation integer);
      create table api (process_id integer, start_ns integer, end_ns integer, thread integer, name_id integer,
                        correlation integer);
      create table nvtx (process_id integer, text_id integer, thread integer);
      insert into strings values (1, 'cudaLaunchKernel_v7000'), (2, 'cudaMemcpyAsync'), (3, 'ProfilerStep#4');
      insert into kernels values (1, 10), (1, 11), (1, 12);
      insert into api values (1, 0, 100, 7, 1, 10), (1, 0, 300, 7, 1, 11), (1, 0, 50, 7, 2, 12);
      insert into nvtx values (1, 3, 7), (1, 3, 7);
    """)
    db.commit()
    ok, lines = check(path, 2)
    assert not ok and "66.7 %" in lines[0] and "median launch call 200 ns" in lines[0], lines
    db.execute("insert into api values (1, 0, 200, 7, 1, 12)")
    db.commit()
    ok, lines = check(path, 2)
    assert ok and "100.0 %" in lines[0] and "shared: True" in lines[0], lines
    ok, _ = check(path, 3)
    assert not ok
    print("window_check self-test passed")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    elif len(sys.argv) in (2, 3):
        ok, lines = check(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else None)
        print("\n".join(lines) or "no process with kernels")
        sys.exit(0 if ok else 1)
    else:
        sys.exit("usage: window_check.py TRACE.sqlite [EXPECTED_STEPS] | --self-test")
