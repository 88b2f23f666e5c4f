"""Python stacks read inside (the bootstrap's sampler thread) against
outside (collect_python_outside, the reader `scalescope profile
--python-stacks outside` runs): the cost to the profiled job and the frames
each finds, on the same CPU-only job (workload.py: a main process and two
forked workers running hot()).

Each round runs the job three times, once per mode, in a rotating order:
off (no sampling), inside (the sampler in every process, window open) and
outside (the reader on the job's process tree), all at --hz. The cost is
the job's steps per second against off in the same round; the job's own CPU
(all three processes) per step is printed beside it. Frames: the hottest
stack's leaf in each mode's python-stacks files must be hot() at HOT_LINE.

Run: /usr/bin/python3 bench/python_stacks/outside_ab.py --reader build/collect/collect_python_outside
     [--rounds 5] [--seconds 6] [--hz 100] [--json OUT.json]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "workload.py")
MODES = ("off", "inside", "outside")


def hot_line():
    sys.path.insert(0, HERE)
    import workload

    return workload.HOT_LINE


def run_once(mode, args, out_dir):
    env = dict(os.environ)
    if mode == "inside":
        env["SCALESCOPE_BENCH_INSIDE_DIR"] = out_dir
        env["SCALESCOPE_BENCH_HZ"] = str(args.hz)
    job = subprocess.Popen([args.python, WORKLOAD, str(args.seconds)], env=env, stdout=subprocess.PIPE, text=True)
    reader = None
    if mode == "outside":
        reader = subprocess.Popen([args.reader, "--pid", str(job.pid), "--hz", str(args.hz), "--out", out_dir],
                                  stdout=subprocess.PIPE, text=True)
    out, _ = job.communicate()
    notes = ""
    if reader:
        notes, _ = reader.communicate()
        if reader.returncode != 0:
            sys.exit("outside_ab: the reader failed (exit %d)" % reader.returncode)
    if job.returncode != 0:
        sys.exit("outside_ab: the workload failed (exit %d)" % job.returncode)
    r = json.loads(out.strip().splitlines()[-1])
    r["notes"] = notes.strip()
    return r


def frames_found(out_dir, line):
    """Per process file: (hottest leaf as function:line, samples, sampler CPU per second, hot() at line?)."""
    found = []
    for path in sorted(glob.glob(os.path.join(out_dir, "python-stacks-*.json"))):
        with open(path) as f:
            d = json.load(f)
        counts = {}
        for s in d["stacks"]:
            fn, ln = s["frames"][0][2], s["frames"][0][1]
            counts[(fn, ln)] = counts.get((fn, ln), 0) + s["samples"]
        top = max(counts.items(), key=lambda kv: kv[1])[0] if counts else ("-", 0)
        found.append({"pid": d["pid"], "top": "%s:%d" % top, "samples": d["samples"],
                      "rate": d["samples"] / d["window_seconds"] if d["window_seconds"] else 0,
                      "cpu_per_s": d["sampler_cpu_per_second"], "hot": top == ("hot", line)})
    return found


def spread(xs):
    return "%.1f .. %.1f" % (min(xs), max(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reader", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--hz", type=float, default=100)
    ap.add_argument("--json")
    a = ap.parse_args()
    line = hot_line()
    rows = []
    for r in range(a.rounds):
        order = MODES[r % 3:] + MODES[:r % 3]
        for mode in order:
            d = tempfile.mkdtemp(prefix="pystacks-%s-" % mode)
            res = run_once(mode, a, d)
            res.update(mode=mode, round=r, frames=frames_found(d, line))
            res["steps_per_s"] = res["steps"] / a.seconds
            rows.append(res)
            print(json.dumps(res), flush=True)
    print("\nmode     steps/s median (min .. max)  vs off per round, median (min .. max)  job CPU ms/step  files  hot() top")
    for mode in MODES:
        mine = [x for x in rows if x["mode"] == mode]
        sps = [x["steps_per_s"] for x in mine]
        rel = [100 * (x["steps_per_s"] / o["steps_per_s"] - 1) for x in mine
               for o in rows if o["mode"] == "off" and o["round"] == x["round"]]
        cpu = [1000 * x["cpu_s"] / x["steps"] for x in mine]
        files = [len(x["frames"]) for x in mine]
        hot = sum(f["hot"] for x in mine for f in x["frames"])
        print("%-8s %7.1f (%s)              %+6.1f %% (%s)                    %6.2f          %s     %d of %d"
              % (mode, statistics.median(sps), spread(sps), statistics.median(rel), spread(rel),
                 statistics.median(cpu), "/".join(map(str, files)), hot, sum(files)))
        if mode != "off":
            rates = [f["rate"] for x in mine for f in x["frames"]]
            cps = [1000 * f["cpu_per_s"] for x in mine for f in x["frames"]]
            if rates:
                print("         samples/s reached per process median %.1f (%s); sampler CPU ms per s median %.2f (%s)"
                      % (statistics.median(rates), spread(rates), statistics.median(cps), spread(cps)))
    notes = {x["notes"] for x in rows if x["notes"]}
    if notes:
        print("notes:", "; ".join(sorted(notes)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
