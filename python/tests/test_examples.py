"""examples/python runs on the shipped sample and on a study run."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLE, STUDY_RUNS

pytest.importorskip("pandas")
EXAMPLES = ROOT / "examples" / "python"
SINGLE = ["temporal_breakdown", "kernel_breakdown", "comm_comp_overlap", "idle_time", "iteration_times"]


def run(script, *args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python"), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, str(EXAMPLES / f"{script}.py"), *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize("trace", [SAMPLE, STUDY_RUNS[0]], ids=["sample", "study"])
@pytest.mark.parametrize("script", SINGLE)
def test_example(script, trace):
    out = run(script, trace)
    assert "rank" in out


def test_example_output_is_the_analysis():
    out = run("temporal_breakdown", STUDY_RUNS[0])
    import scalescope
    b = scalescope.open(STUDY_RUNS[0]).analyze().breakdown
    for wall in b["wall_ns"]:
        assert str(wall) in out


def test_diff_example():
    out = run("diff_runs", SAMPLE, STUDY_RUNS[0])
    assert "compute" in out and "wall" in out


@pytest.mark.parametrize("trace", [SAMPLE, STUDY_RUNS[0]], ids=["sample", "study"])
def test_plot_example(trace, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "b.png"
    run("plot_breakdown", trace, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
