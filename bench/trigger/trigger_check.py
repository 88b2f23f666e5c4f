#!/usr/bin/env python3
"""GPU check of windows on demand (`scalescope trigger`, docs/collector.md
"Windows on demand") on one GPU, with PyTorch and torchvision:

  python3 bench/trigger/trigger_check.py --scalescope build/cli/scalescope --out "$OUT" [--rounds 5] [--steps 2600]

Each round runs the plain MobileNetV2 loop of bench/python_bootstrap/check.py
(`job mobilenet`: fp16 autocast, channels-last, batch 128, no NVTX; the
Python bootstrap's optimizer step marks are the iterations) twice, in
alternating order: with no profiler, and under the default `scalescope
profile` (one sampled window at steps 10-29, then detached). While the
profiled job runs, the driver waits for its progress files to pass step
--at (2,000), runs `scalescope trigger RUN --iterations 20`, and lets the
job finish. Figures per round:
- the window: the trigger's window in run.json (first and last iteration,
  reason "trigger") and the kernels of those steps in the trace
  (`scalescope analyze --window` of the window's iterations);
- zero residue: the median step time from 50 steps after the window's end to
  the end of the job, against the same steps of the unprofiled run.
Results go to OUT/results.json and OUT/summary.txt, written at the end: on one
H100 a profiled run of 2,600 steps takes about 85 s, so 5 rounds need about
15 minutes; use --rounds 3 --steps 2300 inside a 10-minute limit, and go on
in a second call with --first-round 3 --rounds 2. Results are written after
every round.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "..", "python_bootstrap", "check.py")


def last_json_line(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in the job's output")


def progress(run_dir):
    its = []
    for f in glob.glob(os.path.join(run_dir, "control", "progress", "*.json")):
        try:
            with open(f) as fh:
                its.append(json.load(fh)["iteration"])
        except (OSError, ValueError, KeyError):
            pass
    return max(its) if its else -1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scalescope", default="build/cli/scalescope")
    ap.add_argument("--out", default=os.environ.get("OUT", "trigger-check"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=2600)
    ap.add_argument("--at", type=int, default=2000)
    ap.add_argument("--job", choices=["mobilenet", "launches", "gpubound"], default="mobilenet",
                    help="mobilenet: the MobileNetV2 loop; launches: about 600 tiny kernels a step, launch-bound, "
                         "so that anything left on the launch path after the window shows; gpubound: four wide "
                         "bf16 layers, about 9 ms of GPU time a step, so that separate processes agree closely")
    ap.add_argument("--first-round", type=int, default=0,
                    help="number of the first round (a later call goes on with the alternation of an earlier one)")
    args = ap.parse_args()
    ss = os.path.abspath(args.scalescope)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    job = [sys.executable, CHECK, "job", args.job, "--steps", str(args.steps)]
    rounds, summary = [], []
    for r in range(args.first_round, args.first_round + args.rounds):
        res = {}
        for kind in (("plain", "profiled") if r % 2 == 0 else ("profiled", "plain")):
            if kind == "plain":
                p = subprocess.run(job, capture_output=True, text=True, timeout=300)
                if p.returncode != 0:
                    raise RuntimeError("plain job failed: " + p.stderr[-2000:])
                res["plain"] = last_json_line(p.stdout)["step_ms"]
                continue
            run = os.path.join(out, "trig-%d" % r)
            log = open(os.path.join(out, "trig-%d.log" % r), "w")
            proc = subprocess.Popen([ss, "profile", "-o", run, "--force", "--", *job], stdout=subprocess.PIPE,
                                    stderr=log, text=True)
            run_dir = run + ".ssrun"
            t0 = time.monotonic()
            while progress(run_dir) < args.at and proc.poll() is None and time.monotonic() - t0 < 280:
                time.sleep(0.2)
            seen = progress(run_dir)
            trig = subprocess.run([ss, "trigger", run_dir, "--iterations", "20", "--note", "GPU check"],
                                  capture_output=True, text=True)
            stdout, _ = proc.communicate(timeout=300)
            log.close()
            if proc.returncode != 0:
                raise RuntimeError("profiled job failed: see " + log.name)
            with open(os.path.join(run_dir, "run.json")) as f:
                rj = json.load(f)
            windows = [w for p in rj["processes"] for w in (p.get("sampling") or {}).get("windows", [])]
            asked = [w for w in windows if w.get("reason") == "trigger"]
            res["profiled"] = last_json_line(stdout)["step_ms"]
            res["progress_seen"] = seen
            res["trigger_output"] = (trig.stdout + trig.stderr).strip()
            res["windows"] = windows
            if asked:
                w = asked[0]
                a = subprocess.run([ss, "analyze", run_dir, "--json"], capture_output=True, text=True, timeout=300)
                res["analyze_ok"] = a.returncode == 0
                if a.returncode == 0:
                    j = json.loads(a.stdout)
                    ranks = j["analysis"]["ranks"]
                    res["iterations_found"] = [rk["iterations"].get("count") for rk in ranks]
                    res["kernels"] = [rk.get("kernels", {}).get("count") if isinstance(rk.get("kernels"), dict)
                                      else None for rk in ranks]
        prof, plain = res["profiled"], res["plain"]
        asked = [w for w in res["windows"] if w.get("reason") == "trigger"]
        if asked:
            end = asked[0]["last_iteration"] + 1 + 50
            if end < len(prof) - 50:
                res["after_window_ratio"] = statistics.median(prof[end:]) / statistics.median(plain[end:]) - 1
        rounds.append(res)
        summary.append("round %d: progress seen %d, trigger: %s; windows %s; after the window %s" % (
            r, res["progress_seen"], res["trigger_output"],
            [(w["reason"], w["first_iteration"], w.get("last_iteration")) for w in res["windows"]],
            "%+.2f %%" % (100 * res["after_window_ratio"]) if "after_window_ratio" in res else "n/a"))
        write_results(out, rounds, summary)
    write_results(out, rounds, summary)
    print("\n".join(summary))


def write_results(out, rounds, summary):
    """Written after every round, so that a call cut by its time limit keeps the rounds it finished."""
    summary = list(summary)
    ratios = [x["after_window_ratio"] for x in rounds if "after_window_ratio" in x]
    if ratios:
        summary.append("steps after the trigger's window against no profiler: median %+.2f %% over %d rounds "
                       "(%s)" % (100 * statistics.median(ratios), len(ratios),
                                 ", ".join("%+.2f" % (100 * x) for x in ratios)))
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"rounds": rounds, "summary": summary}, f)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")


if __name__ == "__main__":
    main()
