#!/usr/bin/env python3
"""The advisor's root cause, fix and combined estimate on real runs (one GPU).

MobileNetV2 (workloads/image_ddp.py, synthetic data) profiled four times:

  input       a slowed input pipeline: one DataLoader worker and extra CPU work
              per sample (--sample-cpu-us), bf16 + channels_last
  input_fixed the advised fix applied: more workers (same per-sample cost)
  fp32        FP32 without tensor cores (--tf32 off) with NCHW data, the GPU loader
              (input is not the problem)
  fp32_fixed  the advised fixes applied: bf16 autocast and channels_last

Checks, for `input` and `fp32`: the first root cause is the one planted
(loader-bound or input-starvation; mixed-precision or channels-last) and its
fix names the change (num_workers; autocast or channels_last). Then prints
the advisor's combined estimate of fixing those roots against the steady
step time the fixed run measured (1 - fixed / before), for the record.

  bench/advisor_gpu_check/root_causes.py BUILD_DIR OUT_DIR [--python PY] [--steps N]
  bench/advisor_gpu_check/root_causes.py --evaluate OUT_DIR   (re-check saved results, no GPU)

BUILD_DIR holds cli/scalescope and the collector (cmake --build BUILD --target
scalescope scalescope-collector). OUT_DIR gets, per run, <run>.ssrun,
<run>.job.log, <run>.analyze.txt and <run>.json, and checks.txt (the checks
and the estimates) and checks.json. Exit 0 when every check passes, 1 when
one fails, 2 on bad arguments or a machine without CUDA. About 4 x (start-up
+ 40 steps): 3-5 minutes on one H200.
"""

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOAD = os.path.join(REPO, "workloads", "image_ddp.py")

# Extra CPU work per sample in the slowed pipeline: 128 samples x 1 ms is about
# 0.13 s of one worker per step, several times a bf16 step of MobileNetV2 at
# 224 px on an H200; eight workers bring it under the GPU's time.
SAMPLE_CPU_US = 1000
FIXED_WORKERS = 8

COMMON = ["--synthetic", "--image-size", "224", "--batch-size", "128", "--warmup-steps", "5", "--log-every", "0"]
RUNS = {
    "input": ["--loader", "cpu", "--workers", "1", "--sample-cpu-us", str(SAMPLE_CPU_US), "--pin-memory", "on",
              "--channels-last", "on", "--precision", "bf16"],
    "input_fixed": ["--loader", "cpu", "--workers", str(FIXED_WORKERS), "--sample-cpu-us", str(SAMPLE_CPU_US),
                    "--pin-memory", "on", "--channels-last", "on", "--precision", "bf16"],
    "fp32": ["--loader", "gpu", "--channels-last", "off", "--precision", "fp32", "--tf32", "off"],
    "fp32_fixed": ["--loader", "gpu", "--channels-last", "on", "--precision", "bf16"],
}
# run -> (its fixed run, root cause ids accepted first, what the fix must name,
#         the ids whose fixes the fixed run applies)
CASES = {
    "input": ("input_fixed", {"loader-bound", "input-starvation"}, ["num_workers"],
              {"loader-bound", "input-starvation", "pinned-memory", "host-contention"}),
    "fp32": ("fp32_fixed", {"mixed-precision", "channels-last"}, ["autocast", "channels_last"],
             {"mixed-precision", "channels-last", "layout-fallback"}),
}


def fail_usage(message):
    print(f"root_causes.py: {message}", file=sys.stderr)
    sys.exit(2)


def roots(findings):
    return [f for f in findings if f.get("explained_by") is None]


def steady_step_ns(analysis):
    """The steady median step of the first rank, from `analyze --json`."""
    ranks = (analysis.get("analysis") or {}).get("ranks") or []
    if not ranks:
        return None
    it = ranks[0].get("iterations", {})
    value = it.get("steady_median_ns") or it.get("median_ns")
    return float(value) if value else None


def combined_estimate(findings, applied):
    """The combined saving of the roots the fixed run fixes: the deepest root k
    such that roots 1..k are all among `applied` (combined_fraction is that of
    fixing a root and every root above it), or None when the first is not."""
    best = None
    for f in roots(findings):
        if f["id"] not in applied:
            break
        best = f.get("combined_fraction", f.get("saving_fraction"))
    return best


def evaluate(out):
    """Checks the saved analyses in `out`; returns (lines, failed, record)."""
    lines, failed, record = [], 0, {}
    loaded = {}
    for run in RUNS:
        path = os.path.join(out, f"{run}.json")
        try:
            with open(path) as f:
                loaded[run] = json.load(f)
        except (OSError, ValueError) as e:
            loaded[run] = None
            lines.append(f"{run:<12} FAIL  no analysis: {path}: {e}")
            failed += 1
    for run, (fixed, accepted, words, applied) in CASES.items():
        a = loaded.get(run)
        if a is None:
            continue
        findings = a.get("findings", [])
        first = roots(findings)[0] if roots(findings) else None
        ids = " ".join(f["id"] for f in findings) or "none"
        ok_cause = first is not None and first["id"] in accepted
        ok_fix = ok_cause and any(w in first.get("fix", "") for w in words)
        failed += (not ok_cause) + (not ok_fix)
        lines.append(f"{run:<12} {'PASS' if ok_cause else 'FAIL'}  root cause: {first['id'] if first else 'none'} "
                     f"(expected one of {', '.join(sorted(accepted))}; all findings: {ids})")
        lines.append(f"{run:<12} {'PASS' if ok_fix else 'FAIL'}  fix names {' or '.join(words)}: "
                     f"{(first or {}).get('fix', '')[:160]}")
        estimate = combined_estimate(findings, applied)
        before = steady_step_ns(a)
        after = steady_step_ns(loaded[fixed]) if loaded.get(fixed) else None
        measured = 1 - after / before if before and after else None
        shown = lambda v: "n/a" if v is None else f"{100 * v:.1f} %"  # noqa: E731
        lines.append(f"{run:<12} INFO  combined estimate {shown(estimate)} vs measured {shown(measured)} "
                     f"(steady step {before and before / 1e6:.2f} ms -> {after and after / 1e6:.2f} ms in {fixed})"
                     if before and after else
                     f"{run:<12} INFO  combined estimate {shown(estimate)} vs measured n/a (no steady step time)")
        record[run] = {"root_cause": first["id"] if first else None, "fix": (first or {}).get("fix"),
                       "estimated_fraction": estimate, "measured_fraction": measured,
                       "step_ns": before, "fixed_step_ns": after, "findings": [f["id"] for f in findings]}
    lines.append(f"failed checks: {failed}")
    return lines, failed, record


def profile(ss, python, run, out, steps):
    ssrun = os.path.join(out, f"{run}.ssrun")
    cmd = [ss, "profile", "-o", ssrun, "--force", "--", python, WORKLOAD, *COMMON, "--steps", str(steps), *RUNS[run]]
    with open(os.path.join(out, f"{run}.job.log"), "w") as log:
        t0 = time.monotonic()
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        print(f"{run}: profiled in {time.monotonic() - t0:.0f} s (exit {rc})", flush=True)
    if rc != 0:
        return f"profiled job failed (exit {rc}), see {run}.job.log"
    with open(os.path.join(out, f"{run}.analyze.txt"), "w") as txt:
        subprocess.call([ss, "analyze", ssrun], stdout=txt, stderr=subprocess.STDOUT)
    with open(os.path.join(out, f"{run}.json"), "w") as js, open(os.path.join(out, f"{run}.analyze.err"), "w") as err:
        if subprocess.call([ss, "analyze", ssrun, "--json"], stdout=js, stderr=err) != 0:
            return f"analyze failed, see {run}.analyze.err"
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("build", nargs="?", help="build folder holding cli/scalescope and the collector")
    p.add_argument("out", nargs="?", help="folder for the results (created)")
    p.add_argument("--python", default=os.environ.get("PYTHON", "python3"), help="Python with torch (default python3)")
    p.add_argument("--steps", type=int, default=40, help="training steps per run (default 40)")
    p.add_argument("--evaluate", metavar="OUT_DIR", help="only check the results saved in OUT_DIR (no GPU)")
    args = p.parse_args(argv)

    if args.evaluate:
        out = args.evaluate
    else:
        if not args.build or not args.out:
            fail_usage("BUILD_DIR and OUT_DIR are required (or --evaluate OUT_DIR)")
        if args.steps < 15:
            fail_usage("--steps must be at least 15 (5 warm-up steps, then steady ones)")
        ss = os.path.join(args.build, "cli", "scalescope")
        if not os.access(ss, os.X_OK):
            fail_usage(f"{ss} not found or not executable")
        if not os.path.isfile(WORKLOAD):
            fail_usage(f"{WORKLOAD} not found")
        probe = subprocess.run([args.python, "-c", "import torch; print(torch.cuda.is_available())"],
                               capture_output=True, text=True)
        if probe.returncode != 0 or probe.stdout.strip() != "True":
            fail_usage(f"{args.python} has no torch with CUDA here: {(probe.stderr or probe.stdout).strip()[-300:]}")
        out = args.out
        os.makedirs(out, exist_ok=True)
        os.environ.update({"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                           "NVSHMEM_DISABLE_NVLS": "1"})
        for run in RUNS:
            problem = profile(ss, args.python, run, out, args.steps)
            if problem:
                print(f"{run}: {problem}", file=sys.stderr)

    lines, failed, record = evaluate(out)
    with open(os.path.join(out, "checks.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "checks.json"), "w") as f:
        json.dump({"failed": failed, "runs": record}, f, indent=1)
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
