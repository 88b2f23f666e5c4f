"""sweep, mlperf and report through the library equal their CLI commands."""

import csv
import os
import subprocess

import pytest

import scalescope
from conftest import MLPERF_TESTDATA, SAMPLE, STUDY_RUNS, SWEEP_DB, cli_path

pd = pytest.importorskip("pandas")


def assert_rows(df, rows):
    """The DataFrame holds exactly the table's rows (an empty cell is null in
    JSON and NaN/None in pandas)."""
    assert len(df) == len(rows)
    for got, want in zip(df.to_dict("records"), rows):
        assert set(got) == set(want)
        for k, v in want.items():
            g = got[k]
            if v is None:
                assert g is None or g != g, (k, g)
            else:
                assert g == v, (k, g, v)


def test_sweep_runs_and_scaling_equal_cli(cli):
    s = scalescope.sweep(SWEEP_DB, predict=[4, 8])
    whole = cli("scaling", SWEEP_DB, "--predict", "4,8", "--format", "json")
    assert s.json == whole
    assert whole["schema_version"] == 3 and whole["command"] == "scaling"
    study = whole["scaling"]
    # The frames come from typed keys: each row is the study's number.
    df = s.scaling
    rows = [(c["label"], r) for c in study["configs"] if c["scaling"] for r in c["scaling"]["rows"]]
    assert len(df) == len(rows) > 0
    for got, (label, r) in zip(df.to_dict("records"), rows):
        assert got["config"] == label and got["gpus"] == r["gpus"]
        assert got["median"] == r["time"]["median"] and got["efficiency"] == r["efficiency"]
        assert got["speedup_low"] == r["speedup_ci"][0] or r["speedup_ci"][0] is None
    # The reference count of each configuration has S = E' = 1.
    for c in study["configs"]:
        ref = [x for x in c["scaling"]["rows"] if x["gpus"] == c["scaling"]["ref_gpus"]]
        assert ref and ref[0]["speedup"] == pytest.approx(1) and ref[0]["efficiency"] == pytest.approx(1)
    be = s.break_even
    assert list(be["config"]) == [c["label"] for c in study["configs"] if c["scaling"]]
    pred = s.predictions
    assert set(pred["gpus"]) == {4, 8}
    assert (pred["low"] <= pred["time"]).all() and (pred["time"] <= pred["high"]).all()
    runs = s.runs
    assert len(runs) == len(s.json["sweep"]["runs"]) > 0
    assert {"gpus", "status", "wall_s"} <= set(runs.columns)
    assert any(c.startswith("metric.") for c in runs.columns)
    assert not hasattr(s, "table")  # tables are not found by their titles


# Stand-ins for sbatch and scontrol: sbatch runs the batch script at once
# (its exit code decides the job's state) and scontrol reports the job as
# ended, so a `--scheduler slurm` sweep records its jobs without a cluster.
FAKE_SBATCH = r'''#!/usr/bin/python3
import pathlib, subprocess, sys
state = pathlib.Path(__file__).parent / "jobs"
state.mkdir(exist_ok=True)
job = str(100 + len(list(state.iterdir())))
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--output="))
with open(out, "a") as log:
    rc = subprocess.run(["sh", sys.argv[-1]], stdout=log, stderr=log).returncode
(state / job).write_text(str(rc))
print(job)
'''
FAKE_SCONTROL = r'''#!/usr/bin/python3
import pathlib, sys
rc = int((pathlib.Path(__file__).parent / "jobs" / sys.argv[-1]).read_text())
print(f"JobId={sys.argv[-1]} JobName=x JobState={'COMPLETED' if rc == 0 else 'FAILED'} ExitCode={rc}:0 "
      "NodeList=node07 TRES=cpu=2,node=1,billing=2 SubmitTime=2026-12-06T10:00:00 "
      "StartTime=2026-12-06T10:00:03 EndTime=2026-12-06T10:00:05")
'''


def test_sweep_slurm_jobs_equal_cli(cli, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("sbatch", FAKE_SBATCH), ("scontrol", FAKE_SCONTROL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    db = tmp_path / "slurm.db"
    # Two runs: one task ends 0 (COMPLETED), two tasks end 1 (FAILED).
    subprocess.run([str(cli_path()), "sweep", "--scheduler", "slurm", "--cpu-only", "--gpus", "1,2", "--repeat", "1",
                    "--poll-interval", "0.1s", "-o", str(db), "--", "sh", "-c", "exit $(({gpus} - 1))"],
                   check=True, capture_output=True, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    s = scalescope.sweep(db)
    jobs = s.slurm_jobs
    assert sorted(zip(jobs["gpus"], jobs["state"], jobs["exit_code"])) == [(1, "COMPLETED", 0), (2, "FAILED", 1)]
    assert set(jobs["nodelist"]) == {"node07"} and set(jobs["queued_s"]) == {3.0}
    assert set(jobs["job_id"]) == {"100", "101"}
    # The same rows as the "Slurm jobs" table `scalescope scaling` prints.
    table = subprocess.run([str(cli_path()), "scaling", str(db), "--format", "csv"], check=True,
                           capture_output=True, text=True).stdout
    section = table[table.index("Slurm jobs"):].splitlines()
    header = next(i for i, line in enumerate(section) if line.startswith("run,"))
    printed = list(csv.DictReader(section[header:]))
    assert len(printed) == len(jobs)
    for row, (_, job) in zip(sorted(printed, key=lambda x: int(x["run"])), jobs.sort_values("run").iterrows()):
        assert int(row["run"]) == job["run"] and row["job_id"] == job["job_id"] and row["state"] == job["state"]
        assert row["config"] == job["config"] and int(row["exit_code"]) == job["exit_code"]
        assert row["nodelist"] == job["nodelist"] and float(row["queued_s"]) == job["queued_s"]


def test_sweep_without_slurm_has_no_jobs():
    jobs = scalescope.sweep(SWEEP_DB).slurm_jobs
    assert len(jobs) == 0
    assert {"job_id", "state", "nodelist", "queued_s"} <= set(jobs.columns)


def test_mlperf_scores_and_analyze_equal_cli(cli):
    scores = scalescope.mlperf.scores()
    expected = cli("mlperf", "scores", "--format", "json")["scores"]
    assert_rows(scores, expected)
    assert set(scores.columns) == set(expected[0])
    # analyze: DataFrames built from the typed result's keys, not from rendered tables.
    tables = scalescope.mlperf.analyze(benchmark="ssd")
    groups = cli("mlperf", "analyze", "--benchmark", "ssd", "--format", "json")["scaling"]["groups"]
    assert groups and list(tables) == [f"{g['title']} on {g['accelerator']}" for g in groups]
    for g in groups:
        df = tables[f"{g['title']} on {g['accelerator']}"]
        assert_rows(df, g["systems"])
        assert df.attrs["reference"] == g["systems"][g["reference"]]["system"]
        assert df["pareto"].dtype == bool


def test_mlperf_predict_and_validate_equal_cli(cli):
    # Rows read by field name from the typed JSON, as the CLI prints it.
    df = scalescope.mlperf.predict([64, 8192], benchmark="bert", accelerator="H100-SXM5", fit_up_to=16,
                                   planned_batch={64: 2048})
    expected = cli("mlperf", "analyze", "--benchmark", "bert", "--accelerator", "H100-SXM5", "--predict", "64,8192",
                   "--fit-up-to", "16", "--planned-batch", "64:2048", "--format", "json")["predictions"]
    assert df.attrs["forecasts"] == expected
    assert list(df["gpus"]) == [64, 8192]
    assert list(df["time"]) == [p["time"] for p in expected[0]["fit"]["predictions"]]
    assert list(df["batch_basis"]) == ["planned", "extrapolated"]
    assert df["curve"].iloc[0] == "bert on H100-SXM5-80GB" and df["measured_system"].iloc[1] is None
    v = scalescope.mlperf.validate(benchmark="bert")
    expected = cli("mlperf", "validate", "--benchmark", "bert", "--format", "json")
    assert v.json["validation"] == expected["validation"]
    assert v.curves == expected["validation"]["curves"] and v.level == 0.8
    assert list(v.per_group["group"].unique()) == ["bert"]
    assert len(v.cases) == len(expected["validation"]["cases"]) > 0
    assert {"gpus", "predicted", "measured", "covered"} <= set(v.cases.columns)


def test_mlperf_ingest_equals_cli(cli, tmp_path):
    out = tmp_path / "runs.csv"
    ing = scalescope.mlperf.ingest([MLPERF_TESTDATA], output=out)
    expected = cli("mlperf", "ingest", MLPERF_TESTDATA, "-q", "--format", "json")
    assert_rows(ing.scores, expected["scores"])
    assert_rows(ing.runs, expected["runs"])
    assert ing.logs == expected["logs"] > 0 and len(ing.runs) == ing.logs
    assert ing.runs["converged"].dtype == bool
    # The CSV it wrote is what scores() reads.
    assert_rows(scalescope.mlperf.scores(out), expected["scores"])


def test_report_writes_one_page(tmp_path):
    out = tmp_path / "r.html"
    highlights = scalescope.report([SAMPLE, STUDY_RUNS[0], SWEEP_DB], out, title="from python")
    html = out.read_text()
    assert html.startswith("<!doctype html>") or html.lower().startswith("<!doctype html>")
    assert "from python" in html
    assert isinstance(highlights, list) and highlights


def test_version():
    assert scalescope.__version__.split()[0].count(".") == 2
    assert scalescope.library_path.endswith("libscalescope.so")


def test_stats_equal_cli_and_frames_come_from_typed_keys(cli):
    run = scalescope.open(STUDY_RUNS[0])
    st = run.stats()
    whole = cli("stats", STUDY_RUNS[0], "--format", "json")

    def without_problems(j):  # the CLI reads a run directory's own problems (no manifest); scalescope.open its files
        return {**j, "scopes": [{**s, "stats": {k: v for k, v in s["stats"].items() if k != "problems"}}
                                for s in j["scopes"]]}
    assert without_problems(st.json) == without_problems(whole)
    assert whole["schema_version"] == 3 and whole["command"] == "stats"
    scopes = whole["scopes"]
    assert scopes[-1]["label"] == "all ranks" and len(scopes) >= 3  # two ranks, then both combined
    k = st.kernels
    assert len(k) == sum(len(s["stats"]["kernels"]) for s in scopes) > 0
    first = scopes[0]["stats"]["kernels"][0]
    assert k.iloc[0]["total_ns"] == first["total_ns"] and k.iloc[0]["name"] == first["name"]
    # Every rank's kernel time adds up to the combined one, and shares to 1.
    per_rank = k[k["scope"] != "all ranks"]["total_ns"].sum()
    assert per_rank == k[k["scope"] == "all ranks"]["total_ns"].sum()
    assert k[k["scope"] == "all ranks"]["share"].sum() == pytest.approx(1)
    one = run.stats(rank=scopes[0]["rank"], reports=["nccl"])  # no problems asked for: the whole JSON agrees
    assert one.json == cli("stats", STUDY_RUNS[0], "--rank", scopes[0]["rank"], "--report", "nccl", "--format", "json")
    assert list(one.json["scopes"][0]["stats"]) == ["nccl", "traces"]
