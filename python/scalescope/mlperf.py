"""MLPerf Training results: ingest results trees, official scores, scaling
across systems (`scalescope mlperf ...`), as DataFrames."""

import json as _json
import os as _os

from . import _frames
from ._lib import lib as _lib, path as _path, take_text as _take


# The keys of one score (`scalescope mlperf scores --format json`).
_SCORE_COLUMNS = ["submitter", "system", "benchmark", "folder", "division", "accelerator", "accelerators", "runs",
                  "converged", "required", "scaling_factor", "minutes", "unscaled_minutes", "reason"]


def _runs(runs, what):
    """One row per run, a column per key of the runs CSV (every run has them all)."""
    return _frames.records(runs, list(runs[0]) if runs else [], what)


def _call(command, args):
    return _json.loads(_take(_lib.ss_mlperf_json(command.encode(), _json.dumps(args).encode())))


class Ingest:
    """What ingest returns: .runs (one row per run log), .scores (one per result
    folder), and counts (logs, bytes, mllog_lines, malformed_lines, ...)."""

    def __init__(self, raw):
        self.json = raw
        self.notes = raw["notes"]
        for k in ("logs", "bytes", "folders", "mllog_lines", "malformed_lines", "overlong_lines", "ignored_files"):
            setattr(self, k, raw[k])

    runs = property(lambda s: _runs(s.json["runs"], "mlperf.Ingest.runs"))
    scores = property(lambda s: _frames.records(s.json["scores"], _SCORE_COLUMNS, "mlperf.Ingest.scores"))


def ingest(dirs, output=None, threads=0):
    """Reads MLPerf Training results trees (or submitter/system/benchmark
    folders); output= also writes the runs CSV that scores/analyze read
    (replaced when it exists; never a file of the input trees: that raises
    ScalescopeError, as `scalescope mlperf ingest -o`)."""
    if isinstance(dirs, (str, bytes, _os.PathLike)):
        dirs = [dirs]
    args = {"dirs": [_path(d) for d in dirs], "threads": int(threads)}
    if output is not None:
        args["output"] = _path(output)
    return Ingest(_call("ingest", args))


def scores(runs_csv=None):
    """Official score of every result folder (runs_csv: from ingest(output=);
    None: the embedded MLPerf v4.1 table)."""
    args = {} if runs_csv is None else {"runs_csv": _path(runs_csv)}
    return _frames.records(_call("scores", args)["scores"], _SCORE_COLUMNS, "mlperf.scores")


def analyze(runs_csv=None, benchmark=None, accelerator=None, ref=None, threshold=0.8):
    """Scaling across systems per benchmark, accelerator and division:
    {"<title> on <accelerator>": DataFrame}, one row per scored system
    (system, submitter, accelerators, nodes, minutes, gpu_hours, speedup,
    efficiency, pareto, role). Each DataFrame's attrs hold the group's typed
    fields: benchmark, division, accelerator, reference (the system),
    ref_chosen, curve (the fastest system at each count, with break_even)."""
    args = {"threshold": threshold}
    for k, v in (("runs_csv", runs_csv), ("benchmark", benchmark), ("accelerator", accelerator), ("ref", ref)):
        if v is not None:
            args[k] = _path(v)
    out = {}
    for g in _call("analyze", args)["scaling"]["groups"]:
        df = _frames.records(g["systems"], list(g["systems"][0]), "mlperf.analyze")  # a group has a system
        df.attrs.update({k: g[k] for k in ("benchmark", "division", "title", "accelerator", "ref_chosen", "curve")})
        df.attrs["reference"] = g["systems"][g["reference"]]["system"]
        out[f"{g['title']} on {g['accelerator']}"] = df
    return out


def _filters(runs_csv, benchmark, accelerator, level):
    args = {"level": level}
    for k, v in (("runs_csv", runs_csv), ("benchmark", benchmark), ("accelerator", accelerator)):
        if v is not None:
            args[k] = _path(v)
    return args


def predict(predict, runs_csv=None, benchmark=None, accelerator=None, fit_up_to=None, planned_batch=None, level=0.8):
    """Predicted time to train at these accelerator counts along each curve (the
    fastest scored system at each size), as `scalescope mlperf analyze
    --predict`: one row per curve and count with the curve's fields
    (curve, benchmark, accelerator, division), the prediction's (gpus, time and
    low/high in minutes, global_batch, batch_basis, extrapolation, validated,
    outside_validated, ...), measured_minutes and measured_system (None where
    no system of that size was submitted), model and fitted (the sizes fitted).
    planned_batch: {N: global batch}. attrs["forecasts"] holds the typed list."""
    args = _filters(runs_csv, benchmark, accelerator, level)
    args["predict"] = [int(n) for n in predict]
    if fit_up_to is not None:
        args["fit_up_to"] = int(fit_up_to)
    if planned_batch:
        args["planned_batch"] = ",".join(f"{int(n)}:{b}" for n, b in planned_batch.items())
    forecasts = _call("predict", args)["predictions"]
    rows = []
    for f in forecasts:
        curve = {k: f["curve"][k] for k in ("benchmark", "accelerator", "division")}
        for p, m in zip(f["fit"]["predictions"], f["measured"]):
            rows.append({"curve": f["curve"]["name"], **curve, **p,
                         "measured_minutes": m["minutes"] if m else None,
                         "measured_system": m["system"] if m else None,
                         "model": f["fit"]["model"], "fitted": f["fitted"]})
    df = _frames.records(rows, list(rows[0]) if rows else [], "mlperf.predict")
    df.attrs["forecasts"] = forecasts
    return df


class Validation:
    """What validate returns: level, curves (how many), calibration (the
    interval's spread used), fit_rounds, test_rounds, and DataFrames buckets
    (error and coverage per model and extrapolation bucket), per_curve,
    per_group (per benchmark), tau_estimates and cases (every prediction
    judged). .json is the typed result as `scalescope mlperf validate --format json`."""

    def __init__(self, raw):
        self.json = raw
        v = raw["validation"]
        self.level, self.curves = v["level"], v["curves"]
        self.calibration = raw["calibration"]
        self.fit_rounds, self.test_rounds = raw["fit_rounds"], raw["test_rounds"]

    def _frame(self, key):
        rows = self.json["validation"][key]
        return _frames.records(rows, list(rows[0]) if rows else [], f"mlperf.Validation.{key}")

    buckets = property(lambda s: s._frame("buckets"))
    per_curve = property(lambda s: s._frame("per_curve"))
    per_group = property(lambda s: s._frame("per_group"))
    tau_estimates = property(lambda s: s._frame("tau_estimates"))
    cases = property(lambda s: s._frame("cases"))


def validate(runs_csv=None, benchmark=None, accelerator=None, level=0.8):
    """How far predictions hold, as `scalescope mlperf validate`: each curve
    with at least four sizes fitted on its smallest sizes and every larger
    measured size predicted, intervals from the embedded calibration."""
    return Validation(_call("validate", _filters(runs_csv, benchmark, accelerator, level)))
