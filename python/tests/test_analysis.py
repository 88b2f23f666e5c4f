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
        df = getattr(a, {"copies": "copies_summary", "sync": "sync_summary",
                         "idle_breakdown": "idle_time_breakdown"}.get(section, section))
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
        assert [(k["name"], k["short_name"], k["count"], k["total_ns"]) for k in tops] == [
            (k["name"], k["short_name"], k["count"], k["total_ns"]) for k in r["top_kernels"]]
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


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_idle_time_breakdown_adds_up(path):
    b = scalescope.open(path).analyze().idle_time_breakdown
    assert len(b) > 0
    for row in b.to_dict("records"):
        if not row["available"]:
            continue
        assert row["host_wait_ns"] + row["kernel_wait_ns"] + row["other_ns"] == row["idle_ns"]
        assert row["threshold_ns"] == 30000


def test_top_kernels_have_distinct_short_names():
    tops = scalescope.open(SAMPLE).analyze().top_kernels
    assert "short_name" in tops.columns
    for _, rows in tops.groupby("rank"):
        assert rows["short_name"].is_unique
        assert (rows["short_name"].str.len() <= rows["name"].str.len()).all()
        assert not rows["short_name"].str.contains(r"\(").any()  # no parameter lists


@pytest.mark.parametrize("path", STUDY_RUNS, ids=lambda p: p.name)
def test_analysis_equals_the_clis_streamed_ranks(cli, path):
    """The C library analyses a run's ranks in memory; `analyze --stream-above 0`
    streams every rank chunk by chunk: the same numbers, exactly."""
    expected = cli("analyze", path, "--json", "--stream-above", "0")
    a = scalescope.open(path).analyze()
    assert a.json["analysis"] == expected["analysis"]
    assert a.json["findings"] == expected["findings"]


def test_findings_have_ids(cli):
    a = scalescope.open(STUDY_RUNS[0]).analyze()
    for f in a.findings:
        assert f.id == f["id"] and f.title and f.fix
    assert list(a.findings_table["id"]) == [f.id for f in a.findings]


def test_breakdown_parts_add_up():
    a = scalescope.open(SAMPLE).analyze()
    b = a.breakdown.iloc[0]
    assert b["compute_ns"] + b["exposed_communication_ns"] + b["copy_ns"] + b["idle_ns"] == b["wall_ns"]
    assert b["compute_pct"] + b["exposed_communication_pct"] + b["copy_pct"] + b["idle_pct"] == pytest.approx(100)


def test_breakdown_columns_in_the_clis_order_with_percentages(cli):
    # The CLI's table: rank, wall_ns, then each part as _ns and _pct, then the overlap.
    tables = cli("analyze", STUDY_RUNS[0], "--format", "json")["tables"]
    table = next(t for t in tables if t["title"].startswith("Time breakdown per rank"))
    b = scalescope.open(STUDY_RUNS[0]).analyze().breakdown
    cli_names = {"exposed_comm": "exposed_communication", "copies_sets": "copy", "comm_overlapped": "overlap",
                 "comm_overlap": "overlap"}
    figures = [c for c in b.columns if c.endswith(("_ns", "_pct"))]
    expected = []
    for c in table["columns"][1:]:
        stem, unit = c.rsplit("_", 1)
        expected.append(f"{cli_names.get(stem, stem)}_{unit}")
    assert figures[:len(expected)] == expected
    assert list(b.columns[:4]) == ["rank", "label", "available", "reason"]
    for row in table["rows"]:
        (ours,) = rows_of(b, row["rank"])
        for c, name in zip(table["columns"][1:], expected):
            assert ours[name] == pytest.approx(row[c], abs=0.051), name  # the CLI rounds percentages to 0.1


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


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_attribution_equals_cli_json(cli, path):
    """GPU time by operator, range, tree node and iteration: every row and
    number of `analyze --json`'s attribution, and operators + unattributed
    add up to the busy time as the CLI says."""
    expected = cli("analyze", path, "--json")["analysis"]["ranks"]
    a = scalescope.open(path).analyze()
    checked = 0
    for r in expected:
        e = r["attribution"]
        (summary,) = rows_of(a.attribution, r["rank"])
        assert summary["available"] == e["availability"]["available"]
        for key in ("busy_ns", "attributed_ns", "unattributed_ns", "no_launch_ns", "outside_ranges_ns", "backward_links"):
            assert summary[key] == e[key], key
        assert summary["attributed_ns"] + summary["unattributed_ns"] == summary["busy_ns"]
        for df, field in ((a.operators, "operators"), (a.ranges, "ranges"), (a.attribution_tree, "tree")):
            got = rows_of(df, r["rank"])
            assert len(got) == len(e[field]), field
            assert got or field == "operators", field  # collector runs without emit_nvtx have ranges only
            for g, x in zip(got, e[field]):
                for k, v in x.items():
                    assert same(g[k], v), (field, k)
                    checked += 1
        its = rows_of(a.attribution_iterations, r["rank"])
        want = [(i, it["busy_ns"], e["operators"][k]["name"], ns) for i, it in enumerate(e["iterations"])
                for k, ns in enumerate(it["top_operator_gpu_ns"][:len(e["operators"])])]
        assert [(x["iteration"], x["busy_ns"], x["operator"], x["gpu_ns"]) for x in its] == want
        resp = rows_of(a.responsible_operators, r["rank"])
        assert len(resp) == sum(len(e[f]) for f in ("layout_conversions", "fp32_no_tensor", "tiny_kernels"))
        # The largest operator by inclusive GPU time comes first, as in the CLI's table.
        ops = rows_of(a.operators, r["rank"]) or rows_of(a.ranges, r["rank"])
        assert ops[0]["gpu_ns"] == max(o["gpu_ns"] for o in ops)
    assert checked > 100


def test_python_frames_of_a_run_directory_as_the_cli(cli, tmp_path):
    """A run directory with the Python bootstrap's stacks: the rank gets its
    python_frames through the C ABI exactly as `scalescope analyze --json`."""
    import json as _json
    import shutil

    run = tmp_path / "py.ssrun"
    shutil.copytree(STUDY_RUNS[1], run)
    pid = max(int(p.stem.split("-")[-1]) for p in run.glob("*.sstrace"))
    host = next(run.glob("*.sstrace")).stem.rsplit("-", 1)[0]
    stacks = {"kind": "scalescope python stacks", "format": 1, "pid": pid + 1000, "ppid": pid, "hostname": host,
              "hz": 100, "state": "on in windows", "samples": 10, "thread_samples": 10, "dropped": 0,
              "truncated": 0, "window_seconds": 0.1, "sampler_cpu_per_second": 0.001,
              "threads": [{"id": pid + 1000, "name": "MainThread", "main": True}],
              "stacks": [{"thread": pid + 1000, "samples": 10, "frames": [["/job/dataset.py", 41, "__getitem__"]]}]}
    (run / ("python-stacks-%s-%d.json" % (host, pid + 1000))).write_text(_json.dumps(stacks))
    expected = cli("analyze", run, "--json")
    a = scalescope.open(run).analyze()
    with_frames = [r for r in a.json["analysis"]["ranks"] if "python_frames" in r]
    assert len(with_frames) == 1
    assert with_frames[0]["python_frames"]["workers_top"][0]["where"] == "dataset.py:41 __getitem__"
    assert a.json["analysis"] == expected["analysis"]


def test_process_groups_of_a_run_directory_as_the_cli(cli, tmp_path):
    """A run directory with the Python bootstrap's records (torch.distributed's
    process groups): the C ABI names the communicators' groups exactly as
    `scalescope analyze --json` does."""
    import json as _json
    import shutil

    run = tmp_path / "groups.ssrun"
    shutil.copytree(STUDY_RUNS[1], run)  # its collectives name their communicator
    for meta in run.glob("*.json"):
        m = _json.loads(meta.read_text())
        if meta.name == "run.json" or m.get("rank", -1) < 0:
            continue
        record = {"kind": "scalescope python bootstrap", "pid": m["pid"], "hostname": m["hostname"],
                  "distributed": {"source": "torch.distributed", "rank": m["rank"], "world_size": 2,
                                  "process_groups": [{"name": "0", "description": "default_pg", "ranks": [0, 1],
                                                      "backend": "nccl"}]}}
        (run / ("python-%s-%d.json" % (m["hostname"], m["pid"]))).write_text(_json.dumps(record))
    expected = cli("analyze", run, "--json")
    assert any(c["group"] == "default_pg" for c in expected["analysis"]["nodes"]["communicators"])
    a = scalescope.open(run).analyze()
    assert a.json["analysis"] == expected["analysis"]
    assert a.json["findings"] == expected["findings"]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_nccl_ops_equal_cli_json(cli, path):
    """NCCL collectives by operation and message size: the CLI's numbers, per
    rank and for the run, and the run's are its ranks' added up."""
    expected = cli("analyze", path, "--json")["analysis"]
    a = scalescope.open(path).analyze()

    def check(rows, groups):
        assert len(rows) == len(groups)
        for g, e in zip(rows, groups):
            for k, v in e.items():
                assert (v is None and math.isnan(g[k])) or same(g[k], v), k

    assert expected["nccl_ops"]["availability"]["available"]
    check(a.nccl_ops.to_dict("records"), expected["nccl_ops"]["groups"])
    for r in expected["ranks"]:
        check(rows_of(a.nccl_ops_by_rank, r["rank"]), r["nccl_ops"]["groups"])
    by_rank = a.nccl_ops_by_rank.groupby(["operation", "message_bytes"])[["count", "time_ns", "bytes"]].sum()
    run = a.nccl_ops.set_index(["operation", "message_bytes"])[["count", "time_ns", "bytes"]]
    assert by_rank.sort_index().equals(run.sort_index())
    if path != SAMPLE:  # the study runs are data-parallel jobs: their gradients are all-reduced
        assert (a.nccl_ops["operation"] == "AllReduce").any()
    # Unknown bandwidths are NaN, never 0 GB/s.
    assert not (a.nccl_ops[["algorithm_gbps", "bus_gbps"]] == 0).any().any()


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_analysis_tables_equal_cli_tables(cli, path):
    """Run.analysis_tables is `analyze --format json`, by table id; the kernels
    of all ranks are the sums of each rank's top kernels."""
    expected = cli("analyze", path, "--format", "json", "--top", "20")
    run = scalescope.open(path)
    tables = run.analysis_tables(top=20)
    assert list(tables) == [t["id"] for t in expected["tables"]]
    for t in expected["tables"]:
        df = tables[t["id"]]
        assert df.attrs["title"] == t["title"]
        assert list(df.columns) == t["columns"]
        assert len(df) == len(t["rows"])
    kernels = tables["top_kernels_all_ranks"]
    sums = {}
    for r in run.analyze().json["analysis"]["ranks"]:
        for k in r["top_kernels"]:
            sums[k["name"]] = sums.get(k["name"], 0) + k["total_ns"]
    assert len(kernels) == min(20, len(sums))
    for name, total in zip(kernels["name"], kernels["total_ns"]):
        assert total == sums[name]
    assert "copies_all_ranks" in tables
