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
from .run import TABLES, Rank, Run
from . import mlperf
from . import _frames

__all__ = ["open", "diff", "sweep", "report", "mlperf", "Run", "Rank", "Analysis", "Diff", "Finding", "Sweep",
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
    """A sweep database: its runs and the scaling study (`scalescope scaling`)."""

    def __init__(self, raw):
        self.json = raw
        s = raw["sweep"]
        self.path, self.metric, self.higher_is_better = s["path"], s["metric"], s["higher_is_better"]
        self.spec = s["spec"]
        self.planned_runs = s["planned_runs"]
        self.scaling_error = raw.get("scaling_error")  #: why there is no study (no run measured the metric)
        self._scaling = raw["scaling"] or []
        self._slurm_jobs = raw["slurm_jobs"]

    def __repr__(self):
        return f"<scalescope.Sweep {self.path}: {len(self.json['sweep']['runs'])} runs, metric {self.metric}>"

    @property
    def runs(self):
        """One row per run: id, plan_index, gpus, nodes, rep, status, exit_code,
        signal, wall_s, start_unix, end_unix, one column per config key
        (config.<key>) and per metric (metric.<name>), log_path, trace_path, run_dir, note."""
        pd = _frames.pandas("Sweep.runs")
        rows = []
        for r in self.json["sweep"]["runs"]:
            row = {k: v for k, v in r.items() if k not in ("config", "metrics")}
            row.update({f"config.{k}": v for k, v in r["config"].items()})
            row.update({f"metric.{k}": v for k, v in r["metrics"].items()})
            rows.append(row)
        return pd.DataFrame.from_records(rows) if rows else pd.DataFrame()

    @property
    def slurm_jobs(self):
        """A `--scheduler slurm` sweep's jobs, one row per run that has one: run
        (its plan index), config, gpus, rep, job_id, state, exit_code, nodelist,
        gpus_allocated, queued_s (the "Slurm jobs" table of `scalescope
        scaling`); no rows for a sweep run without Slurm."""
        return _frames.table(self._slurm_jobs, "Sweep.slurm_jobs")

    @property
    def scaling(self):
        """{title: DataFrame} of the scaling study, the tables of `scalescope scaling --format json`."""
        return _frames.tables(self._scaling, "Sweep.scaling")

    def table(self, title_start):
        """The scaling table whose title starts with title_start (e.g. "Predict")."""
        for title, df in self.scaling.items():
            if title.startswith(title_start):
                return df
        raise KeyError(f"no scaling table titled {title_start!r}... (tables: {list(self.scaling)})")


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
    return _json.loads(raw)
