"""Event tables: numpy arrays over the trace's own memory, DataFrames with
string and enum columns as Categoricals."""

import gc

import numpy as np
import pytest

import scalescope
from conftest import ROOT, SAMPLE, STUDY_RUNS

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def sample():
    return scalescope.open(SAMPLE)


def test_columns_are_not_copied(sample):
    rank = sample.ranks[0]
    a = rank.columns("kernels")
    b = rank.columns("kernels")
    assert len(a["start"]) == rank.event_counts["kernels"] > 0
    # Two calls hand out views of the same memory: nothing was copied.
    assert a["start"].__array_interface__["data"][0] == b["start"].__array_interface__["data"][0]
    assert np.shares_memory(a["start"], b["start"])
    assert not a["start"].flags.owndata and not a["start"].flags.writeable
    # The DataFrame's numeric columns are the same memory too.
    df = rank.kernels
    assert np.shares_memory(df["start"].to_numpy(), a["start"])
    assert np.shares_memory(df["correlation"].to_numpy(), a["correlation"])
    assert (df["duration"] == a["end"] - a["start"]).all()


def test_arrays_keep_the_run_alive():
    run = scalescope.open(SAMPLE)
    start = run.ranks[0].columns("kernels")["start"]
    expected = start.copy()
    del run
    gc.collect()
    # Garbage here would mean the run's memory was freed under the array.
    assert np.array_equal(start, expected)
    handle = start.base.owner
    assert handle.ptr


def test_strings_are_categoricals_of_the_strings_the_column_uses(sample):
    rank = sample.ranks[0]
    df = rank.kernels
    assert isinstance(df["name"].dtype, pd.CategoricalDtype)
    ids = rank.columns("kernels")["name"]
    assert list(df["name"].astype(str)) == [rank.strings[i] for i in ids]
    # Only the kernels' own names, in string id order: no API calls, no NVTX ranges.
    assert list(df["name"].cat.categories) == [rank.strings[i] for i in sorted(set(ids.tolist()))]
    assert any("gemm" in n.lower() or "conv" in n.lower() for n in df["name"].unique())


@pytest.mark.parametrize("path", [SAMPLE, STUDY_RUNS[0]], ids=["kineto", "collector"])
def test_kernels_have_a_short_name_beside_the_full_one(path):
    df = scalescope.open(path).ranks[0].kernels
    assert isinstance(df["short_name"].dtype, pd.CategoricalDtype)
    pairs = df[["name", "short_name"]].astype(str).drop_duplicates()
    # One short name per full name, and no two full names share one.
    assert pairs["name"].is_unique and pairs["short_name"].is_unique
    assert (pairs["short_name"].str.len() <= pairs["name"].str.len()).all()
    # Only the kernels' short names are its categories.
    assert set(df["short_name"].cat.categories) == set(pairs["short_name"])


@pytest.mark.parametrize("path", [SAMPLE, STUDY_RUNS[0]], ids=["kineto", "collector"])
def test_groupby_name_lists_only_kernels(path):
    run = scalescope.open(path)
    rank = next(r for r in run.ranks if r.event_counts["kernels"] and r.event_counts["api"])
    k = rank.kernels
    # pandas' default groupby over a Categorical lists every category: each
    # must be a kernel that ran, with its time.
    by_name = k.groupby("name")["duration"].agg(["count", "sum"])
    assert len(by_name) == k["name"].nunique()
    assert (by_name["count"] > 0).all()
    api_names = set(rank.api["name"].astype(str))
    assert not api_names & set(by_name.index), "API names listed as kernels"
    assert set(rank.api["name"].cat.categories) == api_names


def test_run_indexes_its_ranks():
    run = scalescope.open(STUDY_RUNS[0])
    assert run[0] is run.ranks[0] and run[-1] is run.ranks[-1]
    assert run[0:2] == run.ranks[0:2]
    assert list(run) == run.ranks
    with pytest.raises(IndexError):
        run[len(run)]


def test_enum_columns_name_their_values(sample):
    m = sample.ranks[0].memcpy
    assert len(m) > 0
    assert set(m["kind"].cat.categories) == {"unknown", "HtoD", "DtoH", "DtoD", "PtoP", "HtoH"}
    assert m["is_async"].dtype == bool
    assert sample.ranks[0].categories("memcpy")["src_kind"][1] == "pageable"


@pytest.mark.parametrize("table", scalescope.TABLES)
def test_every_table_has_its_rows(table):
    run = scalescope.open(STUDY_RUNS[0])
    for rank in run.ranks:
        df = rank.table(table)
        assert len(df) == rank.event_counts[table]
        for col, arr in rank.columns(table).items():
            assert len(arr) == len(df)


def test_host_tables_are_served():
    """The host sampler's tables come through the same column lists as the GPU tables."""
    rank = scalescope.open(ROOT / "trace" / "testdata" / "golden-v1.4.sstrace").ranks[0]
    for table in ("host_threads", "host_samples", "host_callsites", "host_modules", "host_stack_samples"):
        assert table in scalescope.TABLES
        df = getattr(rank, table)
        assert len(df) == rank.event_counts[table] > 0, table
    threads = rank.host_threads
    assert threads["is_main"].dtype == bool and threads["is_main"].sum() >= 1
    assert set(rank.host_samples["state"].cat.categories) >= {"unknown"}
    # Every stack sample's leaf is a call site of the same rank.
    assert set(rank.host_stack_samples["callsite"]) <= set(rank.host_callsites["id"])
    assert rank.host_modules["map_end"].gt(rank.host_modules["map_start"]).all()


def test_collector_run_facts():
    run = scalescope.open(STUDY_RUNS[0])
    assert len(run.ranks) == len(run.files) >= 2
    gpu_ranks = [r for r in run.ranks if r.event_counts["kernels"] > 0]
    assert gpu_ranks
    for r in gpu_ranks:
        dev = r.devices
        assert len(dev) >= 1 and "H200" in dev["name"].iloc[0]
        assert r.host["hostname"].iloc[0]
        assert list(r.problems.columns) == ["problem", "severity", "count"]
        # the names stats, the CSV and the SQLite export use
        assert set(r.problems["severity"]) == {"info", "error", "data loss"}
        assert len(r.nccl) > 0  # a 2-GPU DDP run all-reduces
        assert set(r.nccl["op"].unique()) <= set(r.categories("nccl")["op"])


def test_rank_metadata_is_the_traces_process_groups_included(tmp_path):
    """A rank's metadata is what the trace holds: the process groups of a
    Kineto trace's distributedInfo too."""
    import json
    trace = {"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2,
                                 "pg_config": [{"pg_name": "0", "pg_desc": "default_pg",
                                                "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0, 1]}]},
             "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
                              "args": {"device": 0, "stream": 7, "correlation": 1}}]}
    path = tmp_path / "rank0.json"
    path.write_text(json.dumps(trace))
    meta = scalescope.open(path).ranks[0].metadata
    assert meta["rank"] == 0 and meta["world_size"] == 2
    assert meta["process_groups"] == [{"name": "0", "description": "default_pg", "backend": "cuda:nccl",
                                       "ranks": [0, 1]}]


def test_kineto_import_report(sample):
    rep = sample.import_report
    assert len(rep) > 0 and rep["events"].sum() > 0
    assert sample.import_reports[0]["events"] == rep["events"].sum()
    assert sample.ranks[0].problems["count"].sum() >= 0


def test_bad_table_name_raises(sample):
    with pytest.raises(scalescope.ScalescopeError, match="no table 'bogus'"):
        sample.ranks[0].table("bogus")


def test_without_pandas_numpy_forms_work_and_dataframes_say_why():
    import subprocess
    import sys
    from conftest import ROOT
    script = f"""
import sys
sys.modules["pandas"] = None   # import pandas now raises ImportError
sys.path.insert(0, {str(ROOT / "python")!r})
import scalescope
run = scalescope.open({str(SAMPLE)!r})
assert len(run.ranks[0].columns("kernels")["start"]) > 0
assert run.analyze().json["findings"] is not None
try:
    run.ranks[0].kernels
except ImportError as e:
    assert "pandas is not installed" in str(e) and "Rank.kernels" in str(e), e
    print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
