#!/usr/bin/env python3
"""Where a window's cost goes: which thread spends the extra CPU,
and in which library its time is spent inside windows against outside.

  python3 cost_where.py blocks ABBA.jsonl
      per job of window_ab.py's blocks: the wall cost (on/off per pair), and
      per thread name the extra CPU per step (on minus off, schedstat), median
      over pairs with the range
  python3 cost_where.py leaves TRACE.sqlite [THREADS]
      from `scalescope export --format sqlite` of an ABBA job: each thread's
      native stack samples (perf task-clock, so samples are CPU time) split
      into those inside a window (the span of a window's ProfilerStep ranges)
      and those outside it but between the first and the last window; the
      share of each leaf module (and the top leaf functions) in and out
  python3 cost_where.py owners TRACE.sqlite
      the same for the main and autograd threads, each sample charged to the
      first library up its stack above the C runtime (malloc or a mutex
      called from CUPTI counts as CUPTI's), with the standard error
  python3 cost_where.py --self-test

Samples count CPU time of a thread, so a module whose share rises inside the
windows is where the extra CPU of that thread goes; with the per-thread CPU of
`blocks` it becomes milliseconds a step."""
import json
import os
import sqlite3
import statistics
import sys
from collections import Counter, defaultdict


def median_range(xs):
    xs = sorted(xs)
    if not xs:
        return "n/a"
    return f"{statistics.median(xs):+.2f} ({xs[0]:+.2f} to {xs[-1]:+.2f})"


def blocks(path):
    by_job = defaultdict(lambda: defaultdict(dict))
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        b = json.loads(line)
        by_job[b["job"]][b["pair"]][b["on"]] = b
    lines = []
    for job, pairs in by_job.items():
        full = [p for p in pairs.values() if True in p and False in p]
        cost = [100.0 * (p[True]["ms_per_step"] / p[False]["ms_per_step"] - 1) for p in full]
        off_ms = [p[False]["ms_per_step"] for p in full]
        lines.append(f"{job}: {len(full)} pairs, in-window cost {median_range(cost)} %, "
                     f"off {statistics.median(off_ms):.2f} ms/step" if full else f"{job}: no whole pair")
        names = sorted({k for p in full for b in p.values() for k in b.get("thread_cpu_ns", {})})
        rows = []
        for name in names:
            on = [p[True].get("thread_cpu_ns", {}).get(name, 0) / 1e6 / p[True]["steps"] for p in full]
            off = [p[False].get("thread_cpu_ns", {}).get(name, 0) / 1e6 / p[False]["steps"] for p in full]
            extra = [a - b for a, b in zip(on, off)]
            rows.append((statistics.median(extra), name, statistics.median(off), statistics.median(on), extra))
        proc = [(p[True]["cpu_seconds"] / p[True]["steps"] - p[False]["cpu_seconds"] / p[False]["steps"]) * 1e3
                for p in full]
        if full:
            lines.append(f"  process CPU, extra ms/step (on - off): {median_range(proc)}")
        for med, name, off_med, on_med, extra in sorted(rows, key=lambda r: -abs(r[0])):
            if abs(off_med) < 0.005 and abs(on_med) < 0.005:
                continue
            lines.append(f"  thread {name:<18} off {off_med:7.3f}  on {on_med:7.3f}  extra {median_range(extra)} ms/step")
    return lines


def windows_of(db):
    """Spans of the traced windows: ProfilerStep ranges (else launch calls and
    kernels) closer than 0.3 s together; windows are 0.6 s apart in window_ab.py."""
    rows = db.execute("""select n.start_ns, n.end_ns from nvtx n join strings s on s.id = n.text_id
                         where s.value like 'ProfilerStep%' and n.end_ns is not null order by n.start_ns""").fetchall()
    steps = len(rows)
    if not rows:  # no NVTX kind traced (--activities kernel): the launch calls and kernels mark the windows
        rows = db.execute("""select start_ns, end_ns from api union all select start_ns, end_ns from kernels
                             order by 1""").fetchall()
    spans = []
    for start, end in rows:
        if spans and start - spans[-1][1] < 300_000_000:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    return spans, steps


def thread_names(db):
    """tid -> thread name, and the main threads' tids."""
    names = {tid: name or "?" for tid, name in db.execute(
        "select h.tid, s.value from host_threads h left join strings s on s.id = h.name_id")}
    return names, {tid for (tid,) in db.execute("select tid from host_threads where is_main = 1")}


def window_samples(db, spans):
    """(inside a window, tid, callsite) of every stack sample between the first
    window's start and the last one's end, in time order."""
    lo, hi = spans[0][0], spans[-1][1]
    k = 0
    for t, tid, cs in db.execute("select time_ns, tid, callsite from host_stack_samples order by time_ns"):
        if t < lo or t > hi:
            continue
        while k < len(spans) and spans[k][1] < t:
            k += 1
        yield k < len(spans) and spans[k][0] <= t, tid, cs


def leaves(path, want_threads=8):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    spans, steps = windows_of(db)
    if not spans:
        return [f"{path}: no ProfilerStep range: no window to compare"]
    lo, hi = spans[0][0], spans[-1][1]
    names, main_tids = thread_names(db)
    leaf = {}
    for cid, fn, mod in db.execute("""select c.id, f.value, m.value from host_callsites c
                                      left join strings f on f.id = c.function_id
                                      left join strings m on m.id = c.module_id"""):
        leaf[cid] = (os.path.basename(mod) if mod else "?", fn or "?")
    inside = defaultdict(Counter)
    outside = defaultdict(Counter)
    fn_in = defaultdict(Counter)
    fn_out = defaultdict(Counter)
    for is_in, tid, cs in window_samples(db, spans):
        mod, fn = leaf.get(cs, ("?", "?"))
        label = ("main " if tid in main_tids else "") + names.get(tid, "?")
        (inside if is_in else outside)[label][mod] += 1
        (fn_in if is_in else fn_out)[label][(mod, fn)] += 1
    in_ns = sum(e - s for s, e in spans)
    lines = [f"{path}: {len(spans)} windows, {steps} ProfilerStep ranges, {in_ns / 1e9:.1f} s inside, "
             f"{(hi - lo - in_ns) / 1e9:.1f} s outside between the first and the last"]
    busiest = sorted(set(inside) | set(outside), key=lambda n: -(sum(inside[n].values()) + sum(outside[n].values())))
    for name in busiest[:want_threads]:
        n_in, n_out = sum(inside[name].values()), sum(outside[name].values())
        lines.append(f"  thread {name}: {n_in} samples inside, {n_out} outside")
        mods = sorted(set(inside[name]) | set(outside[name]),
                      key=lambda m: -(inside[name][m] / max(n_in, 1) - outside[name][m] / max(n_out, 1)))
        for m in mods[:6]:
            a, b = inside[name][m] / max(n_in, 1), outside[name][m] / max(n_out, 1)
            if a < 0.005 and b < 0.005:
                continue
            lines.append(f"    {m:<40} in {100 * a:5.1f} %  out {100 * b:5.1f} %  ({inside[name][m]} / {outside[name][m]})")
        fns = sorted(fn_in[name], key=lambda f: -(fn_in[name][f] / max(n_in, 1) - fn_out[name][f] / max(n_out, 1)))
        for f in fns[:5]:
            a, b = fn_in[name][f] / max(n_in, 1), fn_out[name][f] / max(n_out, 1)
            if a - b < 0.005:
                continue
            lines.append(f"      {f[0]}:{f[1][:60]:<60} in {100 * a:5.1f} %  out {100 * b:5.1f} %")
    return lines


# Leaf modules that only serve their caller: a sample in malloc or a mutex belongs to the library that called it.
RUNTIME_MODULES = ("libc.so.6", "ld-linux-x86-64.so.2", "[vdso]", "libgcc_s.so.1", "libm.so.6")


def owners(path, threads=("main", "pt_autograd_0")):
    """Each sample of the named threads charged to the first module up its stack
    that is not the C runtime (RUNTIME_MODULES, libstdc++): malloc and mutex time
    called from CUPTI is CUPTI's. Shares inside and outside the windows, with
    the binomial standard error of their difference."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    spans, _ = windows_of(db)
    if not spans:
        return [f"{path}: no window to compare"]
    callsites = {}
    for cid, parent, mod in db.execute("""select c.id, c.parent, m.value from host_callsites c
                                          left join strings m on m.id = c.module_id"""):
        callsites[cid] = (parent, os.path.basename(mod) if mod else "?")
    names, main_tids = thread_names(db)

    def owner(cid):
        for _ in range(256):
            if cid not in callsites:
                break
            parent, mod = callsites[cid]
            if mod not in RUNTIME_MODULES and not mod.startswith("libstdc++") and mod != "?" and \
                    not mod.startswith("[stack"):
                return mod
            cid = parent
        return "C runtime only"

    counts = {True: defaultdict(Counter), False: defaultdict(Counter)}
    for is_in, tid, cs in window_samples(db, spans):
        label = "main" if tid in main_tids else names.get(tid, "?")
        if label in threads:
            counts[is_in][label][owner(cs)] += 1
    lines = [f"{path}: samples charged to the calling library (first module above the C runtime)"]
    for label in threads:
        n_in, n_out = sum(counts[True][label].values()), sum(counts[False][label].values())
        if not n_in or not n_out:
            continue
        lines.append(f"  thread {label}: {n_in} samples inside, {n_out} outside")
        rows = []
        for m in set(counts[True][label]) | set(counts[False][label]):
            a, b = counts[True][label][m] / n_in, counts[False][label][m] / n_out
            se = (a * (1 - a) / n_in + b * (1 - b) / n_out) ** 0.5
            rows.append((a - b, m, a, b, se))
        for d, m, a, b, se in sorted(rows, reverse=True)[:4]:
            lines.append(f"    {m:<40} in {100 * a:5.1f} %  out {100 * b:5.1f} %  difference {100 * d:+5.1f} "
                         f"+- {100 * se:.1f} points")
    return lines


def self_test():
    import tempfile
    d = tempfile.mkdtemp()
    ab = os.path.join(d, "ab.jsonl")
    with open(ab, "w") as f:
        for pair in range(4):
            for on in (False, True):
                ms = 10.0 * (1.2 if on else 1.0)
                f.write(json.dumps({"job": "default", "pair": pair, "on": on, "steps": 10, "ms_per_step": ms,
                                    "cpu_seconds": 0.1 + (0.02 if on else 0),
                                    "thread_cpu_ns": {"main": int((12e6 if on else 10e6) * 10),
                                                      "python3": int(1e6 * 10)}}) + "\n")
    out = blocks(ab)
    assert "+20.00 (+20.00 to +20.00) %" in out[0], out
    assert any("thread main" in l and "extra +2.00" in l for l in out), out
    db_path = os.path.join(d, "t.sqlite")
    db = sqlite3.connect(db_path)
    db.executescript("""
      create table strings (id integer primary key, value text);
      create table nvtx (process_id, start_ns, end_ns, kind, domain_id, text_id, thread, device, correlation);
      create table host_threads (process_id, start_ns, end_ns, pid, tid, parent_pid, name_id, is_main, role);
      create table host_callsites (process_id, id, parent, function_id, module_id, address, name_status);
      create table host_stack_samples (process_id, time_ns, pid, tid, callsite);
      insert into strings values (1, 'ProfilerStep#1'), (2, 'python3'), (3, 'cuptiX'), (4, '/x/libcupti.so'),
                                 (5, 'launch'), (6, '/x/libcuda.so');
      insert into nvtx values (0, 1000000000, 1100000000, 'range', 0, 1, 7, -1, 0),
                              (0, 3000000000, 3100000000, 'range', 0, 1, 7, -1, 0);
      create table api (process_id, start_ns, end_ns, thread, domain, callback_id, name_id, correlation, return_code);
      create table kernels (process_id, start_ns, end_ns, device, stream, name_id, grid_x, grid_y, grid_z, block_x,
                            block_y, block_z, registers_per_thread, shared_memory_bytes, correlation);
      insert into host_threads values (0, 0, 0, 7, 7, 1, 2, 1, 'traced');
      insert into host_callsites values (0, 1, -1, 3, 4, 0, 'named'), (0, 2, -1, 5, 6, 0, 'named');
      insert into host_stack_samples values (0, 1050000000, 7, 7, 1), (0, 1060000000, 7, 7, 2),
                                            (0, 2000000000, 7, 7, 2), (0, 2100000000, 7, 7, 2),
                                            (0, 500000000, 7, 7, 1);
    """)
    db.commit()
    out = leaves(db_path)
    assert "2 windows" in out[0], out
    assert any("libcupti.so" in l and "in  50.0 %" in l and "out   0.0 %" in l for l in out), out
    db = sqlite3.connect(db_path)
    db.executescript("""
      insert into strings values (7, 'malloc'), (8, '/lib/libc.so.6');
      insert into host_callsites values (0, 3, 1, 7, 8, 0, 'named');
      insert into host_stack_samples values (0, 3050000000, 7, 7, 3), (0, 3060000000, 7, 7, 2);
    """)
    db.commit()
    out = owners(db_path)
    # inside: cupti leaf, cuda leaf, malloc called from cupti, cuda: cupti 2 of 4; outside: 2 cuda samples
    assert any("libcupti.so" in l and "in  50.0 %" in l and "difference +50.0" in l for l in out), out
    print("cost_where self-test: ok")


def main(argv):
    try:
        return run(argv)
    except (OSError, ValueError, KeyError, sqlite3.Error) as e:
        print(f"cost_where: {' '.join(argv[2:]) or '?'}: {e}", file=sys.stderr)
        return 1


def run(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(argv) >= 3 and argv[1] == "blocks":
        for path in argv[2:]:
            print("\n".join(blocks(path)))
        return 0
    if len(argv) >= 3 and argv[1] == "owners":
        print("\n".join(owners(argv[2])))
        return 0
    if len(argv) >= 3 and argv[1] == "leaves":
        print("\n".join(leaves(argv[2], int(argv[3]) if len(argv) > 3 else 8)))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
