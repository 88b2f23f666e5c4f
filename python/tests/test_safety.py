"""What the package promises about the user's files and the interpreter
(docs/data-safety.md, "Python"): outputs never replace an input, handles
cannot be copied into a double free or pickled into a dangling pointer, paths
with a NUL are refused, and codes a trace should not hold read as 'unknown'.
Cases that could crash run in a fresh interpreter, so a crash fails the test
instead of ending pytest."""

import os
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

import scalescope
from conftest import MLPERF_TESTDATA, ROOT, SAMPLE, STUDY_RUNS, SWEEP_DB


def run_python(code, folder, timeout=120):
    """Runs code as a script (worker processes of spawn and forkserver import
    it again) in a fresh interpreter that imports this checkout's package."""
    script = folder / "script.py"
    script.write_text(f"import sys; sys.path.insert(0, {str(ROOT / 'python')!r})\n" + textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=timeout, cwd=folder)


def assert_clean_exit(proc):
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stdout[-1000:]} {proc.stderr[-2000:]}"


# ---- outputs never replace an input ---------------------------------------------


@pytest.fixture
def inputs(tmp_path):
    """A trace, a sweep database and a link to the trace, with their bytes."""
    trace = tmp_path / "t.json.gz"
    db = tmp_path / "sweep.db"
    shutil.copy(SAMPLE, trace)
    shutil.copy(SWEEP_DB, db)
    link = tmp_path / "link.json.gz"
    link.symlink_to(trace)
    return trace, db, link, {trace: trace.read_bytes(), db: db.read_bytes()}


@pytest.mark.parametrize("case", ["sweep_db", "trace_itself", "link_as_output", "link_as_input"])
def test_report_never_writes_over_an_input(inputs, case):
    trace, db, link, before = inputs
    args = {"sweep_db": ([trace, db], db), "trace_itself": (trace, trace), "link_as_output": ([trace], link),
            "link_as_input": ([link], trace)}[case]
    with pytest.raises(scalescope.ScalescopeError, match="is the input"):
        scalescope.report(*args)
    for path, data in before.items():
        assert path.read_bytes() == data, f"{path.name} was changed"
    assert link.is_symlink()


def test_report_still_writes_a_new_page(inputs, tmp_path):
    trace, db, _, _ = inputs
    page = tmp_path / "page.html"
    scalescope.report([trace, db], page)
    assert b"<html" in page.read_bytes()
    scalescope.report([trace], page)  # an older page is replaced, as `scalescope report -o` does
    assert b"<html" in page.read_bytes()


def test_report_refuses_an_output_inside_an_input_folder(tmp_path):
    run = tmp_path / "run.ssrun"
    shutil.copytree(STUDY_RUNS[0], run)
    rank0 = sorted(run.glob("*.sstrace"))[0]
    before = rank0.read_bytes()
    with pytest.raises(scalescope.ScalescopeError, match="inside the input folder"):
        scalescope.report([run], rank0)
    with pytest.raises(scalescope.ScalescopeError, match="inside the input folder"):
        scalescope.report([run], run / "report.html")
    assert rank0.read_bytes() == before
    assert not (run / "report.html").exists()


def test_mlperf_ingest_output_is_never_an_input(tmp_path):
    tree = tmp_path / "results"
    shutil.copytree(MLPERF_TESTDATA, tree)
    log = next(p for p in sorted(tree.rglob("*.txt")))
    before = log.read_bytes()
    with pytest.raises(scalescope.ScalescopeError, match="is the input"):
        scalescope.mlperf.ingest(tree, output=tree)
    with pytest.raises(scalescope.ScalescopeError, match="inside the input folder"):
        scalescope.mlperf.ingest(tree, output=log)
    assert log.read_bytes() == before
    ok = tmp_path / "runs.csv"
    scalescope.mlperf.ingest(tree, output=ok)
    assert ok.stat().st_size > 0


# ---- handles: copies share the trace, pickling is refused ------------------------


def test_deepcopy_and_copy_do_not_double_free(tmp_path):
    proc = run_python(f"""
        import copy, gc, scalescope
        run = scalescope.open({str(STUDY_RUNS[0])!r})
        n = len(run.ranks[0].kernels)
        twin, shallow = copy.deepcopy(run), copy.copy(run)
        rank_twin = copy.deepcopy(run.ranks[0])
        assert twin is not run and twin.ranks[0]._run is twin
        del run; gc.collect()
        assert len(twin.ranks[0].kernels) == n and len(shallow[0].kernels) == n and len(rank_twin.kernels) == n
        del twin; gc.collect()
        assert len(shallow.ranks[0].kernels) == n
        del shallow, rank_twin; gc.collect()
        print("ok")
    """, tmp_path)
    assert_clean_exit(proc)
    assert proc.stdout.strip() == "ok"


def test_pickling_a_run_or_rank_is_a_clear_type_error(tmp_path):
    proc = run_python(f"""
        import gc, pickle, scalescope
        run = scalescope.open({str(STUDY_RUNS[0])!r})
        for obj in (run, run.ranks[0], run._handle):
            for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
                try:
                    pickle.dumps(obj, protocol)
                except TypeError as e:
                    assert "cannot pickle" in str(e), e
                else:
                    raise SystemExit(f"{{type(obj).__name__}} pickled with protocol {{protocol}}")
        # What may travel does: the analysis and plain arrays and DataFrames.
        analysis = run.analyze()
        rank = next(r for r in run.ranks if r.event_counts["kernels"])
        a = pickle.loads(pickle.dumps(analysis))
        k = pickle.loads(pickle.dumps(rank.kernels))
        assert a.json == analysis.json and [f.id for f in a.findings] == [f.id for f in analysis.findings]
        assert k.equals(rank.kernels) and len(k) == rank.event_counts["kernels"]
        del run, rank, analysis; gc.collect()
        assert len(k["name"].astype(str)) == len(k)
        print("ok")
    """, tmp_path)
    assert_clean_exit(proc)
    assert proc.stdout.strip() == "ok"


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_process_pool_given_a_run_fails_fast(method, tmp_path):
    # A Run handed to a worker process is refused at once in the parent, with
    # the hint to pass the path; the pool neither hangs nor breaks.
    proc = run_python(f"""
        import concurrent.futures, multiprocessing, scalescope
        def count(run): return len(run.ranks)
        def count_path(path): return len(scalescope.open(path).ranks)
        if __name__ == "__main__":
            ctx = multiprocessing.get_context({method!r})
            run = scalescope.open({str(STUDY_RUNS[0])!r})
            with ctx.Pool(1) as pool:
                try:
                    pool.map(count, [run])
                except TypeError as e:
                    assert "scalescope.open(path)" in str(e), e
                else:
                    raise SystemExit("a Run went through Pool.map")
                assert pool.map(count_path, [run.input]) == [len(run.ranks)]
            with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as ex:
                try:
                    ex.submit(count, run).result(timeout=60)
                except TypeError as e:
                    assert "scalescope.open(path)" in str(e), e
                else:
                    raise SystemExit("a Run went through ProcessPoolExecutor")
                assert ex.submit(count_path, run.input).result(timeout=60) == len(run.ranks)
            print("ok")
    """, tmp_path, timeout=180)
    assert_clean_exit(proc)
    assert proc.stdout.strip().endswith("ok")


# ---- a NUL in a path --------------------------------------------------------------


def test_a_nul_in_a_path_is_refused(tmp_path):
    trace = tmp_path / "t.json.gz"
    shutil.copy(SAMPLE, trace)
    page = tmp_path / "page.html"
    calls = [
        lambda: scalescope.open(f"{trace}\0.ignored"),
        lambda: scalescope.open(os.fsencode(trace) + b"\0x"),
        lambda: scalescope.report([trace], f"{page}\0.txt"),
        lambda: scalescope.report([f"{trace}\0x"], page),
        lambda: scalescope.sweep(f"{SWEEP_DB}\0x"),
        lambda: scalescope.mlperf.ingest(MLPERF_TESTDATA, output=f"{tmp_path}/runs.csv\0x"),
        lambda: scalescope.mlperf.ingest(f"{MLPERF_TESTDATA}\0x"),
        lambda: scalescope.mlperf.scores(f"{tmp_path}/runs.csv\0x"),
        lambda: scalescope.open(trace).analyze(classes=f"{tmp_path}/rules\0x"),
        lambda: scalescope.diff(trace, trace, classes=f"{tmp_path}/rules\0x"),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="NUL"):
            call()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json.gz"], "something was written"


# ---- enum codes the trace should not hold ------------------------------------------


def _varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _column(values):
    """A packed column (docs/trace-format.md, "Table chunks"): base = the
    minimum, the smallest width that holds max - min, bytes shuffled."""
    base = min(values)
    width = next(w for w in (1, 2, 4, 8) if max(values) - base < 1 << (8 * w))
    raw = [(v - base).to_bytes(width, "little") for v in values]
    shuffled = bytes(r[b] for b in range(width) for r in raw)
    return b"\x01" + bytes([width]) + _varint(base) + shuffled


def _chunk(kind, rows, payload):
    import xxhash  # python3-xxhash: the format's checksum
    head = struct.pack("<HHIQQQ", kind, 0, rows, len(payload), len(payload), xxhash.xxh64_intdigest(payload))
    return head + struct.pack("<Q", xxhash.xxh64_intdigest(head)) + payload


def _table(kind, columns):
    """A table chunk: {column id: values}; columns left out read as their defaults."""
    rows = len(next(iter(columns.values())))
    body = _varint(len(columns))
    for cid, values in sorted(columns.items()):
        col = _column(values)
        body += _varint(cid) + _varint(len(col)) + col
    return _chunk(kind, rows, body)


def write_trace_with_codes(path, memcpy_kinds, api_domains, nvtx_kinds):
    """A .sstrace (format 1.1, as docs/trace-format.md lays it out) whose enum
    columns hold the given codes: what a newer writer or a damaged file may hold."""
    chunks = [
        _table(17, {1: [1000 * (i + 1) for i in range(len(memcpy_kinds))], 2: [100] * len(memcpy_kinds),
                    6: [4096] * len(memcpy_kinds), 7: memcpy_kinds}),
        _table(19, {1: [1000 * (i + 1) for i in range(len(api_domains))], 2: [50] * len(api_domains),
                    4: api_domains}),
        _table(21, {1: [1000 * (i + 1) for i in range(len(nvtx_kinds))], 2: [10] * len(nvtx_kinds),
                    3: nvtx_kinds}),
    ]
    data = b"SSTRACE\x1a" + struct.pack("<HHI", 1, 1, 0) + b"".join(chunks)
    data += _chunk(4, 0, _varint(len(chunks)) + _varint(len(data)))
    path.write_bytes(data)


def test_unknown_enum_codes_read_as_unknown(tmp_path):
    pd = pytest.importorskip("pandas")
    path = tmp_path / "codes.sstrace"
    write_trace_with_codes(path, memcpy_kinds=[1, 10, 200, 255, 0], api_domains=[0, 250, 3], nvtx_kinds=[1, 77, 0])
    rank = scalescope.open(path).ranks[0]
    assert list(rank.memcpy["kind"].astype(str)) == ["HtoD", "unknown", "unknown", "unknown", "unknown"]
    assert list(rank.api["domain"].astype(str)) == ["runtime", "unknown", "other"]
    assert list(rank.nvtx["kind"].astype(str)) == ["mark", "unknown", "range"]
    for table, column in (("memcpy", "kind"), ("api", "domain"), ("nvtx", "kind"), ("sync", "kind"), ("nccl", "op"),
                          ("counters", "metric"), ("memset", "dst_kind")):
        cats = rank.table(table)[column].cat.categories
        assert "unknown" in cats, (table, column)
        assert "unknown" in rank.categories(table)[column]
    assert not rank.memcpy["kind"].isna().any()
    assert isinstance(rank.memcpy["kind"].dtype, pd.CategoricalDtype)


# ---- inputs that are not regular files, inputs cut while read ---------------------


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_classes_naming_a_fifo_or_device_is_refused_at_once(kind, tmp_path):
    # Reading a FIFO without a writer waits forever and /dev/zero never ends:
    # both are refused before they are opened (in a fresh interpreter with a
    # timeout, so a wait fails the test instead of holding pytest).
    rules = "/dev/zero"
    if kind == "fifo":
        rules = tmp_path / "rules"
        os.mkfifo(rules)
    proc = run_python(f"""
        import scalescope
        for call in (lambda: scalescope.open({str(SAMPLE)!r}).analyze(classes={str(rules)!r}),
                     lambda: scalescope.diff({str(SAMPLE)!r}, {str(SAMPLE)!r}, classes={str(rules)!r})):
            try:
                call()
            except scalescope.ScalescopeError as e:
                assert "is not a regular file" in str(e), e
            else:
                raise SystemExit("classes naming a {kind} was read")
        print("ok")
    """, tmp_path, timeout=60)
    assert_clean_exit(proc)
    assert proc.stdout.strip() == "ok"


def _big_nsys_export(path):
    """An nsys export of 300,000 kernels and launch calls (about 25 MB): an
    import long enough to cut the file while it runs."""
    import sqlite3
    db = sqlite3.connect(path)
    db.executescript("""
        PRAGMA journal_mode=OFF;
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
          streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
          globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
        INSERT INTO StringIds VALUES (1, 'void gemm_kernel<float>(float*, int)'), (2, 'cudaLaunchKernel_v7000');
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000)
          INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT 1000 * i, 1000 * i + 500, 0, 7, i, 281546145660928, 1 FROM n;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000)
          INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT 1000 * i - 100, 1000 * i - 50, 0, 281546145665170, i, 2, 0
          FROM n;
    """)
    db.close()


def test_an_nsys_export_cut_while_read_is_one_error(tmp_path):
    # An importer that maps the export dies of SIGBUS on the first page past
    # the new end, and takes the interpreter with it. Read through SQLite
    # without a map, the cut is a ScalescopeError naming the file (or, cut
    # after the last read, a result).
    import time
    big = tmp_path / "big.sqlite"
    _big_nsys_export(big)
    size = big.stat().st_size
    refused = 0
    for part in (4, 2):
        cut = tmp_path / "cut.sqlite"
        shutil.copy(big, cut)
        script = tmp_path / "open.py"
        script.write_text(textwrap.dedent(f"""
            import sys; sys.path.insert(0, {str(ROOT / 'python')!r})
            import scalescope
            try:
                run = scalescope.open({str(cut)!r})
                print("read", sum(r.event_counts["kernels"] for r in run.ranks))
            except scalescope.ScalescopeError as e:
                print("error:", e)
        """))
        child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        deadline = time.monotonic() + 60
        while child.poll() is None and time.monotonic() < deadline:
            try:
                if any(os.path.realpath(f"/proc/{child.pid}/fd/{fd}") == str(cut)
                       for fd in os.listdir(f"/proc/{child.pid}/fd")):
                    break
            except OSError:
                pass
            time.sleep(0.005)
        os.truncate(cut, size // part)
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, f"cut to 1/{part}: exit {child.returncode}: {err[-2000:]}"
        if out.startswith("error:"):
            refused += 1
            assert "cut.sqlite" in out, out
    if refused == 0:
        pytest.skip("every import finished before its file was cut: nothing was tested")
