"""sweep, mlperf and report through the library equal their CLI commands."""

import pytest

import scalescope
from conftest import MLPERF_TESTDATA, SAMPLE, STUDY_RUNS, SWEEP_DB

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
