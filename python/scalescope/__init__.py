"""scalescope from Python: traces, analyses, sweeps and MLPerf results as
pandas DataFrames, through libscalescope (the C library of the CLI's own code,
loaded with ctypes; no compiled extension). docs/python.md is the guide.

    import scalescope
    run = scalescope.open("run.ssrun")        # or .sstrace, Kineto .json(.gz), a folder
    k = run.ranks[0].kernels                  # DataFrame over the trace's memory
    a = run.analyze(window="it5:it50")        # the numbers of `scalescope analyze --json`
    a.breakdown, [f.id for f in a.findings]
"""

import json as _json
import os as _os
import sys as _sys

try:
    import numpy as _numpy  # noqa: F401 - checked first, for the message below
except ImportError as _e:
    raise ModuleNotFoundError(
        f"scalescope needs numpy and pandas, and {_sys.executable} cannot import numpy ({_e}); "
        "install them: apt-get install python3-numpy python3-pandas (Debian's python3), "
        "or pip install numpy pandas (a virtualenv)", name="numpy") from None

from ._lib import ScalescopeError, encode as _encode, lib as _lib, path as _path, take_text as _take
from .analysis import Analysis, Diff, Finding
from .run import TABLES, Rank, Run, Stats
from . import mlperf
from . import _frames

__all__ = ["open", "diff", "sweep", "report", "mlperf", "Run", "Rank", "Analysis", "Diff", "Finding", "Stats", "Sweep",
           "ScalescopeError", "TABLES", "__version__", "library_path"]

__version__ = _lib.ss_version().decode()
library_path = _lib.path  #: the libscalescope.so in use


def open(path):  # noqa: A001 - the API's fixed name
    """Loads a run: a .sstrace file, a .ssrun run directory, a Kineto
    .json/.json.gz, or a folder of them (any input `scalescope analyze` takes).
    Raises ScalescopeError with the CLI's message when it cannot be read."""
    return Run(path)


def _run(x):
    return x if isinstance(x, Run) else open(x)


def diff(a, b, window=None, iteration_range=None, classes=None, top=15):
    """What changed from run a to run b (paths or Runs), as `scalescope diff --json`."""
    ra, rb = _run(a), _run(b)
    options = {"window": window, "iteration_range": iteration_range, "top": int(top)}
    if classes is not None:
        options["classes_path"] = _path(classes)
    raw = _take(_lib.ss_diff_json(ra._handle.ptr, rb._handle.ptr, _json.dumps(options).encode()))
    return Diff(_json.loads(raw))


class Sweep:
    """A sweep database: its runs and the scaling study, as `scalescope scaling
    --format json` gives them (.json: that whole object)."""

    def __init__(self, raw):
        self.json = raw
        s = raw["sweep"]
        self.path, self.metric, self.higher_is_better = s["path"], s["metric"], s["higher_is_better"]
        self.spec = s["spec"]
        self.planned_runs = s["planned_runs"]
        self.scaling_error = raw.get("scaling_error")  #: why there is no study (no run measured the metric)
        self.study = raw["scaling"]  #: the typed study (dict), None with scaling_error

    def __repr__(self):
        return f"<scalescope.Sweep {self.path}: {len(self.json['sweep']['runs'])} runs, metric {self.metric}>"

    @property
    def runs(self):
        """One row per run: id, plan_index, gpus, nodes, rep, status, exit_code,
        signal, wall_s, start_unix, end_unix, one column per config key
        (config.<key>) and per metric (metric.<name>), log_path, trace_path, run_dir, note,
        and the Slurm job's fields (slurm.<field>) for a `--scheduler slurm` sweep."""
        pd = _frames.pandas("Sweep.runs")
        rows = []
        for r in self.json["sweep"]["runs"]:
            row = {k: v for k, v in r.items() if k not in ("config", "metrics", "slurm")}
            row.update({f"config.{k}": v for k, v in r["config"].items()})
            row.update({f"metric.{k}": v for k, v in r["metrics"].items()})
            row.update({f"slurm.{k}": v for k, v in (r.get("slurm") or {}).items()})
            rows.append(row)
        return pd.DataFrame.from_records(rows) if rows else pd.DataFrame()

    def _configs(self):
        return (self.study or {}).get("configs", [])

    @property
    def slurm_jobs(self):
        """A `--scheduler slurm` sweep's jobs, one row per run that has one: run
        (its plan index), config, gpus, rep, job_id, state, exit_code, nodelist,
        gpus_allocated, queued_s (the "Slurm jobs" table of `scalescope
        scaling`); no rows for a sweep run without Slurm."""
        rows = []
        for r in self.json["sweep"]["runs"]:
            job = r.get("slurm")
            if not job:
                continue
            rows.append({"run": r["plan_index"], "config": " ".join(f"{k}={v}" for k, v in r["config"].items()),
                         "gpus": r["gpus"], "rep": r["rep"], "job_id": job["job_id"], "state": job["state"],
                         "exit_code": job["exit_code"], "nodelist": job["nodelist"], "gpus_allocated": job["gpus"],
                         "queued_s": job["queued_s"]})
        cols = ["run", "config", "gpus", "rep", "job_id", "state", "exit_code", "nodelist", "gpus_allocated",
                "queued_s"]
        return _frames.records(rows, cols, "Sweep.slurm_jobs")

    @property
    def scaling(self):
        """One row per configuration and GPU count: the median time per unit of
        work with its CI, speedup and efficiency E' with theirs, GPU-hours,
        the median energy in joules, cost, and whether the count is on the
        time vs GPU-hours Pareto front (the columns of `scalescope scaling`)."""
        cols = ["config", "gpus", "n", "median", "ci_low", "ci_high", "speedup", "speedup_low", "speedup_high",
                "efficiency", "efficiency_low", "efficiency_high", "gpu_hours", "energy_j", "cost", "pareto"]
        rows = []
        for c in self._configs():
            for r in (c["scaling"] or {}).get("rows", []):
                t = r["time"]
                rows.append({"config": c["label"], "gpus": r["gpus"], "n": t["n"], "median": t["median"],
                             "ci_low": t["ci_low"], "ci_high": t["ci_high"], "speedup": r["speedup"],
                             "speedup_low": r["speedup_ci"][0], "speedup_high": r["speedup_ci"][1],
                             "efficiency": r["efficiency"], "efficiency_low": r["efficiency_ci"][0],
                             "efficiency_high": r["efficiency_ci"][1], "gpu_hours": r["gpu_hours"],
                             "energy_j": (r["energy_j"] or {}).get("median"), "cost": r["cost"], "pareto": r["pareto"]})
        return _frames.records(rows, cols, "Sweep.scaling")

    @property
    def break_even(self):
        """One row per configuration: the reference GPU count, the E' threshold,
        the break-even by rule (a) (largest N with E' >= threshold) and by rule
        (b) (knee of the time vs GPU-hours Pareto front), None where there is none."""
        cols = ["config", "ref_gpus", "threshold", "by_threshold", "by_knee"]
        rows = [{"config": c["label"], "ref_gpus": c["scaling"]["ref_gpus"],
                 "threshold": c["scaling"]["break_even"]["threshold"],
                 "by_threshold": c["scaling"]["break_even"]["by_threshold"],
                 "by_knee": c["scaling"]["break_even"]["by_knee"]} for c in self._configs() if c["scaling"]]
        return _frames.records(rows, cols, "Sweep.break_even")

    @property
    def comparisons(self):
        """One row per compared pair of configurations at a GPU count: the
        medians, ratio b/a with its CI, Welch and Mann-Whitney p-values, and
        whether they differ (None with fewer than 2 runs a side)."""
        cols = ["key", "a", "b", "others", "gpus", "n_a", "n_b", "median_a", "median_b", "ratio", "ratio_low",
                "ratio_high", "welch_p", "mann_whitney_p", "differs"]
        rows = []
        for x in (self.study or {}).get("comparisons", []):
            r = x["result"]
            rows.append({"key": x["key"], "a": x["a"], "b": x["b"], "others": x["others"], "gpus": x["gpus"],
                         "n_a": r["n_a"], "n_b": r["n_b"], "median_a": r["median_a"], "median_b": r["median_b"],
                         "ratio": r["ratio"], "ratio_low": r["ratio_ci"][0], "ratio_high": r["ratio_ci"][1],
                         "welch_p": r["welch_p"], "mann_whitney_p": r["mann_whitney_p"], "differs": r["differs"]})
        return _frames.records(rows, cols, "Sweep.comparisons")

    @property
    def predictions(self):
        """One row per configuration, model and predicted GPU count (with
        sweep(predict=[...])): time and its 80 % interval, E', the global
        batch assumed, whether the MLPerf backtests cover it, the model's
        leave-one-out errors and formula (ok False: bounds only)."""
        cols = ["config", "model", "ok", "gpus", "time", "low", "high", "efficiency", "global_batch", "batch_basis",
                "steps", "step_time", "validated", "loo_mean_abs_rel_error", "loo_max_abs_rel_error", "formula"]
        rows = []
        for c in self._configs():
            for m in c["predictions"]:
                for p in m["predictions"]:
                    row = {k: p[k] for k in cols if k in p}
                    row.update({"config": c["label"], "model": m["model"], "ok": m["ok"],
                                "loo_mean_abs_rel_error": m["loo_mean_abs_rel_error"],
                                "loo_max_abs_rel_error": m["loo_max_abs_rel_error"], "formula": m["formula"]})
                    rows.append(row)
        return _frames.records(rows, cols, "Sweep.predictions")


def sweep(db, predict=None, metric=None, higher_is_better=None, ref=None, threshold=0.8, price_per_gpu_hour=None,
          compare=None, weak=None, samples_per_gpu_step=None):
    """Reads a sweep database (from `scalescope sweep`) with its scaling study.
    predict: GPU counts to predict ([16, 32]); the rest as `scalescope scaling`'s options."""
    options = {"metric": metric, "higher_is_better": higher_is_better, "ref": ref, "threshold": threshold,
               "price_per_gpu_hour": price_per_gpu_hour, "predict": [int(n) for n in (predict or [])],
               "compare": compare, "weak": weak, "samples_per_gpu_step": samples_per_gpu_step}
    raw = _take(_lib.ss_sweep_json(_encode(db), _json.dumps(options).encode()))
    return Sweep(_json.loads(raw))


def report(inputs, path, title=None, threshold=None, iteration_range=None):
    """Writes `scalescope report`'s self-contained HTML page from traces, run
    directories, Kineto JSON, sweep databases and MLPerf CSVs; returns its
    highlight lines. Like `scalescope report -o`, path may replace an older
    page but never an input (nor, through a link, the same file): that
    raises ScalescopeError and leaves every file as it was."""
    if isinstance(inputs, (str, bytes, _os.PathLike)):
        inputs = [inputs]
    options = {k: v for k, v in {"title": title, "threshold": threshold, "iteration_range": iteration_range}.items()
               if v is not None}
    paths = [_path(i) for i in inputs]
    raw = _take(_lib.ss_report(_json.dumps(paths).encode(), _encode(path), _json.dumps(options).encode()))
    return _json.loads(raw)["highlights"]
