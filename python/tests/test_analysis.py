"""Every analysis number the Python API returns equals `scalescope analyze
--json` on the shipped sample and two study runs."""

import math

import pytest

import scalescope
from scalescope.analysis import SECTIONS
from conftest import SAMPLE, STUDY_RUNS

pd = pytest.importorskip("pandas")

INPUTS = [SAMPLE] + STUDY_RUNS


def same(a, b):
    """Exact equality; NaN never appears in the JSON, so none is excused."""
    if isinstance(b, float) or isinstance(a, float):
        return float(a) == float(b) and not math.isnan(float(a))
    return a == b


def rows_of(df, rank):
    return df[df["rank"] == rank].to_dict("records")


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
@pytest.mark.parametrize("window", [None, "10%:90%"])
def test_analysis_equals_cli_json(cli, path, window):
    args = ["analyze", path, "--json"] + (["--window", window] if window else [])
    expected = cli(*args)
    a = scalescope.open(path).analyze(window=window)
    # The whole result, bit for bit (floats compare exactly after JSON round trips).
    assert a.json["analysis"] == expected["analysis"]
    assert a.json["findings"] == expected["findings"]

    # And every number in the DataFrames is the CLI's.
    checked = 0
    for section in SECTIONS:
        df = getattr(a, {"copies": "copies_summary", "sync": "sync_summary"}.get(section, section))
        assert len(df) == len(expected["analysis"]["ranks"])
        for r in expected["analysis"]["ranks"]:
            (row,) = rows_of(df, r["rank"])
            for key, value in r[section].items():
                if key == "availability":
                    assert row["available"] == value["available"]
                elif isinstance(value, dict):
                    for k, v in value.items():
                        assert same(row[f"{key}_{k}"], v), (section, key, k)
                        checked += 1
                elif not isinstance(value, list):
                    assert same(row[key], value), (section, key)
                    checked += 1
    details = [
        (a.stream_utilization, "breakdown", "streams"),
        (a.copies, "copies", "groups"),
        (a.sync, "sync", "groups"),
        (a.numa_memory, "numa", "memory_nodes"),
    ]
    for df, section, field in details:
        for r in expected["analysis"]["ranks"]:
            got = rows_of(df, r["rank"])
            assert len(got) == len(r[section][field])
            for g, e in zip(got, r[section][field]):
                for k, v in e.items():
                    assert same(g[k], v), (section, field, k)
                    checked += 1
    for r in expected["analysis"]["ranks"]:
        its = rows_of(a.iteration_times, r["rank"])
        assert [(i["start_ns"], i["end_ns"], i["warmup"]) for i in its] == [
            (i["start_ns"], i["end_ns"], i["warmup"]) for i in r["iterations"]["iterations"]]
        tops = [k for k in rows_of(a.top_kernels, r["rank"])]
        assert [(k["name"], k["count"], k["total_ns"]) for k in tops] == [
            (k["name"], k["count"], k["total_ns"]) for k in r["top_kernels"]]
        classes = rows_of(a.kernel_classes, r["rank"])
        assert [(c["class"], c["count"], c["total_ns"]) for c in classes] == [
            (c["class"], c["count"], c["total_ns"]) for c in r["classes"]]
        checked += len(its) + len(tops) + len(classes)
    s = expected["analysis"]["stragglers"]
    assert a.stragglers.to_dict("records") == s["ranks"]
    assert a.stragglers_summary == {k: v for k, v in s.items() if k != "ranks"}
    assert [f.id for f in a.findings] == [f["id"] for f in expected["findings"]]
    assert [f["saving_fraction"] for f in a.findings] == [f["saving_fraction"] for f in expected["findings"]]
    assert checked > 50


def test_findings_have_ids(cli):
    a = scalescope.open(STUDY_RUNS[0]).analyze()
    for f in a.findings:
        assert f.id == f["id"] and f.title and f.fix
    assert list(a.findings_table["id"]) == [f.id for f in a.findings]


def test_breakdown_parts_add_up():
    a = scalescope.open(SAMPLE).analyze()
    b = a.breakdown.iloc[0]
    assert b["compute_ns"] + b["exposed_communication_ns"] + b["copy_ns"] + b["idle_ns"] == b["wall_ns"]


def test_iteration_window_and_classes(cli, tmp_path):
    rules = tmp_path / "rules.txt"
    rules.write_text("communication elementwise\n")
    expected = cli("analyze", STUDY_RUNS[0], "--json", "--window", "it1:it3", "--classes", rules)
    run = scalescope.open(STUDY_RUNS[0])
    assert run.analyze(window="it1:it3", classes=rules).json["analysis"] == expected["analysis"]
    # The same rules as pairs or as text.
    assert run.analyze(window="it1:it3", classes=[("elementwise", "communication")]).json["analysis"] == \
        expected["analysis"]
    assert run.analyze(window="it1:it3", classes="communication elementwise\n").json["analysis"] == \
        expected["analysis"]


def test_diff_equals_cli(cli):
    a, b = STUDY_RUNS[0], STUDY_RUNS[0].parents[2] / "image-tuned" / "traces" / "0010-g2-arm_tuned-variant_ref-r0.ssrun"
    expected = cli("diff", a, b, "--json")
    d = scalescope.diff(a, b)
    assert d.json["diff"] == expected["diff"]
    assert d.breakdown.to_dict("records") == expected["diff"]["breakdown"]
    assert d.iteration == expected["diff"]["iteration"]
