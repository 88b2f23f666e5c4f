"""A loaded run: its ranks' event tables as numpy arrays / DataFrames, its
facts and import report, and its analysis."""

import copy
import ctypes
import json

import numpy as np

from . import _frames
from ._lib import BOOL, DTYPES, ENUM, STRING, encode, error, lib, ss_column, take_text

#: The event tables of a rank (Rank.table(name), Rank.<name>), from the library's column lists.
TABLES = tuple(lib.ss_table_names().decode().split("\n"))


class _Handle:
    """Owns one ss_run*; every array over its memory holds a reference to it."""

    def __init__(self, path):
        self.ptr = lib.ss_open(encode(path))
        if not self.ptr:
            raise error()

    def __del__(self):
        ptr, self.ptr = getattr(self, "ptr", None), None
        if ptr:
            lib.ss_close(ptr)

    # One owner per ss_run*: a copy with the same pointer would close it twice.
    # The run is read-only, so copies share it.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce_ex__(self, protocol):
        raise TypeError("cannot pickle a scalescope run handle: it is memory of this process")


def _refuse_pickle(obj, what):
    """Runs and ranks are the trace loaded in this process (a pointer and
    arrays over its memory): a pickled copy would point at nothing. The path
    travels instead, and the other process opens it."""
    raise TypeError(
        f"cannot pickle {what}: it holds a trace loaded in this process; pass the path "
        f"({obj._path_hint()!r}) and call scalescope.open(path) in the other process"
    )


def _deepcopy_fields(obj, memo):
    """A deep copy of obj's Python fields; the run handle inside is shared
    (_Handle.__deepcopy__), so no trace is loaded or freed twice."""
    new = obj.__class__.__new__(obj.__class__)
    memo[id(obj)] = new
    for key, value in obj.__dict__.items():
        new.__dict__[key] = copy.deepcopy(value, memo)
    return new


def _enum_names(c):
    """An enum column's category names, code = position, with an 'unknown'
    level: codes past the names (a newer or damaged trace) read as unknown,
    as the CLI prints them."""
    names = c.categories.decode().split("\n")
    return names if "unknown" in names else names + ["unknown"]


class _ColumnMemory:
    """Exposes one column of the run's memory to numpy without copying; as the
    array's base it keeps the run alive for as long as the array lives."""

    def __init__(self, owner, address, length, typestr):
        self.owner = owner
        self.__array_interface__ = {
            "shape": (length,),
            "typestr": typestr,
            "data": (address, True),  # read-only: the analysis reads the same memory
            "version": 3,
        }


class Rank:
    """One traced process. Times are ns on the trace's clock (metadata["clock"]
    holds its anchors to Unix time); sizes are bytes."""

    def __init__(self, run, index, info):
        self._run = run
        self.index = index  #: position in run.ranks
        self.file = info["file"]  #: the file it was read from
        self.metadata = info["metadata"]  #: producer facts (dict, as in the trace)
        self.rank = self.metadata["rank"]  #: the job's rank, -1 when the trace does not say
        self.event_counts = info["event_counts"]  #: rows per table
        self.time_span = tuple(info["time_span"])  #: (first start, last end) over all events, ns
        self._problems = info["problems"]
        self._strings = None

    def __repr__(self):
        return f"<scalescope.Rank {self.index}: rank {self.rank}, {self.file}, {sum(self.event_counts.values())} events>"

    def _path_hint(self):
        return f"{self._run.input}, rank index {self.index}"

    def __reduce_ex__(self, protocol):
        _refuse_pickle(self, "a scalescope.Rank")

    def __copy__(self):
        new = self.__class__.__new__(self.__class__)
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo):
        return _deepcopy_fields(self, memo)

    # ---- raw columns (numpy only) ------------------------------------------------

    def _columns(self, table):
        cols = (ss_column * 32)()
        n = lib.ss_rank_table(self._run._handle.ptr, self.index, encode(table), cols, 32)
        if n < 0:
            raise error()
        return cols[: min(n, 32)]

    def columns(self, table):
        """{column: numpy array} of one table, over the trace's own memory (no
        copy, read-only). String columns hold ids into Rank.strings; enum
        columns hold codes (Rank.categories(table) names them)."""
        out = {}
        for c in self._columns(table):
            name = c.name.decode()
            if c.length == 0 or not c.data:
                out[name] = np.empty(0, dtype=DTYPES[c.dtype])
            else:
                mem = _ColumnMemory(self._run._handle, c.data, c.length, DTYPES[c.dtype])
                out[name] = np.asarray(mem)
        return out

    def categories(self, table):
        """{column: [names]} for the table's enum columns (code = position;
        codes past the last name are 'unknown', the last level where the
        enum has no unknown value of its own)."""
        return {c.name.decode(): _enum_names(c) for c in self._columns(table) if c.kind == ENUM}

    @property
    def strings(self):
        """The rank's string table: strings[id] for the ids in string columns."""
        if self._strings is None:
            blob = ctypes.c_void_p()
            offsets = ctypes.POINTER(ctypes.c_int64)()
            count = ctypes.c_int64()
            if lib.ss_rank_strings(self._run._handle.ptr, self.index, ctypes.byref(blob), ctypes.byref(offsets),
                                   ctypes.byref(count)) != 0:
                raise error()
            n = count.value
            offs = np.ctypeslib.as_array(offsets, shape=(n + 1,)).copy()
            data = ctypes.string_at(blob, int(offs[-1])) if n else b""
            self._strings = [data[offs[i]:offs[i + 1]].decode("utf-8", "replace") for i in range(n)]
        return self._strings

    def _string_categorical(self, ids):
        """A string column as a Categorical of the strings it uses, in string
        id order: a table's names only, not the rank's whole string table
        (kernel names must not list NVTX ranges or API calls)."""
        pd = _frames.pandas("Rank string columns")
        if getattr(self, "_string_array", None) is None:
            self._string_array = np.array(self.strings, dtype=object)
        used = np.zeros(len(self._string_array), dtype=bool)
        used[ids] = True
        position = np.cumsum(used) - 1
        return pd.Categorical.from_codes(position[ids], categories=pd.Index(self._string_array[used], dtype=object))

    @staticmethod
    def _enum_categorical(codes, c):
        pd = _frames.pandas("Rank enum columns")
        names = _enum_names(c)
        known = len(c.categories.decode().split("\n"))
        codes = np.where(codes < known, codes, names.index("unknown")).astype(np.int16)
        return pd.Categorical.from_codes(codes, categories=names)

    # ---- DataFrames --------------------------------------------------------------

    def table(self, name):
        """One event table as a DataFrame: numeric columns share the trace's
        memory; string and enum columns are pandas Categoricals (categories =
        the strings this column uses, or the enum's names with 'unknown');
        'duration' (end - start, ns) is added to tables with start and end."""
        pd = _frames.pandas(f"Rank.{name}")
        descs = self._columns(name)
        arrays = self.columns(name)
        data = {}
        for c in descs:
            col = c.name.decode()
            arr = arrays[col]
            if c.kind == STRING:
                data[col] = self._string_categorical(arr)
            elif c.kind == ENUM:
                data[col] = self._enum_categorical(arr, c)
            elif c.kind == BOOL:
                data[col] = arr.view(np.bool_)
            else:
                data[col] = arr
        df = pd.DataFrame(data, copy=False)
        if "start" in df.columns and "end" in df.columns:
            df["duration"] = arrays["end"] - arrays["start"]
        return df

    kernels = property(lambda self: self.table("kernels"), doc="GPU kernels (start, end, duration ns; device, stream, name, grid, block, registers, shared memory, correlation)")
    memcpy = property(lambda self: self.table("memcpy"), doc="memory copies (bytes, kind HtoD/DtoH/..., src/dst memory kind, is_async)")
    memset = property(lambda self: self.table("memset"), doc="memory sets")
    api = property(lambda self: self.table("api"), doc="CUDA runtime/driver API calls on the host")
    sync = property(lambda self: self.table("sync"), doc="synchronization (event/stream/device synchronize, stream wait event)")
    nvtx = property(lambda self: self.table("nvtx"), doc="NVTX ranges and marks (and PyTorch annotations)")
    nccl = property(lambda self: self.table("nccl"), doc="NCCL collectives (op, bytes, count, datatype, algorithm, protocol, communicator, sequence)")
    counters = property(lambda self: self.table("counters"), doc="GPU counter samples (time ns, device, metric, value)")
    host_threads = property(lambda self: self.table("host_threads"),
                            doc="the job's host threads (start, end, pid, tid, parent_pid, name, is_main, role)")
    host_samples = property(lambda self: self.table("host_samples"),
                            doc="host thread samples (time, pid, tid, state, cpu, cpu_ns, run_wait_ns, switches)")
    host_callsites = property(lambda self: self.table("host_callsites"),
                              doc="native call sites of host stacks (id, parent, function, module, address, name_status)")
    host_modules = property(lambda self: self.table("host_modules"),
                            doc="loaded modules (pid, path, build_id, map_start, map_end, map_offset)")
    host_stack_samples = property(lambda self: self.table("host_stack_samples"),
                                  doc="host stack samples (time, pid, tid, callsite: the leaf's host_callsites id)")

    @property
    def problems(self):
        """Import and collection problems: problem, severity (info, error, data loss), count."""
        return _frames.records(self._problems, ["problem", "severity", "count"], "Rank.problems")

    @property
    def devices(self):
        """Device facts: id, name, uuid, pci_bus_id, numa_node, sm_count, memory_bytes, compute_major/minor."""
        cols = ["id", "name", "uuid", "pci_bus_id", "numa_node", "sm_count", "memory_bytes", "compute_major",
                "compute_minor"]
        return _frames.records(self.metadata["devices"], cols, "Rank.devices")

    @property
    def host(self):
        """Host facts, one row: hostname, pid, rank, local_rank, world_size,
        launcher, command_line, memory_policy, cpu_affinity (list of CPUs),
        cpu_numa_nodes (NUMA nodes of those CPUs), source, producer_version."""
        m = self.metadata
        nodes = sorted({m["cpu_numa_node"][c] for c in m["cpu_affinity"] if c < len(m["cpu_numa_node"])})
        row = {k: m[k] for k in ("hostname", "pid", "rank", "local_rank", "world_size", "launcher", "command_line",
                                 "memory_policy", "source", "producer_version")}
        row["cpu_affinity"] = list(m["cpu_affinity"])
        row["cpu_numa_nodes"] = nodes
        return _frames.records([row], list(row), "Rank.host")

    @property
    def numa_pages(self):
        """The process's memory pages per NUMA node: when ('start'/'end'), node, bytes."""
        rows = [dict(when="start", **p) for p in self.metadata["pages_at_start"]]
        rows += [dict(when="end", **p) for p in self.metadata["pages_at_end"]]
        return _frames.records(rows, ["when", "node", "bytes"], "Rank.numa_pages")


class Run:
    """What scalescope.open returns: one Rank per traced process, in the order
    `scalescope analyze` reads them."""

    def __init__(self, path):
        self._handle = _Handle(path)
        info = json.loads(take_text(lib.ss_run_info_json(self._handle.ptr)))
        self.input = info["input"]  #: the path given
        self.files = info["files"]  #: file of each rank
        self.import_reports = info["import_reports"]  #: per imported Kineto file (dicts), [] for .sstrace
        self.ranks = [Rank(self, i, r) for i, r in enumerate(info["ranks"])]

    def __repr__(self):
        return f"<scalescope.Run {self.input}: {len(self.ranks)} ranks>"

    def __len__(self):
        return len(self.ranks)

    def __getitem__(self, index):
        """run[i] is run.ranks[i] (file order, as analyze reads them; a slice gives a list)."""
        return self.ranks[index]

    def __iter__(self):
        return iter(self.ranks)

    def _path_hint(self):
        return self.input

    def __reduce_ex__(self, protocol):
        _refuse_pickle(self, "a scalescope.Run")

    def __copy__(self):
        new = self.__class__.__new__(self.__class__)
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo):
        return _deepcopy_fields(self, memo)

    @property
    def import_report(self):
        """What became of each event category of imported files: input, cat, ph, events, mapped_to."""
        rows = [dict(input=r["input"], **c) for r in self.import_reports for c in r["categories"]]
        return _frames.records(rows, ["input", "cat", "ph", "events", "mapped_to"], "Run.import_report")

    def analyze(self, window=None, iteration_range=None, classes=None):
        """The analysis and findings, the same numbers as `scalescope analyze --json`.

        window: "10%:90%", "it5:it50" (iterations) or "5s:10s" / "2000000:9000000"
        (time after the first event; units ns, us, ms, s; a bare number is ns). iteration_range: the NVTX range marking one iteration.
        classes: a kernel-class rules file (path), rules text, or pairs
        [(substring, "communication"), ...] (docs/kernel-classes.md)."""
        from .analysis import Analysis

        path, text = _classes_args(classes)
        raw = take_text(lib.ss_analyze_json(self._handle.ptr, encode(window), encode(iteration_range), encode(path),
                                            encode(text)))
        return Analysis(json.loads(raw))

    def analysis_tables(self, window=None, iteration_range=None, classes=None, top=10):
        """Every table `scalescope analyze --format json` prints, all rows:
        {table id: DataFrame} (e.g. "time_breakdown_per_rank",
        "top_kernels_all_ranks", "copies_all_ranks", "host_threads_by_cpu_time"),
        each with its title and notes in df.attrs. Arguments as analyze();
        top: kernels in the top-kernel tables (1..1000)."""
        path, text = _classes_args(classes)
        options = {"window": window, "iteration_range": iteration_range, "classes_path": path, "classes_text": text,
                   "top": int(top)}
        options = {k: v for k, v in options.items() if v is not None}
        raw = take_text(lib.ss_analyze_tables_json(self._handle.ptr, json.dumps(options).encode()))
        return _frames.tables(json.loads(raw), "Run.analysis_tables")

    def stats(self, rank=None, reports=None):
        """The summaries of `scalescope stats --format json` (CUDA API, kernels,
        memory by time and size, NVTX, NCCL, problems) per rank and for all
        ranks. rank: only that rank; reports: some of api, kernels, memtime,
        memsize, nvtx, nccl, problems (default: all)."""
        options = {"rank": None if rank is None else int(rank), "reports": list(reports or [])}
        return Stats(json.loads(take_text(lib.ss_stats_json(self._handle.ptr, json.dumps(options).encode()))))


class Stats:
    """What Run.stats returns: .json (the typed summaries) and one DataFrame
    per summary, every scope's rows with its label and rank first (scope
    "all ranks", rank None: the ranks combined). Durations in ns, shares as
    fractions, rates in bytes per second."""

    def __init__(self, raw):
        self.json = raw
        self.left_out = raw["left_out"]  #: processes left out (launchers)

    def __repr__(self):
        return f"<scalescope.Stats {self.json['input']}: {[s['label'] for s in self.json['scopes']]}>"

    def _frame(self, key):
        rows, columns = [], ["scope", "rank"]
        for scope in self.json["scopes"]:
            for r in scope["stats"].get(key, []):
                for k in r:
                    if k not in columns:
                        columns.append(k)
                rows.append({"scope": scope["label"], "rank": scope["rank"], **r})
        return _frames.records(rows, columns, f"Stats.{key}")

    api = property(lambda self: self._frame("api"), doc="CUDA API calls by name: count, total_ns, avg_ns, median_ns, min_ns, max_ns, stddev_ns, share")
    kernels = property(lambda self: self._frame("kernels"), doc="GPU kernels by name (short_name, name) with their durations and share of GPU kernel time")
    memory_time = property(lambda self: self._frame("memory_time"), doc="memory copies and sets by kind, src, dst: durations and share")
    memory_size = property(lambda self: self._frame("memory_size"), doc="memory copies and sets by kind, src, dst: count and bytes")
    nvtx = property(lambda self: self._frame("nvtx"), doc="NVTX ranges by domain and range: durations")
    nccl = property(lambda self: self._frame("nccl"), doc="NCCL collectives by op, algorithm, protocol, datatype: durations, total_bytes, payload_bytes_per_s, busbw_bytes_per_s")
    problems = property(lambda self: self._frame("problems"), doc="problems found while reading: problem, severity, count")


def _classes_args(classes):
    """classes= -> (path, text) for the C API."""
    if classes is None:
        return None, None
    if isinstance(classes, (list, tuple)):
        lines = []
        for pair in classes:
            substring, cls = pair
            if "\n" in substring or "#" in substring:
                raise ValueError(f"classes: substring {substring!r} may not hold a newline or '#'")
            lines.append(f"{cls} {substring}")
        return None, "\n".join(lines) + "\n"
    text = str(classes)
    if "\n" in text:
        return None, text
    return text, None
