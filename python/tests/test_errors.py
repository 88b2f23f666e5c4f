"""Bad input raises ScalescopeError with the CLI's one-line message, and never
takes the interpreter down: each case runs in a fresh subprocess, so a crash
would show as a signal exit instead of a clean report."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, SAMPLE, STUDY_RUNS

GOOD = STUDY_RUNS[0]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    # The corrupt inputs of the CLI's tests (tests/golden/analyze/bad_input.cmake).
    (d / "garbage.sstrace").write_text("this is not a scalescope trace file, just text\n")
    rank0 = sorted(GOOD.glob("*.sstrace"))[0].read_bytes()
    (d / "cut.sstrace").write_bytes(rank0[:4000])
    (d / "header_only.sstrace").write_bytes(rank0[:10])
    (d / "truncated.json.gz").write_bytes(SAMPLE.read_bytes()[:65536])
    (d / "not_json.json").write_text("this is not JSON\n")
    (d / "empty_dir").mkdir()
    (d / "bad_class.txt").write_text("# rules\ncommunication my_allgather\ngpu nccl_kernel\n")
    (d / "no_substring.txt").write_text("memory\n")
    (d / "not_a_sweep.db").write_text("hello\n")
    return d


CASES = [
    ("open", "{d}/missing.sstrace", {}, "missing.sstrace: no such file"),
    ("open", "{d}/garbage.sstrace", {}, "garbage.sstrace"),
    ("open", "{d}/header_only.sstrace", {}, "header_only.sstrace: truncated scalescope trace"),
    ("open", "{d}/truncated.json.gz", {}, "truncated gzip"),
    ("open", "{d}/not_json.json", {}, "not_json.json"),
    ("open", "{d}/empty_dir", {}, "empty_dir: a directory without traces"),
    ("analyze", str(GOOD), {"window": "5:3"}, "--window '5:3': the end must be after the start"),
    ("analyze", str(GOOD), {"window": "abc"}, "--window 'abc': expected START:END"),
    ("analyze", str(GOOD), {"window": "10%:150%"}, "percentages go up to 100"),
    ("analyze", str(GOOD), {"window": "1e19:2e19"}, "1e19 is too large"),
    ("analyze", str(GOOD), {"window": "it0:it999"}, "the trace has only"),
    ("analyze", str(GOOD), {"iteration_range": "NoSuchStep"}, "the trace has no NVTX range of that name"),
    ("analyze", str(GOOD), {"classes": "{d}/missing_rules.txt"}, "missing_rules.txt"),
    ("analyze", str(GOOD), {"classes": "{d}/bad_class.txt"}, "bad_class.txt:3: unknown kernel class 'gpu'"),
    ("analyze", str(GOOD), {"classes": "{d}/no_substring.txt"}, "no_substring.txt:1: expected '<class> <substring>'"),
    ("analyze", str(GOOD), {"classes": "{d}"}, "is a directory"),
    ("sweep", "{d}/not_a_sweep.db", {}, "not_a_sweep.db"),
    ("sweep", "{d}/missing.db", {}, "missing.db"),
    ("mlperf_scores", "{d}/garbage.sstrace", {}, "garbage.sstrace"),
    ("mlperf_ingest", "{d}/empty_dir", {}, "empty_dir"),
    ("report", "{d}/garbage.sstrace", {}, "garbage.sstrace"),
]

SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {pkg!r})
    import scalescope
    what, path, kwargs = json.loads(sys.argv[1])
    try:
        if what == "open":
            scalescope.open(path)
        elif what == "analyze":
            scalescope.open(path).analyze(**kwargs)
        elif what == "sweep":
            scalescope.sweep(path)
        elif what == "mlperf_scores":
            scalescope.mlperf.scores(path)
        elif what == "mlperf_ingest":
            scalescope.mlperf.ingest(path)
        elif what == "report":
            scalescope.report([path], sys.argv[2])
    except scalescope.ScalescopeError as e:
        print(json.dumps({{"error": str(e)}}))
        sys.exit(0)
    print(json.dumps({{"error": None}}))
""")


@pytest.mark.parametrize("what,path,kwargs,message", CASES, ids=[f"{c[0]}-{c[3][:30]}" for c in CASES])
def test_bad_input_raises_one_line(scratch, tmp_path, what, path, kwargs, message):
    path = path.format(d=scratch)
    kwargs = {k: v.format(d=scratch) for k, v in kwargs.items()}
    script = SCRIPT.format(pkg=str(ROOT / "python"))
    proc = subprocess.run([sys.executable, "-c", script, json.dumps([what, path, kwargs]), str(tmp_path / "r.html")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"the interpreter died ({proc.returncode}): {proc.stderr[-2000:]}"
    error = json.loads(proc.stdout.strip().splitlines()[-1])["error"]
    assert error is not None, "no exception raised"
    assert message in error
    assert "\n" not in error
    assert not (tmp_path / "r.html").exists()


def test_cut_trace_is_read_with_its_loss_counted(scratch):
    # Like the CLI: a trace cut inside a chunk is read, and the loss is counted.
    import scalescope
    run = scalescope.open(scratch / "cut.sstrace")
    p = run.ranks[0].problems
    assert p.loc[p["problem"] == "torn_tail", "count"].iloc[0] == 1
    a = run.analyze()
    assert a.data_loss


def test_misuse_raises_instead_of_crashing():
    import scalescope
    run = scalescope.open(SAMPLE)
    with pytest.raises(scalescope.ScalescopeError, match="rank index 7 out of range"):
        scalescope.run.Rank(run, 7, {"file": "", "metadata": {"rank": 0}, "event_counts": {}, "time_span": [0, 0],
                                     "problems": []}).columns("kernels")
    with pytest.raises(ValueError):
        run.analyze(classes=[("a\nb", "memory")])


def test_without_numpy_the_import_says_what_to_install():
    # A python3 without numpy (a pyenv or venv interpreter) must say what the
    # package needs and how to get it, not a bare ModuleNotFoundError.
    script = (f"import sys; sys.path.insert(0, {str(ROOT / 'python')!r}); sys.modules['numpy'] = None\n"
              "try:\n    import scalescope\n"
              "except ModuleNotFoundError as e:\n    print(e.name); print(e)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    name, message = proc.stdout.strip().split("\n", 1)
    assert name == "numpy"
    assert message.startswith("scalescope needs numpy and pandas")
    assert "apt-get install python3-numpy python3-pandas" in message and "pip install numpy pandas" in message
    assert sys.executable in message
