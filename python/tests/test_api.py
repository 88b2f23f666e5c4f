"""sweep, mlperf and report through the library equal their CLI commands."""

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
    assert s._scaling == whole
    expected = whole["tables"]
    assert list(s.scaling) == [t["title"] for t in expected]
    first = expected[0]
    df = s.scaling[first["title"]]
    assert_rows(df, first["rows"])
    runs = s.runs
    assert len(runs) == len(s.json["sweep"]["runs"]) > 0
    assert {"gpus", "status", "wall_s"} <= set(runs.columns)
    assert any(c.startswith("metric.") for c in runs.columns)
    assert s.table("Predict") is not None


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
    assert jobs.attrs["title"] == "Slurm jobs"
    assert sorted(zip(jobs["gpus"], jobs["state"], jobs["exit_code"])) == [(1, "COMPLETED", 0), (2, "FAILED", 1)]
    assert set(jobs["nodelist"]) == {"node07"} and set(jobs["queued_s"]) == {3.0}
    assert set(jobs["job_id"]) == {"100", "101"}
    # The same table `scalescope scaling` prints, among the same tables.
    whole = cli("scaling", db, "--format", "json")
    assert s._scaling == whole
    assert_rows(jobs, next(t for t in whole["tables"] if t["title"] == "Slurm jobs")["rows"])


def test_sweep_without_slurm_has_no_jobs():
    jobs = scalescope.sweep(SWEEP_DB).slurm_jobs
    assert len(jobs) == 0
    assert {"job_id", "state", "nodelist", "queued_s"} <= set(jobs.columns)


def test_mlperf_scores_and_analyze_equal_cli(cli):
    scores = scalescope.mlperf.scores()
    expected = cli("mlperf", "scores", "--format", "json")["tables"][0]
    assert_rows(scores, expected["rows"])
    tables = scalescope.mlperf.analyze(benchmark="ssd")
    expected = cli("mlperf", "analyze", "--benchmark", "ssd", "--format", "json")["tables"]
    assert list(tables) == [t["title"] for t in expected]
    for t in expected:
        assert_rows(tables[t["title"]], t["rows"])


def test_mlperf_ingest_equals_cli(cli, tmp_path):
    out = tmp_path / "runs.csv"
    ing = scalescope.mlperf.ingest([MLPERF_TESTDATA], output=out)
    expected = cli("mlperf", "ingest", MLPERF_TESTDATA, "-q", "--format", "json")["tables"][0]
    assert_rows(ing.scores, expected["rows"])
    assert ing.logs > 0 and len(ing.runs) == ing.logs
    # The CSV it wrote is what scores() reads.
    assert_rows(scalescope.mlperf.scores(out), expected["rows"])


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
