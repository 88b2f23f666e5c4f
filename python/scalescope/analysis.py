"""The analysis of a run as DataFrames: the JSON `scalescope analyze --json`
prints (Analysis.json), cut into tables. Nothing is recomputed here, so every
number is the CLI's."""

from . import _frames

# Per-rank sections with one row of figures per rank (rank summary tables).
SECTIONS = ("breakdown", "iterations", "launch", "copies", "sync", "precision", "layout", "input", "numa",
            "idle_breakdown")

# The breakdown's columns in the order of the CLI's table (`scalescope analyze`),
# each part of the wall time with its share in percent beside it.
_BREAKDOWN_PARTS = ("compute", "exposed_communication", "copy", "idle")
_BREAKDOWN = ["rank", "label", "available", "reason", "wall_ns",
              *[c for part in _BREAKDOWN_PARTS for c in (f"{part}_ns", f"{part}_pct")],
              "overlap_ns", "overlap_pct", "communication_ns", "overlap_fraction", "window_start_ns", "window_end_ns"]

# The columns of one attribution row (analyze/attribution.hpp, AttributionRow).
_ATTRIBUTION_ROW = ["name", "kind", "calls", "gpu_ns", "self_gpu_ns", "sum_ns", "self_sum_ns", "kernels", "kernels_per_call",
                    "cpu_ns", "self_cpu_ns", "step_fraction", "gpu_ns_per_iteration"]

# The columns of one group of NCCL collectives (analyze/nccl_ops.hpp, NcclOpSize).
_NCCL_OPS = ["operation", "message_bytes", "count", "time_ns", "mean_ns", "bytes", "algorithm_gbps", "bus_bytes",
             "bus_ns", "bus_gbps"]



def _nccl_numbers(df):
    """Bandwidths as floats, NaN where the JSON has null (unknown), even when every row's is."""
    for c in ("algorithm_gbps", "bus_gbps"):
        df[c] = df[c].astype(float)
    return df


class Finding:
    """One advisor finding: id, title, severity, evidence, figures, ranks,
    saving_fraction (an upper bound, share of step time), saving_method, fix.
    Attributes and f["id"] both work."""

    def __init__(self, d):
        self._d = d

    def __getattr__(self, key):
        if key.startswith("_"):  # not a field; during unpickling or copying _d is not set yet
            raise AttributeError(key)
        try:
            return self._d[key]
        except KeyError:
            raise AttributeError(key) from None

    def __getitem__(self, key):
        return self._d[key]

    def keys(self):
        return self._d.keys()

    def to_dict(self):
        return dict(self._d)

    def __repr__(self):
        return f"<Finding {self._d['id']}: {self._d['title']} (saving <= {self._d['saving_fraction']:.1%})>"


def _summary_row(rank, section):
    """Scalars of one section of one rank; availability as available/reason;
    a dict of numbers (precision.ns) as ns_<key> columns; lists stay out."""
    row = {"rank": rank["rank"], "label": rank["label"]}
    for key, value in section.items():
        if key == "availability":
            row["available"] = value["available"]
            row["reason"] = value.get("reason", "")
        elif isinstance(value, dict):
            for k, v in value.items():
                row[f"{key}_{k}"] = v
        elif isinstance(value, list):
            if value and not isinstance(value[0], dict):
                row[key] = list(value)  # numa.cpu_nodes
        else:
            row[key] = value
    return row


class Analysis:
    """What Run.analyze returns. Times are ns; fractions are 0..1 of the
    window's wall time unless a column's name says otherwise
    (docs/python.md lists every table)."""

    def __init__(self, raw):
        self.json = raw  #: the whole result, exactly as `scalescope analyze --json` prints it
        self._ranks = raw["analysis"]["ranks"]
        self.findings = [Finding(f) for f in raw["findings"]]  #: ranked by estimated saving
        self.left_out = list(raw["analysis"]["left_out"])  #: processes left out (a launcher without GPU work)
        self.ranks = [r["rank"] for r in self._ranks]

    def __repr__(self):
        return f"<scalescope.Analysis {len(self._ranks)} ranks, {len(self.findings)} findings>"

    def _summary(self, section):
        rows = [_summary_row(r, r[section]) for r in self._ranks]
        cols = list(rows[0]) if rows else ["rank", "label"]
        return _frames.records(rows, cols, f"Analysis.{section}")

    @property
    def breakdown(self):
        """One row per rank, in the CLI's order: wall_ns, then compute,
        exposed_communication, copy (copies and sets) and idle as _ns and
        _pct (percent of wall_ns; the four add up to wall_ns and 100), then
        overlap_ns and overlap_pct (share of communication hidden under
        compute), communication_ns, overlap_fraction, the window."""
        rows = []
        for r in self._ranks:
            row = _summary_row(r, r["breakdown"])
            wall = row["wall_ns"] if row["wall_ns"] > 0 else 1  # as the CLI: an empty window's shares are 0
            for part in _BREAKDOWN_PARTS:
                row[f"{part}_pct"] = 100.0 * row[f"{part}_ns"] / wall
            row["overlap_pct"] = 100.0 * row["overlap_fraction"]
            rows.append(row)
        extra = [k for k in (rows[0] if rows else {}) if k not in _BREAKDOWN]  # fields of a newer library
        return _frames.records(rows, _BREAKDOWN + extra, "Analysis.breakdown")

    def _detail(self, section, field, columns, what):
        rows = [dict(rank=r["rank"], **item) for r in self._ranks for item in r[section][field]]
        return _frames.records(rows, ["rank"] + columns, what)

    def _kernels(self, lists, what):
        rows = []
        for r in self._ranks:
            for section, field in lists:
                src = r[section][field] if section else r[field]
                rows += [dict(rank=r["rank"], list=field, **k) for k in src]
        return _frames.records(rows, ["rank", "list", "name", "short_name", "class", "precision", "count", "total_ns"],
                               what)

    # ---- per-rank summaries (one row per rank) --------------------------------
    iterations = property(lambda s: s._summary("iterations"), doc="iteration source, count, warm-up count, median/p95/mean/cv, steady-state figures")
    launch = property(lambda s: s._summary("launch"), doc="kernels, launch API calls, medians, GPU gaps, launch_bound")
    copies_summary = property(lambda s: s._summary("copies"), doc="memsets, pageable and synchronous copies per rank")
    sync_summary = property(lambda s: s._summary("sync"), doc="host synchronize time and its fraction")
    precision = property(lambda s: s._summary("precision"), doc="kernel time by precision (ns_<precision>) and fractions")
    layout = property(lambda s: s._summary("layout"), doc="NCHW<->NHWC conversions and NCHW-only half-precision kernels")
    input = property(lambda s: s._summary("input"), doc="input starvation: starved iterations, starvation_ns, fraction")
    numa = property(lambda s: s._summary("numa"), doc="GPU node, CPU nodes, memory policy, remote memory fraction")
    idle_time_breakdown = property(lambda s: s._summary("idle_breakdown"),
                                   doc="GPU idle time inside the iterations: host wait, kernel wait, other (ns; "
                                       "the three add up to idle_ns), gap counts, threshold_ns (docs/idle-time.md)")

    # ---- detail tables ---------------------------------------------------------
    @property
    def stream_utilization(self):
        """rank, device, stream, busy_ns, fraction (of the window)."""
        return self._detail("breakdown", "streams", ["device", "stream", "busy_ns", "fraction"],
                            "Analysis.stream_utilization")

    @property
    def iteration_times(self):
        """One row per iteration: rank, index, start_ns, end_ns, duration_ns, warmup."""
        pd = _frames.pandas("Analysis.iteration_times")
        rows = []
        for r in self._ranks:
            for i, it in enumerate(r["iterations"]["iterations"]):
                rows.append({"rank": r["rank"], "index": i, "start_ns": it["start_ns"], "end_ns": it["end_ns"],
                             "duration_ns": it["end_ns"] - it["start_ns"], "warmup": it["warmup"]})
        cols = ["rank", "index", "start_ns", "end_ns", "duration_ns", "warmup"]
        return pd.DataFrame.from_records(rows, columns=cols) if rows else pd.DataFrame(columns=cols)

    @property
    def copies(self):
        """Copies grouped by kind and memory kinds: rank, kind, src_kind, dst_kind, count, bytes, time_ns, bandwidth_gbps, sync_count, sync_ns."""
        return self._detail("copies", "groups", ["kind", "src_kind", "dst_kind", "count", "bytes", "time_ns",
                                                 "bandwidth_gbps", "sync_count", "sync_ns"], "Analysis.copies")

    @property
    def sync(self):
        """Host synchronization by kind: rank, kind, count, total_ns."""
        return self._detail("sync", "groups", ["kind", "count", "total_ns"], "Analysis.sync")

    @property
    def numa_memory(self):
        """rank, node, bytes: the process's pages per NUMA node."""
        return self._detail("numa", "memory_nodes", ["node", "bytes"], "Analysis.numa_memory")

    @property
    def kernel_classes(self):
        """rank, class (compute, communication, memory, synchronization), count, total_ns."""
        rows = [dict(rank=r["rank"], **c) for r in self._ranks for c in r["classes"]]
        return _frames.records(rows, ["rank", "class", "count", "total_ns"], "Analysis.kernel_classes")

    @property
    def top_kernels(self):
        """Kernels by total time per rank (up to 200): rank, list, name (full), short_name (distinct per
        rank's list), class, precision, count, total_ns."""
        return self._kernels([(None, "top_kernels")], "Analysis.top_kernels")

    @property
    def precision_kernels(self):
        """The largest FP32 (no tensor core) and FP64 kernels: list = top_fp32 / top_fp64."""
        return self._kernels([("precision", "top_fp32"), ("precision", "top_fp64")], "Analysis.precision_kernels")

    @property
    def layout_kernels(self):
        """The largest layout conversions (list = top) and NCHW-only half kernels (top_nchw_half)."""
        return self._kernels([("layout", "top"), ("layout", "top_nchw_half")], "Analysis.layout_kernels")

    # ---- GPU time by operator, module and range (docs/attribution.md) -------------
    attribution = property(lambda s: s._summary("attribution"),
                           doc="per rank: busy_ns, attributed_ns, unattributed_ns (no_launch_ns + outside_ranges_ns), "
                               "backward_links, link_source, available/reason")

    @property
    def operators(self):
        """GPU time per operator name: rank, name, kind, calls, gpu_ns (inclusive), self_gpu_ns, sum_ns,
        self_sum_ns, kernels, kernels_per_call, cpu_ns, self_cpu_ns, step_fraction, gpu_ns_per_iteration;
        largest gpu_ns first. Unattributed time is in Analysis.attribution."""
        return self._detail("attribution", "operators", _ATTRIBUTION_ROW, "Analysis.operators")

    @property
    def ranges(self):
        """GPU time per module (nn.Module), NVTX and user range, the same columns as operators."""
        return self._detail("attribution", "ranges", _ATTRIBUTION_ROW, "Analysis.ranges")

    @property
    def attribution_tree(self):
        """The tree of paths module > ... > operator: rank, node, parent (-1 for the root, whose self time
        is the unattributed time), kind, name, gpu_ns (inclusive), self_gpu_ns, kernels."""
        rows = [dict(rank=r["rank"], node=i, **n) for r in self._ranks for i, n in enumerate(r["attribution"]["tree"])]
        return _frames.records(rows, ["rank", "node", "parent", "kind", "name", "gpu_ns", "self_gpu_ns", "kernels"],
                               "Analysis.attribution_tree")

    @property
    def attribution_iterations(self):
        """Per iteration and top operator: rank, iteration, start_ns, end_ns, busy_ns, attributed_ns,
        operator, gpu_ns (that operator's GPU time in that iteration)."""
        rows = []
        for r in self._ranks:
            a = r["attribution"]
            for i, it in enumerate(a["iterations"]):
                for k, ns in enumerate(it["top_operator_gpu_ns"][:len(a["operators"])]):
                    rows.append({"rank": r["rank"], "iteration": i, "start_ns": it["start_ns"], "end_ns": it["end_ns"],
                                 "busy_ns": it["busy_ns"], "attributed_ns": it["attributed_ns"],
                                 "operator": a["operators"][k]["name"], "gpu_ns": ns})
        return _frames.records(rows, ["rank", "iteration", "start_ns", "end_ns", "busy_ns", "attributed_ns", "operator",
                                      "gpu_ns"], "Analysis.attribution_iterations")

    @property
    def responsible_operators(self):
        """The operators (and modules) that launched the advisor's kernels of concern: rank, list
        (layout_conversions, fp32_no_tensor, tiny_kernels), operator, module, count, sum_ns."""
        rows = [dict(rank=r["rank"], list=field, **x) for r in self._ranks
                for field in ("layout_conversions", "fp32_no_tensor", "tiny_kernels") for x in r["attribution"][field]]
        return _frames.records(rows, ["rank", "list", "operator", "module", "count", "sum_ns"],
                               "Analysis.responsible_operators")

    # ---- NCCL collectives by operation and message size ----------------------------
    @property
    def nccl_ops(self):
        """Every rank's NCCL collectives by operation and message size (the HTML report's table):
        operation, message_bytes (0: the trace does not record it), count, time_ns (collective kernels'
        GPU time), mean_ns, bytes, algorithm_gbps, bus_bytes, bus_ns, bus_gbps (NaN when unknown).
        df.attrs["reason"] says why it is empty when it was not computed."""
        s = self.json["analysis"]["nccl_ops"]
        df = _nccl_numbers(_frames.records(s["groups"], _NCCL_OPS, "Analysis.nccl_ops"))
        df.attrs["reason"] = s["availability"].get("reason", "")
        return df

    @property
    def nccl_ops_by_rank(self):
        """The same per rank: rank, then the columns of nccl_ops."""
        return _nccl_numbers(self._detail("nccl_ops", "groups", _NCCL_OPS, "Analysis.nccl_ops_by_rank"))

    @property
    def stragglers(self):
        """Lateness at matched collectives: rank, total_late_ns, max_late_ns,
        late_per_iteration_ns, times_last, and the same over steady iterations: steady_late_ns,
        steady_late_per_iteration_ns, steady_times_last (empty when unavailable; see stragglers_summary)."""
        s = self.json["analysis"]["stragglers"]
        return _frames.records(s["ranks"], ["rank", "total_late_ns", "max_late_ns", "late_per_iteration_ns",
                                            "times_last", "steady_late_ns", "steady_late_per_iteration_ns",
                                            "steady_times_last"], "Analysis.stragglers")

    @property
    def stragglers_summary(self):
        """matched/unmatched collectives, total wait, slowest rank (dict)."""
        s = dict(self.json["analysis"]["stragglers"])
        s.pop("ranks")
        return s

    @property
    def data_loss(self):
        """{rank: ["torn_tail x1", ...]} for ranks whose trace lost data."""
        return {r["rank"]: r["data_loss"] for r in self._ranks if r["data_loss"]}

    @property
    def findings_table(self):
        """The findings as a DataFrame: id, severity, saving_fraction, title, evidence, fix, saving_method, ranks."""
        cols = ["id", "severity", "saving_fraction", "title", "evidence", "fix", "saving_method", "ranks"]
        return _frames.records([{k: f[k] for k in cols} for f in self.findings], cols, "Analysis.findings_table")


class Diff:
    """What scalescope.diff returns: b - a per rank mean, like `scalescope diff --json`."""

    def __init__(self, raw):
        self.json = raw
        d = raw["diff"]
        self.iteration = d["iteration"]  #: steady median iteration time, {what, a, b, delta, ratio}
        self.note = d["note"]

    def _rows(self, key):
        return _frames.records(self.json["diff"][key], ["what", "a", "b", "delta", "ratio"], f"Diff.{key}")

    breakdown = property(lambda s: s._rows("breakdown"), doc="compute, exposed communication, copies, idle, overlap, wall (ns)")
    classes = property(lambda s: s._rows("classes"), doc="kernel classes and precision (ns)")
    top_kernels = property(lambda s: s._rows("top_kernels"), doc="kernels with the largest absolute change (ns)")
    copies = property(lambda s: s._rows("copies"), doc="copy time (ns) and bytes by kind and memory kinds")
