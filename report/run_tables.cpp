#include "report/run_tables.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "advise/advise.hpp"
#include "analyze/analyze.hpp"
#include "trace/model/kernel_short_name.hpp"

namespace scalescope::report {
namespace {

Cell pct(double fraction) { return fraction * 100; }
Cell ns(int64_t v) { return v; }
Cell nsd(double v) { return v; }

std::vector<Column> cols(std::initializer_list<ColumnSpec> spec) { return columns(spec); }

// CPU or node numbers as one cell: "0,1,5".
std::string joined(const std::vector<int32_t>& numbers) {
  std::string out;
  for (int32_t n : numbers) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

// Adds "<analysis>: skipped, <reason>" for each rank that lacks it.
bool skipped(Table& t, const analyze::RankAnalysis& r, const analyze::Availability& a) {
  if (a.available) return false;
  std::string reason = a.reason;
  if (reason.starts_with("skipped: ")) reason.erase(0, 9);
  t.add_note(fmt::format("{}: skipped, {}", r.label, reason));
  return true;
}

}  // namespace

Table breakdown_table(const analyze::RunAnalysis& run) {
  Table t("Time breakdown per rank (parts add up to wall time; overlap shown separately)",
          cols({{"rank", 0},
                {"wall_ns", 0},
                {"compute_ns", 0},
                {"compute_pct", 1},
                {"exposed_comm_ns", 0},
                {"exposed_comm_pct", 1},
                {"copies_sets_ns", 0},
                {"copies_sets_pct", 1},
                {"idle_ns", 0},
                {"idle_pct", 1},
                {"comm_overlapped_ns", 0},
                {"comm_overlap_pct", 1, 1}}));
  for (const auto& label : run.left_out)
    t.add_note(fmt::format(
        "{}: left out, a process without a rank or GPU activity (a launcher such as the torchrun agent)", label));
  for (const auto& r : run.ranks) {
    if (!r.data_loss.empty())
      t.add_note(fmt::format("{}: the trace lost data ({}); every figure covers only what could be read", r.label,
                             fmt::join(r.data_loss, ", ")));
    if (skipped(t, r, r.breakdown.availability)) continue;
    const auto& b = r.breakdown;
    const double w = b.wall_ns > 0 ? static_cast<double>(b.wall_ns) : 1;
    t.add_row({int64_t{r.rank}, ns(b.wall_ns), ns(b.compute_ns), pct(b.compute_ns / w), ns(b.exposed_communication_ns),
               pct(b.exposed_communication_ns / w), ns(b.copy_ns), pct(b.copy_ns / w), ns(b.idle_ns),
               pct(b.idle_ns / w), ns(b.overlap_ns), pct(b.overlap_fraction)});
  }
  return t;
}

static Table stream_table(const analyze::RunAnalysis& run) {
  Table t("Stream utilization", cols({{"rank", 0}, {"device", 0}, {"stream", 0}, {"busy_ns", 0}, {"busy_pct", 1}}));
  for (const auto& r : run.ranks)
    for (const auto& s : r.breakdown.streams)
      t.add_row({int64_t{r.rank}, int64_t{s.device}, int64_t{s.stream}, ns(s.busy_ns), pct(s.fraction)});
  return t;
}

Table iterations_table(const analyze::RunAnalysis& run) {
  Table t("Iterations", cols({{"rank", 0},
                              {"source", 0},
                              {"count", 0},
                              {"warmup", 0, 1},
                              {"median_ns", 0, 2},
                              {"p95_ns", 0, 2},
                              {"cv", 3, 2},
                              {"steady_median_ns", 0},
                              {"steady_p95_ns", 0, 1},
                              {"steady_cv", 3}}));
  for (const auto& r : run.ranks) {
    const auto& i = r.iterations;
    if (skipped(t, r, i.availability)) continue;
    t.add_row({int64_t{r.rank}, i.source, i.count, i.warmup_count, nsd(i.median_ns), nsd(i.p95_ns), i.cv,
               nsd(i.steady_median_ns), nsd(i.steady_p95_ns), i.steady_cv});
  }
  return t;
}

Table straggler_table(const analyze::RunAnalysis& run) {
  const auto& s = run.stragglers;
  Table t("Stragglers (lateness at matched collectives)", cols({{"rank", 0},
                                                                {"total_late_ns", 0, 1},
                                                                {"late_per_iteration_ns", 0},
                                                                {"max_late_ns", 0, 2},
                                                                {"times_last", 0, 1},
                                                                {"steady_late_ns", 0, 1},
                                                                {"steady_late_per_iteration_ns", 0},
                                                                {"steady_times_last", 0}}));
  if (!s.availability.available) {
    t.add_note("Stragglers: " + s.availability.reason);
  } else {
    for (const auto& r : s.ranks)
      t.add_row({int64_t{r.rank}, ns(r.total_late_ns), nsd(r.late_per_iteration_ns), ns(r.max_late_ns), r.times_last,
                 ns(r.steady_late_ns), nsd(r.steady_late_per_iteration_ns), r.steady_times_last});
    t.add_note(
        fmt::format("{} collectives matched ({} in steady iterations), {} unmatched; ranks waited {} in total; "
                    "ranked by lateness in the {}",
                    s.matched_collectives, s.steady_matched_collectives, s.unmatched_collectives,
                    format_duration_ns(static_cast<double>(s.total_wait_ns)), s.ranked_by));
  }
  if (s.slowest_rank >= 0 && run.ranks.size() > 1)
    t.add_note(fmt::format("slowest rank by steady median iteration: rank {} ({} vs fastest {})", s.slowest_rank,
                           format_duration_ns(s.slowest_rank_median_ns), format_duration_ns(s.fastest_rank_median_ns)));
  return t;
}

Table nccl_table(const analyze::RunAnalysis& run) {
  const analyze::NcclOpStats& all = run.nccl_ops;
  Table t("NCCL collectives by operation and message size (all ranks)", cols({{"operation", 0},
                                                                              {"message_bytes", 0},
                                                                              {"count", 0},
                                                                              {"time_ns", 0},
                                                                              {"mean_ns", 0},
                                                                              {"algorithm_gbps", 2},
                                                                              {"bus_gbps", 2, 1}}));
  if (!all.available) {
    t.add_note(all.reason);
    return t;
  }
  if (all.groups.empty()) {
    t.add_note("no NCCL collectives in these traces");
    return t;
  }
  bool unknown_bytes = false;
  const auto maybe = [](std::optional<double> x) { return x ? Cell(*x) : Cell(); };
  for (const auto& g : all.groups) {
    // Size 0: the trace did not say (e.g. a Kineto trace without NCCL's
    // payloads); unknown, not zero bytes at zero GB/s.
    const bool known = g.message_bytes > 0;
    unknown_bytes = unknown_bytes || !known;
    t.add_row({g.operation, known ? Cell(static_cast<int64_t>(g.message_bytes)) : Cell(), g.count, ns(g.time_ns),
               nsd(g.mean_ns()), maybe(g.algorithm_gb_per_s()), maybe(g.bus_gb_per_s())});
  }
  if (unknown_bytes)
    t.add_note(
        "message_bytes empty: the trace does not record the size of these collectives (the collector decodes it "
        "from NCCL's NVTX payloads, NCCL 2.18+), so no bandwidth is given for them");
  t.add_note(
      "algorithm: message bytes / kernel time (NCCL's algbw); bus: NCCL's bus bandwidth (nccl-tests factors; n = "
      "communicator size, else WORLD_SIZE; empty when unknown); time: GPU time of the collective kernels");
  return t;
}

static Table launch_table(const analyze::RunAnalysis& run) {
  Table t("Launch overhead", cols({{"rank", 0},
                                   {"kernels", 0},
                                   {"kernel_ns", 0, 2},
                                   {"launch_calls", 0, 2},
                                   {"launch_cpu_ns", 0, 1},
                                   {"median_kernel_ns", 0},
                                   {"median_launch_ns", 0},
                                   {"gpu_gaps_ns", 0},
                                   {"gap_pct", 1},
                                   {"small_kernel_pct", 1, 1},
                                   {"launch_bound", 0}}));
  for (const auto& r : run.ranks) {
    const auto& l = r.launch;
    if (skipped(t, r, l.availability)) continue;
    t.add_row({int64_t{r.rank}, l.kernel_count, ns(l.kernel_ns), l.launch_api_count, ns(l.launch_api_ns),
               nsd(l.median_kernel_ns), nsd(l.median_launch_ns), ns(l.gpu_gap_ns), pct(l.gap_fraction),
               pct(l.small_kernel_fraction), l.launch_bound});
  }
  return t;
}

Table idle_table(const analyze::RunAnalysis& run) {
  // Shares of the idle time; a duration followed by its share is hidden first on a narrow terminal.
  Table t("GPU idle time inside the iterations: host wait, kernel wait, other (docs/idle-time.md)",
          cols({{"rank", 0},
                {"idle_ns", 0},
                {"host_wait_ns", 0},
                {"host_wait_pct", 1},
                {"kernel_wait_ns", 0},
                {"kernel_wait_pct", 1},
                {"other_ns", 0},
                {"other_pct", 1}}));
  t.set_id("idle_time_breakdown");
  for (const auto& r : run.ranks) {
    const auto& b = r.idle_breakdown;
    if (skipped(t, r, b.availability)) continue;
    const double idle = b.idle_ns > 0 ? static_cast<double>(b.idle_ns) : 1;
    t.add_row({int64_t{r.rank}, ns(b.idle_ns), ns(b.host_wait_ns), pct(static_cast<double>(b.host_wait_ns) / idle),
               ns(b.kernel_wait_ns), pct(static_cast<double>(b.kernel_wait_ns) / idle), ns(b.other_ns),
               pct(static_cast<double>(b.other_ns) / idle)});
  }
  if (!run.ranks.empty())
    t.add_note(fmt::format("kernel wait: gaps under {} while the next launch was already queued",
                           format_duration_ns(static_cast<double>(analyze::kKernelWaitThresholdNs))));
  return t;
}

static Table copies_table(const analyze::RunAnalysis& run) {
  Table t("Copies and sets", cols({{"rank", 0},
                                   {"kind", 0},
                                   {"from", 0},
                                   {"to", 0},
                                   {"count", 0},
                                   {"bytes", 0, 1},
                                   {"time_ns", 0},
                                   {"gb_per_s", 2},
                                   {"sync_count", 0, 2}}));
  for (const auto& r : run.ranks) {
    const auto& c = r.copies;
    if (skipped(t, r, c.availability)) continue;
    for (const auto& g : c.groups)
      t.add_row({int64_t{r.rank}, std::string(trace::to_string(g.kind)), std::string(trace::to_string(g.src_kind)),
                 std::string(trace::to_string(g.dst_kind)), g.count, static_cast<int64_t>(g.bytes), ns(g.time_ns),
                 g.bandwidth_gbps, g.sync_count});
    if (c.memset_count > 0)
      t.add_row({int64_t{r.rank}, std::string("memset"), Cell{}, Cell{}, c.memset_count, Cell{}, ns(c.memset_ns),
                 Cell{}, Cell{}});
    t.add_note(fmt::format("{}: {} of host<->device bytes from pageable memory; {} synchronous copies", r.label,
                           format_percent(c.pageable_fraction), c.sync_copy_count));
  }
  return t;
}

static Table sync_table(const analyze::RunAnalysis& run) {
  Table t("Host synchronization", cols({{"rank", 0}, {"kind", 0}, {"count", 0}, {"total_ns", 0}}));
  for (const auto& r : run.ranks) {
    const auto& s = r.sync;
    if (skipped(t, r, s.availability)) continue;
    for (const auto& g : s.groups)
      t.add_row({int64_t{r.rank}, std::string(trace::to_string(g.kind)), g.count, ns(g.total_ns)});
    t.add_note(fmt::format("{}: host blocked in synchronize {} of wall time", r.label, format_percent(s.fraction)));
  }
  return t;
}

static Table precision_table(const analyze::RunAnalysis& run) {
  Table t("Precision (share of kernel time)", cols({{"rank", 0},
                                                    {"kernel_ns", 0},
                                                    {"fp64_pct", 1},
                                                    {"fp32_no_tensor_core_pct", 1},
                                                    {"tensor_core_pct", 1},
                                                    {"other_pct", 1}}));
  for (const auto& r : run.ranks) {
    const auto& p = r.precision;
    if (skipped(t, r, p.availability)) continue;
    const double kn = p.kernel_ns > 0 ? static_cast<double>(p.kernel_ns) : 1;
    t.add_row({int64_t{r.rank}, ns(p.kernel_ns), pct(p.fp64_fraction), pct(p.fp32_no_tensor_fraction),
               pct(p.tensor_core_fraction), pct(static_cast<double>(p.ns[0]) / kn)});
  }
  return t;
}

static Table layout_table(const analyze::RunAnalysis& run) {
  Table t("Layout: NCHW<->NHWC conversions, and fp16/bf16 kernels that exist only for NCHW data",
          {Column("rank", 0), Column("kernels", 0), Column("time_ns", 0), Column("kernel_time_pct", 2),
           Column("largest", 0), Column("largest_name", 0).scripts_only(), Column("nchw_half_kernels", 0),
           Column("nchw_half_ns", 0), Column("nchw_half_pct", 2)});
  for (const auto& r : run.ranks) {
    const auto& y = r.layout;
    if (skipped(t, r, y.availability)) continue;
    t.add_row({int64_t{r.rank}, y.conversion_count, ns(y.conversion_ns), pct(y.fraction),
               y.top.empty() ? Cell{} : Cell{y.top.front().short_name},
               y.top.empty() ? Cell{} : Cell{y.top.front().name}, y.nchw_half_count, ns(y.nchw_half_ns),
               pct(y.nchw_half_fraction)});
  }
  return t;
}

static Table input_table(const analyze::RunAnalysis& run) {
  Table t("Input pipeline",
          cols({{"rank", 0}, {"starved_gaps", 0}, {"starvation_ns", 0}, {"starvation_pct", 2}, {"compute_ns", 0}}));
  for (const auto& r : run.ranks) {
    const auto& i = r.input;
    if (skipped(t, r, i.availability)) continue;
    t.add_row({int64_t{r.rank}, i.starved_iterations, ns(i.starvation_ns), pct(i.fraction), ns(i.compute_ns)});
  }
  return t;
}

static Table numa_table(const analyze::RunAnalysis& run) {
  Table t("NUMA placement", cols({{"rank", 0},
                                  {"gpu_node", 0},
                                  {"cpu_nodes", 0},
                                  {"cpus_cross_node", 0},
                                  {"remote_memory_pct", 1},
                                  {"memory_policy", 0}}));
  for (const auto& r : run.ranks) {
    const auto& u = r.numa;
    if (skipped(t, r, u.availability)) continue;
    t.add_row({int64_t{r.rank}, int64_t{u.gpu_node}, joined(u.cpu_nodes), u.cpus_cross_node, pct(u.remote_memory_fraction),
               u.memory_policy});
  }
  return t;
}

static Table top_kernels_table(const analyze::RunAnalysis& run, int top) {
  // The short name on the terminal; the full signature for scripts.
  Table t(fmt::format("Top kernels (first rank, {} by time)", top),
          {Column("rank", 0), Column("short_name", 0), Column("name", 0).scripts_only(), Column("class", 0),
           Column("precision", 0), Column("count", 0), Column("total_ns", 0)});
  if (!run.ranks.empty()) {
    const auto& r = run.ranks.front();
    for (size_t i = 0; i < r.top_kernels.size() && i < static_cast<size_t>(top); ++i) {
      const auto& k = r.top_kernels[i];
      t.add_row({int64_t{r.rank}, k.short_name, k.name, std::string(analyze::to_string(k.cls)),
                 std::string(analyze::to_string(k.precision)), k.count, ns(k.total_ns)});
    }
  }
  return t;
}

Table all_ranks_kernels_table(const analyze::RunAnalysis& run, int top) {
  struct Sum {
    analyze::KernelClass cls;
    analyze::Precision precision;
    int64_t count = 0, total_ns = 0;
  };
  std::unordered_map<std::string_view, Sum> sums;
  int64_t all_ns = 0;
  for (const auto& r : run.ranks)
    for (const auto& k : r.top_kernels) {
      Sum& s = sums.try_emplace(k.name, Sum{k.cls, k.precision}).first->second;
      s.count += k.count;
      s.total_ns += k.total_ns;
      all_ns += k.total_ns;
    }
  std::vector<std::pair<std::string_view, Sum>> sorted(sums.begin(), sums.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.total_ns != b.second.total_ns ? a.second.total_ns > b.second.total_ns : a.first < b.first;
  });
  sorted.resize(std::min(sorted.size(), static_cast<size_t>(std::max(0, top))));
  // Short names distinct among the kernels shown (two ranks may name the
  // same short name for different signatures); the full signature for scripts.
  std::vector<std::string_view> full_names;
  for (const auto& entry : sorted) full_names.push_back(entry.first);
  const std::vector<std::string> short_names = trace::distinct_short_names(full_names);
  Table t(fmt::format("Top kernels (all ranks, {} by time)", top),
          {Column("short_name", 0), Column("name", 0).scripts_only(), Column("class", 0),
           Column("precision", 0).detail(1), Column("count", 0), Column("total_ns", 0), Column("mean_ns", 0).detail(2),
           Column("share_pct", 1)});
  t.set_id("top_kernels_all_ranks");
  for (size_t i = 0; i < sorted.size(); ++i) {
    const auto& [name, s] = sorted[i];
    t.add_row({short_names[i], std::string(name), std::string(analyze::to_string(s.cls)),
               std::string(analyze::to_string(s.precision)), s.count, ns(s.total_ns),
               nsd(s.count ? static_cast<double>(s.total_ns) / static_cast<double>(s.count) : 0.0),
               pct(all_ns ? static_cast<double>(s.total_ns) / static_cast<double>(all_ns) : 0.0)});
  }
  if (sorted.empty()) t.add_note("no kernels in these traces");
  else t.add_note("share: of the time of the kernels kept per rank (each rank's top kernels)");
  return t;
}

Table all_ranks_copies_table(const analyze::RunAnalysis& run) {
  struct Sum {
    int64_t count = 0, time_ns = 0, sync_count = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, Sum> sums;
  int64_t memset_count = 0, memset_ns = 0;
  for (const auto& r : run.ranks) {
    const auto& c = r.copies;
    if (!c.availability.available) continue;
    memset_count += c.memset_count;
    memset_ns += c.memset_ns;
    for (const auto& g : c.groups) {
      Sum& s = sums[fmt::format("{} {} -> {}", trace::to_string(g.kind), trace::to_string(g.src_kind),
                                trace::to_string(g.dst_kind))];
      s.count += g.count;
      s.time_ns += g.time_ns;
      s.bytes += g.bytes;
      s.sync_count += g.sync_count;
    }
  }
  Table t("Copies by kind and memory kind (all ranks)",
          cols({{"copy", 0}, {"count", 0}, {"bytes", 0}, {"time_ns", 0}, {"gb_per_s", 2}, {"sync_count", 0}}));
  t.set_id("copies_all_ranks");
  for (const auto& [name, s] : sums)
    t.add_row({name, s.count, static_cast<int64_t>(s.bytes), ns(s.time_ns),
               s.time_ns ? static_cast<double>(s.bytes) / static_cast<double>(s.time_ns) : 0.0, s.sync_count});
  if (memset_count > 0) t.add_row({std::string("memset"), memset_count, Cell{}, ns(memset_ns), Cell{}, Cell{}});
  if (t.rows().empty()) t.add_note("no memory copies or sets in these traces");
  return t;
}

Table host_threads_by_cpu_table(const analyze::RunAnalysis& run) {
  constexpr size_t kThreadsPerRank = 20;
  Table t(fmt::format("Host threads by CPU time (at most {} per rank; sample counts by state)", kThreadsPerRank),
          cols({{"rank", 0},
                {"thread", 0},
                {"role", 0},
                {"pid", 0, 2},
                {"tid", 0, 1},
                {"on_cpu_pct", 1},
                {"run_wait_ns", 0},
                {"running", 0, 1},
                {"sleeping", 0, 1},
                {"io_wait", 0, 1},
                {"voluntary_switches", 0, 2},
                {"involuntary_switches", 0, 2},
                {"cpus", 0}}));
  t.set_id("host_threads_by_cpu_time");
  for (const auto& r : run.ranks) {
    const auto& h = r.steady ? r.steady->host : r.host;
    if (!h.availability.available) continue;
    for (size_t i = 0; i < h.threads.size() && i < kThreadsPerRank; ++i) {
      const auto& x = h.threads[i];
      const auto samples = [&](trace::ThreadState s) { return x.state_samples[static_cast<size_t>(s)]; };
      t.add_row({int64_t{r.rank}, x.name + (x.is_main ? " (main)" : ""), std::string(trace::to_string(x.role)),
                 int64_t{x.pid}, int64_t{x.tid}, pct(x.busy_share), ns(x.run_wait_ns),
                 samples(trace::ThreadState::kRunning), samples(trace::ThreadState::kSleeping),
                 samples(trace::ThreadState::kDiskWait), x.voluntary_switches, x.involuntary_switches,
                 joined(x.cpus)});
    }
  }
  return t;
}

static std::vector<Table> perturbation_tables(const analyze::RunAnalysis& run) {
  std::vector<Table> out;
  // The collector's sampled windows: how much the profiler slowed the
  // traced iterations, measured against the detached ones of the same run.
  bool any = false;
  for (const auto& r : run.ranks) any = any || !r.perturbation.sampling.empty();
  if (any) {
    Table t(
        "Profiler perturbation (measured by the run: traced iterations against detached ones, docs/collector.md)",
        {Column("rank", 0), Column("sampling", 0), Column("iterations", 0), Column("inside", 0), Column("outside", 0),
         Column("perturbation_pct", 1), Column("ci_low_pct", 1), Column("ci_high_pct", 1), Column::prose("note")});
    t.set_id("profiler_perturbation");
    for (const auto& r : run.ranks) {
      const auto& p = r.perturbation;
      if (p.sampling.empty()) continue;
      const bool m = p.measured;
      std::string note = p.text;
      if (p.matters)
        note += fmt::format("; above {:.0f} %: launch-bound, idle-gap and host-sync figures are inflated",
                            analyze::kPerturbationMatters);
      t.add_row({r.label, p.sampling, p.seen, m ? Cell{p.inside} : Cell{}, m ? Cell{p.outside} : Cell{},
                 m ? Cell{p.percent} : Cell{}, m ? Cell{p.ci_low} : Cell{}, m ? Cell{p.ci_high} : Cell{}, note});
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<Table> host_tables(const analyze::RunAnalysis& run) {
  std::vector<Table> out;
  // The collector's host sampler (format 1.2): only for traces that have it,
  // so other outputs are unchanged. Over the advisor's steady iterations
  // where found (start-up is not a step), else the whole window.
  bool any = false;
  for (const auto& r : run.ranks) any = any || (r.steady ? r.steady->host : r.host).availability.available;
  if (any) {
    Table t(
        "Host threads (steady iterations where found; main = the traced process's main thread; cores = CPU-seconds "
        "per second)",
        cols({{"rank", 0},
              {"method", 0},
              {"main_busy_pct", 1},
              {"main_run_wait_pct", 1},
              {"main_sleep_pct", 1},
              {"main_io_pct", 1},
              {"other_threads_cores", 2},
              {"workers", 0},
              {"worker_cores", 2},
              {"mean_runnable", 1},
              {"max_runnable", 0},
              {"cores", 0},
              {"contended_pct", 1},
              {"run_wait_cores", 2},
              {"main_cpus", 0},
              {"main_on_gpu_node_pct", 1}}));
    t.set_id("host_threads");
    Table it("Host threads per iteration (main thread shares of the iteration's wall time)",
             cols({{"rank", 0},
                   {"iteration", 0},
                   {"wall_ns", 0},
                   {"main_busy_pct", 1},
                   {"main_run_wait_pct", 1},
                   {"main_sleep_pct", 1},
                   {"main_io_pct", 1},
                   {"other_threads_cores", 2},
                   {"worker_cores", 2},
                   {"mean_runnable", 1},
                   {"max_runnable", 0}}));
    it.set_id("host_iterations");
    for (const auto& r : run.ranks) {
      const auto& h = r.steady ? r.steady->host : r.host;
      if (skipped(t, r, h.availability)) continue;
      const auto& w = h.window;
      t.add_row({int64_t{r.rank}, h.method, pct(w.main_busy), h.has_run_wait ? pct(w.main_run_wait) : Cell{},
                 pct(w.main_sleep), pct(w.main_io), w.main_other_threads_cores, h.worker_processes, w.worker_cores,
                 w.mean_runnable, int64_t{w.max_runnable}, h.cores > 0 ? Cell{int64_t{h.cores}} : Cell{},
                 h.cores > 0 ? pct(h.contended_instants) : Cell{}, h.has_run_wait ? Cell{h.run_wait_cores} : Cell{},
                 joined(h.main_cpus), h.main_on_gpu_node >= 0 ? pct(h.main_on_gpu_node) : Cell{}});
      const int64_t first = r.steady ? r.steady_first_iteration : 0;
      for (const auto& i : h.iterations) {
        const auto& s = i.shares;
        it.add_row({int64_t{r.rank}, first + i.index, ns(s.wall_ns), pct(s.main_busy),
                    h.has_run_wait ? pct(s.main_run_wait) : Cell{}, pct(s.main_sleep), pct(s.main_io),
                    s.main_other_threads_cores, s.worker_cores, s.mean_runnable, int64_t{s.max_runnable}});
      }
    }
    out.push_back(std::move(t));
    out.push_back(std::move(it));
    out.push_back(host_threads_by_cpu_table(run));
    // Native call stacks (format 1.3): only where some thread has them.
    Table st(
        "Host thread stacks (native call stacks from perf_event_open: where each thread's CPU time went; "
        "self = the function the sample was in)",
        cols({{"rank", 0},
              {"tid", 0},
              {"thread", 0},
              {"stack_samples", 0},
              {"kind", 0},
              {"share_pct", 1},
              {"samples", 0},
              {"where", 0}}));
    st.set_id("host_stacks");
    bool any_stacks = false;
    for (const auto& r : run.ranks) {
      const auto& h = r.steady ? r.steady->host : r.host;
      if (!h.availability.available) continue;
      any_stacks = any_stacks || h.stack_samples > 0;
      if (h.stack_samples == 0 && h.stack_method.rfind("off", 0) == 0)
        st.add_note(fmt::format("rank {}: no native stacks ({})", r.rank, h.stack_method));
      if (h.stack_samples > 0 && !h.stack_naming.empty())
        st.add_note(fmt::format("rank {}: frame names {}", r.rank, h.stack_naming));
      for (const auto& th : h.threads) {
        if (th.stack_samples == 0) continue;
        const std::string name = th.name + (th.is_main ? " (main)" : "");
        for (const auto& f : th.top_functions)
          st.add_row({int64_t{r.rank}, int64_t{th.tid}, name, th.stack_samples, std::string("self"), pct(f.share),
                      f.samples, f.what});
        for (const auto& f : th.top_stacks)
          st.add_row({int64_t{r.rank}, int64_t{th.tid}, name, th.stack_samples, std::string("stack"), pct(f.share),
                      f.samples, f.what});
      }
    }
    if (any_stacks) out.push_back(std::move(st));
  }
  return out;
}

std::vector<Table> run_tables(const analyze::RunAnalysis& run, const std::vector<advise::Finding>& findings, int top,
                              bool all_rows) {
  std::vector<Table> out;
  const auto add = [&out](std::vector<Table> tables) {
    for (Table& t : tables) out.push_back(std::move(t));
  };
  out.push_back(breakdown_table(run));
  out.push_back(stream_table(run));
  out.push_back(iterations_table(run));
  out.push_back(straggler_table(run));
  out.push_back(nccl_table(run));
  add(node_tables(run));
  out.push_back(launch_table(run));
  out.push_back(idle_table(run));
  out.push_back(copies_table(run));
  out.push_back(all_ranks_copies_table(run));
  out.push_back(sync_table(run));
  out.push_back(precision_table(run));
  out.push_back(layout_table(run));
  out.push_back(input_table(run));
  out.push_back(numa_table(run));
  out.push_back(top_kernels_table(run, top));
  out.push_back(all_ranks_kernels_table(run, top));
  add(attribution_tables(run, top, all_rows));
  add(perturbation_tables(run));
  add(host_tables(run));
  add(python_frame_tables(run));
  if (Table clocks = gpu_clocks_table(run); !clocks.rows().empty()) out.push_back(std::move(clocks));
  out.push_back(job_table(run));
  if (Table hang = hang_table(run); !hang.rows().empty()) out.push_back(std::move(hang));
  if (Table fr = flight_recorder_table(run); !fr.rows().empty()) out.push_back(std::move(fr));
  out.push_back(findings_table(findings));
  return out;
}

}  // namespace scalescope::report
