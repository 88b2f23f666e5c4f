#!/usr/bin/env python3
"""Choose the step x converge variant by leave-one-benchmark-out cross-validation
on the MLPerf v4.1 curves (docs/scaling.md, bench/RESULTS.md "The model
chosen by cross-validation").

For each benchmark held out, every variant is scored on the other benchmarks'
validation cases only (median |log(predicted/measured)|); the best variant is
then judged on the held-out benchmark's cases. The figures printed under
"nested" never saw the cases they are judged by. The variants: the batch at a
predicted size (a log-linear law in N fitted on the sizes, or the largest
fitted size's per-accelerator batch capped at the largest reference batch),
the progress to converge (a log-linear law in B fitted on the sizes, the
reference convergence points, or those scaled by the fitted sizes' ratio), the
per-step model (k/N + c/B by NNLS, or a power law in N). It also scores: the batch kept, the geometric middle, the time-optimal
batch between kept and per accelerator and its mean with the per-accelerator
prediction; where the default's error comes from (decomposition); and the
held-out coverage of interval variants (symmetric or over the batch range,
one spread or one per extrapolation bucket).
Also the batch that other accelerators' published
submissions of the same benchmark used at the predicted size ("peers"; the
curve's own chip excluded), alone and as "peers at that size, else per GPU",
scored by the same criterion, leave-one-benchmark-out and held-out coverage
(docs/scaling.md, "Tried and rejected"; bench/RESULTS.md, "The batch
other submissions published").

This re-implements the curve building and the model in a few lines to try
variants quickly; its first row reproduces the model `scalescope mlperf
validate` used before the change (17.6 % at 4x) and its chosen row the new
default, so the two implementations check each other.

Usage: bench/mlperf_model_selection.py [examples/mlperf/v4.1-runs.csv]
"""
import collections
import csv
import math
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CANON = {"dlrmv2": "dlrm_dcnv2", "ssd": "retinanet", "gnn": "rgat"}


def load_reference():
    text = (ROOT / "mlperf/reference_convergence.cpp").read_text()
    ref = {}
    for bench, body in re.findall(r'\{"(\w+)",\s*\{(.*?)\}\},', text, re.S):
        ref[bench] = sorted((float(a), float(b)) for a, b in re.findall(r"\{([\d.e+]+), ([\d.e+]+)\}", body))
    return ref


def load_curves(path):
    rows = list(csv.DictReader(open(path)))
    folders = collections.defaultdict(list)
    for r in rows:
        folders[(r["submitter"], r["system"], r["benchmark_folder"])].append(r)
    curves = collections.defaultdict(dict)
    for (sub, system, folder), rs in folders.items():
        if any(r["problem"] for r in rs):
            continue
        bench = CANON.get(folder, folder)
        conv = [r for r in rs if r["converged"] == "yes" and r["minutes"]]
        drop = 4 if bench == "unet3d" else 1
        if len(rs) - len(conv) > drop:
            continue
        t = sorted(float(r["minutes"]) for r in conv)
        t = t[drop:len(t) - (drop - (len(rs) - len(conv)))] if drop - (len(rs) - len(conv)) > 0 else t[drop:]
        if not t:
            continue
        factor = float(rs[0]["scaling_factor"] or 1)
        batches = collections.Counter(int(r["global_batch_size"]) for r in rs if r["global_batch_size"])
        progress = [float(r["progress_at_stop"]) for r in conv if r["progress_at_stop"]]
        acc = re.sub(r"\s+", "-", rs[0]["accelerator"].upper().replace("NVIDIA", "").replace("GOOGLE", "").strip())
        s = dict(N=int(rs[0]["accelerators"]), T=sum(t) / len(t) * factor,
                 B=batches.most_common(1)[0][0] if batches else None,
                 P=sum(progress) / len(progress) * factor if progress and len(progress) == len(conv) else None)
        s.update(bench=bench, family=family(acc))
        c = curves[(bench, acc, rs[0]["division"])]
        if s["N"] not in c or c[s["N"]]["T"] > s["T"]:
            c[s["N"]] = s
    global PEERS
    PEERS = collections.defaultdict(list)  # benchmark -> one list of (N, B) per accelerator, every curve's fastest
    for (bench, acc, _), c in curves.items():
        pts = [(n, c[n]["B"]) for n in sorted(c) if c[n]["B"]]
        if pts:
            PEERS[bench].append((family(acc), pts))
    return {g: [c[n] for n in sorted(c)] for g, c in curves.items() if len(c) >= 4}


PEERS = {}


def family(acc):
    """The accelerator model without its form factor: H100 SXM5, H100 80GB HBM3 and H100 NVL are one
    family, so a curve never sees another listing of its own chip."""
    m = re.search(r"GH200|H100|H200|B200|A100|MI300X|TRILLIUM|V5P|V5E|4090|A5000|7900", acc)
    return m.group(0) if m else acc


def peers_batch(bench, fam, n, nearest):
    """The global batch the other accelerators' published submissions of the benchmark used at n
    accelerators: per accelerator, log-linear in log N between its two sizes around n (its batch at n
    when it ran n); the geometric mean over accelerators. An accelerator whose sizes do not reach n
    on both sides counts only with nearest (then its batch at its nearest size). None without one."""
    logs = []
    for f, pts in PEERS.get(bench, []):
        if f == fam:
            continue
        if pts[0][0] <= n <= pts[-1][0]:
            for (n0, b0), (n1, b1) in zip(pts, pts[1:] + [pts[-1]]):
                if n0 <= n <= n1:
                    w = 0.0 if n1 == n0 else math.log(n / n0) / math.log(n1 / n0)
                    logs.append((1 - w) * math.log(b0) + w * math.log(b1))
                    break
        elif nearest:
            logs.append(math.log(min(pts, key=lambda q: abs(math.log(q[0] / n)))[1]))
    return math.exp(sum(logs) / len(logs)) if logs else None


def nnls2(a, y):
    best = None
    for subset in [(0, 1), (0,), (1,)]:
        if len(subset) == 2:
            a11 = sum(r[0] * r[0] for r in a); a12 = sum(r[0] * r[1] for r in a); a22 = sum(r[1] * r[1] for r in a)
            b1 = sum(r[0] * v for r, v in zip(a, y)); b2 = sum(r[1] * v for r, v in zip(a, y))
            det = a11 * a22 - a12 * a12
            if abs(det) < 1e-18 * max(1, a11 * a22):
                continue
            x = [(b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det]
        else:
            i = subset[0]
            x = [0.0, 0.0]
            x[i] = sum(r[i] * v for r, v in zip(a, y)) / sum(r[i] ** 2 for r in a)
        if min(x) < 0:
            continue
        e = sum((r[0] * x[0] + r[1] * x[1] - v) ** 2 for r, v in zip(a, y))
        if best is None or e < best[0]:
            best = (e, x)
    return best[1]


def log_line(xs, ys, lo, hi):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = min(hi, max(lo, sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx)) if sxx > 1e-12 else 0.0
    return lambda x: my + slope * (x - mx)


def ref_at(ref, b):
    if b <= ref[0][0] or len(ref) == 1:
        return ref[0][1]
    for (b0, p0), (b1, p1) in zip(ref, ref[1:]):
        if b <= b1:
            return p0 + (p1 - p0) * (b - b0) / (b1 - b0)
    (b0, p0), (b1, p1) = ref[-2], ref[-1]
    return p1 * (b / b1) ** max(0.0, min(1.0, math.log(p1 / p0) / math.log(b1 / b0)))


def batch_rules(fit, target, ref):
    """The kept batch (the largest fitted size's) and the per-accelerator one, capped."""
    n = [p["N"] for p in fit]; b = [p["B"] for p in fit]
    return b[-1], min(max(ref[-1][0], b[-1]), b[-1] * target["N"] / n[-1])


def predict(fit, target, ref, v):
    n = [p["N"] for p in fit]; t = [p["T"] for p in fit]; b = [p["B"] for p in fit]; p = [p["P"] for p in fit]
    kept, per_gpu = batch_rules(fit, target, ref)
    if v["batch"] == "planned":
        bt = target["B"]
    elif v["batch"] == "log law":
        bt = math.exp(log_line([math.log(x) for x in n], [math.log(x) for x in b], 0, 1)(math.log(target["N"])))
    elif v["batch"] == "kept":
        bt = kept
    elif v["batch"] == "middle":  # geometric middle of kept and per GPU
        bt = math.sqrt(kept * per_gpu)
    elif v["batch"] in ("fastest", "mean of fastest and per GPU"):
        # the batch between kept and per GPU with the least predicted time: what a submitter would pick
        grid = [kept * (per_gpu / kept) ** (i / 100) for i in range(101)]
        bt = min(grid, key=lambda x: predict(fit, target, ref, dict(v, batch=x)))
        if v["batch"] != "fastest":
            return math.sqrt(predict(fit, target, ref, dict(v, batch=bt)) * predict(fit, target, ref, dict(v, batch=per_gpu)))
    elif v["batch"] in ("peers", "peers, else per GPU"):
        # the batch other accelerators' submissions of the benchmark used at that size (never the curve's own)
        bt = peers_batch(fit[0]["bench"], fit[0]["family"], target["N"], v["batch"] == "peers") or per_gpu
    elif isinstance(v["batch"], float):
        bt = v["batch"]
    else:  # per GPU, capped
        bt = per_gpu
    if v["progress"] == "log law":
        pt = math.exp(log_line([math.log(x) for x in b], [math.log(x) for x in p], 0, 1)(math.log(bt)))
    else:
        scale = 0.0
        if v["progress"] == "reference, scaled":
            scale = sum(math.log(pi / ref_at(ref, bi)) for pi, bi in zip(p, b)) / len(p)
        pt = ref_at(ref, bt) * math.exp(scale)
    if v["step"] == "k/N + c/B":
        x = nnls2([[p[i] / n[i] / t[i], p[i] / b[i] / t[i]] for i in range(len(n))], [1.0] * len(n))
        return pt * (x[0] / target["N"] + x[1] / bt)
    u = log_line([math.log(x) for x in n], [math.log(ti / pi) for ti, pi in zip(t, p)], -1.5, 0)
    return pt * math.exp(u(math.log(target["N"])))


def bucket(f):
    r = math.sqrt(2)
    return "2x" if f < 2 * r else "4x" if f < 4 * r else "8x" if f < 8 * r else "16x+"


def cases_of(curves, refs, v):
    out = []
    for (bench, acc, _), pts in curves.items():
        for k in range(2, len(pts)):
            for t in pts[k:]:
                pr = predict(pts[:k], t, refs[bench], v)
                out.append(dict(bench=bench, curve=f"{bench} on {acc}", fit_max=pts[k - 1]["N"], N=t["N"],
                                f=t["N"] / pts[k - 1]["N"], pred=pr, meas=t["T"]))
    return out


def summary(cases):
    out = []
    for b in ["2x", "4x", "8x", "16x+", "all"]:
        e = [abs(c["pred"] - c["meas"]) / c["meas"] for c in cases if b == "all" or bucket(c["f"]) == b]
        out.append(f"{b} {len(e)} {100 * statistics.median(e):.1f}%")
    return ", ".join(out)


def score(cases):
    return statistics.median(abs(math.log(c["pred"] / c["meas"])) for c in cases)


CHOSEN = dict(batch="per GPU, capped", progress="reference, scaled", step="k/N + c/B")
Z80 = 1.2815515655446004  # z(0.9): an 80 % two-sided interval
LOWER = "kept"  # the batch range's smaller end: "kept" (as scalescope) or "middle" (geometric middle)


def decomposition(curves, refs):
    """Where the default's error comes from: the per-step model alone (the
    measured batch and progress at the predicted size given), then the
    progress from the RCPs at the measured batch (= batch as planned), then
    the batch extrapolated (= the default)."""
    rows = []
    for (bench, acc, _), pts in curves.items():
        for k in range(2, len(pts)):
            for t in pts[k:]:
                fit, ref = pts[:k], refs[bench]
                n = [p["N"] for p in fit]; tt = [p["T"] for p in fit]; b = [p["B"] for p in fit]; p = [p["P"] for p in fit]
                x = nnls2([[p[i] / n[i] / tt[i], p[i] / b[i] / tt[i]] for i in range(len(n))], [1.0] * len(n))
                scale = math.exp(sum(math.log(pi / ref_at(ref, bi)) for pi, bi in zip(p, b)) / len(p))
                rows.append(dict(bench=bench, f=t["N"] / n[-1], meas=t["T"],
                                 step=t["P"] * (x[0] / t["N"] + x[1] / t["B"]),
                                 progress=t["T"] * scale * ref_at(ref, t["B"]) / t["P"],
                                 planned=predict(fit, t, ref, dict(CHOSEN, batch="planned")),
                                 default=predict(fit, t, ref, CHOSEN)))
    print("== where the default's error comes from (median |error| by bucket)")
    for key, what in [("step", "per-step model alone (measured batch and progress given)"),
                      ("progress", "progress model alone (RCP scaled, at the measured batch)"),
                      ("planned", "both (= batch as planned)"), ("default", "and the batch extrapolated (= default)")]:
        print(f"  {what:58s} {summary([dict(r, pred=r[key]) for r in rows])}")


def conformal(scores, level=0.8):
    s = sorted(scores)
    return s[min(len(s), math.ceil((len(s) + 1) * level)) - 1] / Z80


def fit_residual(fit, ref):
    """The fit's own log residual (k, c, scale: len(fit) - 2 degrees of freedom as in the C++); 0 for two points."""
    if len(fit) <= 2:
        return 0.0
    return math.sqrt(sum(math.log(predict(fit, p, ref, dict(CHOSEN, batch="planned")) / p["T"]) ** 2
                         for p in fit) / (len(fit) - 2))


def intervals(curves, refs):
    """Held-out coverage at 80 % (tau from the other benchmarks' cases) of the
    default's interval: symmetric around the prediction (one tau, or one per
    bucket), or from the fastest to the slowest time over the batches between
    kept and per GPU (one tau, or one per bucket)."""
    rows = []
    for (bench, acc, _), pts in curves.items():
        for k in range(2, len(pts)):
            for t in pts[k:]:
                fit, ref = pts[:k], refs[bench]
                resid = fit_residual(fit, ref)
                kept, per_gpu = batch_rules(fit, t, ref)
                lo_b = kept if LOWER == "kept" else math.sqrt(kept * per_gpu)
                times = [predict(fit, t, ref, dict(CHOSEN, batch=lo_b * (per_gpu / lo_b) ** (i / 100))) for i in range(101)]
                f = t["N"] / fit[-1]["N"]
                for planned in (False, True):
                    pr = predict(fit, t, ref, dict(CHOSEN, batch="planned") if planned else CHOSEN)
                    rows.append(dict(bench=bench, f=f, d=1 + math.log2(f), r=resid, meas=t["T"], planned=planned,
                                     pred=pr, lo=pr if planned else min(times), hi=pr if planned else max(times)))
    print(f"== intervals: held-out coverage at 80 % (tau from the other benchmarks), batch range from {LOWER}")
    for planned in (False, True):
        for name, ranged, mondrian in [("symmetric, one tau", False, False), ("symmetric, tau per bucket", False, True),
                                       ("batch range, one tau", True, False), ("batch range, tau per bucket", True, True)]:
            if planned and ranged:
                continue
            mine = [r for r in rows if r["planned"] == planned]
            def outside(r):
                lo, hi = (r["lo"], r["hi"]) if ranged else (r["pred"], r["pred"])
                return max(0.0, math.log(lo / r["meas"]), math.log(r["meas"] / hi))
            cov = collections.defaultdict(list)
            for r in mine:
                tau = conformal([outside(o) / o["d"] for o in mine if o["bench"] != r["bench"] and
                                 (not mondrian or bucket(o["f"]) == bucket(r["f"]))])
                ok = outside(r) <= Z80 * math.sqrt(r["r"] ** 2 + (tau * r["d"]) ** 2)
                cov[bucket(r["f"])].append(ok); cov["all"].append(ok)
            print(f"  {'batch as planned' if planned else 'batch extrapolated':18s} {name:28s} " +
                  ", ".join(f"{b} {100 * sum(cov[b]) / len(cov[b]):.0f}%" for b in ["2x", "4x", "8x", "16x+", "all"]))


def range_coverage(curves, refs, rule):
    """Held-out coverage at 80 % of the interval as scalescope builds it, for a batch rule: the
    fit's residuals, the times over the batches from min(kept, the rule's) to max(per GPU, the
    rule's), tau per bucket from the other benchmarks' cases (as intervals(), "batch range, tau
    per bucket")."""
    rows = []
    for (bench, acc, _), pts in curves.items():
        for k in range(2, len(pts)):
            for t in pts[k:]:
                fit, ref = pts[:k], refs[bench]
                resid = fit_residual(fit, ref)
                kept, per_gpu = batch_rules(fit, t, ref)
                bt = per_gpu
                if rule != "per GPU, capped":
                    bt = peers_batch(bench, fit[0]["family"], t["N"], rule == "peers") or per_gpu
                lo_b, hi_b = min(kept, bt), max(per_gpu, bt)
                times = [predict(fit, t, ref, dict(CHOSEN, batch=lo_b * (hi_b / lo_b) ** (i / 100))) for i in range(101)]
                f = t["N"] / fit[-1]["N"]
                out = max(0.0, math.log(min(times) / t["T"]), math.log(t["T"] / max(times)))
                rows.append(dict(bench=bench, f=f, d=1 + math.log2(f), r=resid, out=out))
    cov = collections.defaultdict(list)
    for r in rows:
        tau = conformal([o["out"] / o["d"] for o in rows if o["bench"] != r["bench"] and bucket(o["f"]) == bucket(r["f"])])
        ok = r["out"] <= Z80 * math.sqrt(r["r"] ** 2 + (tau * r["d"]) ** 2)
        cov[bucket(r["f"])].append(ok); cov["all"].append(ok)
    return cov


def peers_section(curves, refs):
    """The batch other accelerators' submissions used at the predicted size.
    Scored by the fixed criterion against the default, with per-bucket medians and worst, the
    cases where peers exist at that size, leave-one-benchmark-out over the three rules, and the
    held-out coverage of the 80 % interval with the batch range widened to the rule's batch
    (range_coverage)."""
    names = [("per GPU, capped", "default: per GPU, capped"), ("peers", "peers (nearest size outside their range)"),
             ("peers, else per GPU", "peers at that size, else per GPU")]
    print("== the peers' batch (other accelerators' published submissions of the benchmark at that size)")
    per = {}
    for b, what in names:
        cs = cases_of(curves, refs, dict(CHOSEN, batch=b))
        per[b] = cs
        worst = {bk: max((abs(c["pred"] - c["meas"]) / c["meas"], c) for c in cs if bk == "all" or bucket(c["f"]) == bk)
                 for bk in ["2x", "4x", "8x", "16x+", "all"]}
        print(f"  {what:42s} median |log error| {score(cs):.4f}; {summary(cs)}")
        print(f"  {'':42s} worst " + ", ".join(f"{bk} {100 * w[0]:.1f}%" for bk, w in worst.items()) +
              f" ({worst['all'][1]['curve']}, fitted up to {worst['all'][1]['fit_max']}, at {worst['all'][1]['N']})")
        cov = range_coverage(curves, refs, b)
        print(f"  {'':42s} held-out coverage at 80 %, batch range, tau per bucket: " +
              ", ".join(f"{bk} {100 * sum(cov[bk]) / len(cov[bk]):.0f}%" for bk in ["2x", "4x", "8x", "16x+", "all"]))
    print("  cases with peers at the predicted size (batch: measured / peers / per GPU; error: peers / per GPU):")
    n = 0
    for (bench, acc, _), pts in curves.items():
        for k in range(2, len(pts)):
            for t in pts[k:]:
                pb = peers_batch(bench, pts[0]["family"], t["N"], False)
                if pb is None:
                    continue
                n += 1
                kept, per_gpu = batch_rules(pts[:k], t, refs[bench])
                e = [predict(pts[:k], t, refs[bench], dict(CHOSEN, batch=b)) / t["T"] - 1 for b in ("peers, else per GPU", "per GPU, capped")]
                print(f"    {bench} on {acc}, fitted up to {pts[k - 1]['N']}, at {t['N']} ({bucket(t['N'] / pts[k - 1]['N'])}): "
                      f"batch {t['B']} / {pb:.0f} / {per_gpu:.0f}; error {100 * e[0]:+.1f}% / {100 * e[1]:+.1f}%")
    print(f"  {n} of {len(per['peers'])} cases have peers at the predicted size")
    variants = [dict(batch=b, progress=p, step=st) for b, _ in names
                for p in ["log law", "reference", "reference, scaled"] for st in ["k/N + c/B", "power law"]]
    results = [cases_of(curves, refs, v) for v in variants]
    held = []
    for bench in sorted({c["bench"] for c in results[0]}):
        best = min(range(len(variants)), key=lambda i: score([c for c in results[i] if c["bench"] != bench]))
        print(f"  without {bench:17s} chose batch {variants[best]['batch']}, progress {variants[best]['progress']}, "
              f"step {variants[best]['step']}")
        held += [c for c in results[best] if c["bench"] == bench]
    print(f"  nested over these three rules: {summary(held)}")


def main():
    curves = load_curves(sys.argv[1] if len(sys.argv) > 1 else ROOT / "examples/mlperf/v4.1-runs.csv")
    refs = load_reference()
    global LOWER
    decomposition(curves, refs)
    peers_section(curves, refs)
    for LOWER in ("kept", "middle"):
        intervals(curves, refs)
    for setting, batches in [("batch extrapolated", ["log law", "per GPU, capped", "kept", "middle", "fastest",
                                                     "mean of fastest and per GPU", "peers", "peers, else per GPU"]),
                             ("batch as planned", ["planned"])]:
        variants = [dict(batch=b, progress=p, step=s) for b in batches
                    for p in ["log law", "reference", "reference, scaled"] for s in ["k/N + c/B", "power law"]]
        results = [cases_of(curves, refs, v) for v in variants]
        print(f"== {setting}: every variant on every case (in-sample; for reference only)")
        for v, cs in zip(variants, results):
            print(f"  batch {v['batch']:16s} progress {v['progress']:18s} step {v['step']:10s} {summary(cs)}")
        print(f"== {setting}: leave-one-benchmark-out choice (nested)")
        held = []
        for bench in sorted({c["bench"] for c in results[0]}):
            best = min(range(len(variants)), key=lambda i: score([c for c in results[i] if c["bench"] != bench]))
            v = variants[best]
            print(f"  without {bench:17s} chose batch {v['batch']}, progress {v['progress']}, step {v['step']}")
            held += [c for c in results[best] if c["bench"] == bench]
        print(f"  nested: {summary(held)}")
        best = min(range(len(variants)), key=lambda i: score(results[i]))
        v = variants[best]
        print(f"  on every benchmark: chose batch {v['batch']}, progress {v['progress']}, step {v['step']} "
              f"(median |log error| {score(results[best]):.4f}; the runner-up {sorted(score(r) for r in results)[1]:.4f})")


if __name__ == "__main__":
    main()
