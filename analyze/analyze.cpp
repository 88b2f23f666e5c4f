// What each analysis of a rank derives from its sums over the window (the
// sums themselves: stream_analyzer.cpp), the rank's identity and NUMA
// placement, and the collective list. Rules and definitions: docs/kernel-classes.md.
#include "analyze/analyze.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "analyze/detail.hpp"
#include "trace/model/kernel_short_name.hpp"

namespace scalescope::analyze {
namespace {

using trace::Timestamp;

trace::NcclOp op_of_kernel(std::string_view name) { return trace::nccl_op_of_kernel_name(name); }

}  // namespace

namespace detail {

bool contains_ci(std::string_view hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

std::vector<KernelSummary> top_of(const std::vector<int64_t>& ns, const std::vector<int64_t>& count,
                                  const std::vector<KernelInfo>& info, const trace::StringTable& strings, size_t limit,
                                  const std::function<bool(const KernelInfo&)>& keep) {
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < ns.size(); ++id)
    if (count[id] > 0 && keep(info[id])) ids.push_back(id);
  const size_t n = std::min(limit, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
                    [&](uint32_t a, uint32_t b) { return ns[a] > ns[b] || (ns[a] == ns[b] && a < b); });
  std::vector<KernelSummary> out;
  std::vector<std::string_view> names;
  for (size_t k = 0; k < n; ++k) {
    const uint32_t id = ids[k];
    names.push_back(strings.view(id));
    out.push_back({std::string(strings.view(id)), {}, info[id].cls, info[id].precision, count[id], ns[id]});
  }
  const std::vector<std::string> short_names = trace::distinct_short_names(names);
  for (size_t k = 0; k < n; ++k) out[k].short_name = short_names[k];
  return out;
}

std::optional<trace::SyncKind> sync_kind_of_api(std::string_view name) {
  if (contains_ci(name, "StreamSynchronize")) return trace::SyncKind::kStreamSynchronize;
  if (contains_ci(name, "DeviceSynchronize") || contains_ci(name, "CtxSynchronize"))
    return trace::SyncKind::kDeviceSynchronize;
  if (contains_ci(name, "EventSynchronize")) return trace::SyncKind::kEventSynchronize;
  return std::nullopt;
}

}  // namespace detail

namespace {

// The collector's sampling facts (collect/iteration_sampler.hpp), strings in
// the trace's metadata; a value that does not parse is left out, not guessed.
ProfilerPerturbation read_perturbation(const std::unordered_map<std::string, std::string>& extra) {
  ProfilerPerturbation p;
  auto get = [&](const char* key) -> const std::string* {
    auto it = extra.find(key);
    return it == extra.end() ? nullptr : &it->second;
  };
  auto number = [&](const char* key, double* out) {
    const std::string* v = get(key);
    if (!v) return false;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), *out);
    return ec == std::errc() && end == v->data() + v->size() && std::isfinite(*out);
  };
  if (const auto* v = get("sampling")) p.sampling = *v;
  if (p.sampling.empty()) return p;
  double seen = 0, inside = 0, outside = 0;
  if (number("iterations_seen", &seen)) p.seen = static_cast<int64_t>(seen);
  if (const auto* v = get("perturbation_text")) p.text = *v;
  if (const auto* v = get("sampling_note")) p.text = *v;
  const auto* measured = get("perturbation_measured");
  p.measured = measured && *measured == "true" && number("perturbation_pct", &p.percent) &&
               number("perturbation_ci_low_pct", &p.ci_low) && number("perturbation_ci_high_pct", &p.ci_high);
  if (p.measured && number("iterations_inside", &inside) && number("iterations_outside", &outside)) {
    p.inside = static_cast<int64_t>(inside);
    p.outside = static_cast<int64_t>(outside);
  }
  p.matters = p.measured && p.ci_low > kPerturbationMatters;
  // Repeated windows: the steady iterations run from the first traced one to
  // the last, across the detached stretches between windows, whose kernels
  // were not recorded; their GPU time counts as idle there.
  double every = 0;
  if (p.sampling == "sampled" && p.seen > 0 && number("repeat_every", &every) && every > 0)
    p.text += fmt::format(
        "; windows repeat every {:.0f} iterations: the steady analysis spans the detached "
        "iterations between them too, counted as GPU idle (analyze --window itA:itB takes one window)",
        every);
  return p;
}

}  // namespace

// Who the rank is: identity, node facts, the collector's sampling facts,
// and the data lost while tracing.
void detail::describe_rank(const trace::Trace& t, bool gpu_activity, RankAnalysis& r) {
  r.rank = t.meta.rank;
  r.label = t.meta.rank >= 0 ? fmt::format("rank {}", t.meta.rank) : std::string("rank ?");
  r.source = t.meta.source;
  r.hostname = t.meta.hostname;
  r.pid = t.meta.pid;
  r.process_groups = t.meta.process_groups;
  r.world_size = t.meta.world_size;
  auto extra_int = [&](const char* key) {
    auto it = t.meta.extra.find(key);
    int32_t v = -1;
    if (it != t.meta.extra.end()) {
      auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
      if (ec != std::errc() || p != it->second.data() + it->second.size() || v < 0) v = -1;
    }
    return v;
  };
  r.node_rank = extra_int("node_rank");
  r.node_count = extra_int("node_count");
  if (auto it = t.meta.extra.find("node_list"); it != t.meta.extra.end()) r.node_list = it->second;
  r.perturbation = read_perturbation(t.meta.extra);
  r.gpu_activity = gpu_activity;
  for (int p = 0; p < trace::kProblemCount; ++p) {
    const auto problem = static_cast<trace::Problem>(p);
    if (trace::severity_of(problem) == trace::Severity::kDataLoss && t.problems.get(problem) > 0)
      r.data_loss.push_back(fmt::format("{} x{}", trace::to_string(problem), t.problems.get(problem)));
  }
}

// The detected iterations that lie wholly inside the window, summarized.
IterationStats detail::window_iterations(const Detected& detected, Timestamp ws, Timestamp we,
                                         double warmup_tolerance) {
  IterationStats st;
  if (detected.iterations.empty()) {
    st.availability = {false, "skipped: " + detected.reason};
    return st;
  }
  st.source = detected.source;
  for (size_t i = 0; i < detected.iterations.size(); ++i) {
    const Iteration& it = detected.iterations[i];
    if (it.start < ws || it.end > we) continue;
    if (st.iterations.empty()) st.first_number = static_cast<int64_t>(i);
    st.iterations.push_back(it);
  }
  if (st.iterations.empty())
    st.availability = {false, fmt::format("skipped: none of the {} iterations ({}) lies inside the window",
                                          detected.iterations.size(), detected.source)};
  else detail::summarize_iterations(st, warmup_tolerance);
  return st;
}

// Precision and layout shares from the sums of the window's kernels, and the
// top lists by name.
void detail::finish_kernel_tables(bool no_kernels, const trace::StringTable& strings, const Options& o,
                                  const std::vector<KernelInfo>& info, const std::vector<int64_t>& ns,
                                  const std::vector<int64_t>& count, RankAnalysis& r) {
  PrecisionStats& prec = r.precision;
  LayoutStats& layout = r.layout;
  if (no_kernels) {
    prec.availability = {false, "skipped: the trace has no kernels"};
    layout.availability = {false, "skipped: the trace has no kernels"};
  }
  if (prec.kernel_ns > 0) {
    const double kn = static_cast<double>(prec.kernel_ns);
    prec.fp64_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kFp64)]) / kn;
    prec.fp32_no_tensor_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kFp32NoTensor)]) / kn;
    prec.tensor_core_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kTensorCore)]) / kn;
    prec.tf32_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kTf32)]) / kn;
    layout.fraction = static_cast<double>(layout.conversion_ns) / kn;
    layout.nchw_half_fraction = static_cast<double>(layout.nchw_half_ns) / kn;
  }
  prec.top_fp32 =
      top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.precision == Precision::kFp32NoTensor; });
  prec.top_fp64 =
      top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.precision == Precision::kFp64; });
  layout.top = top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.layout_conversion; });
  layout.top_nchw_half = top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.nchw_half; });
  r.top_kernels = top_of(ns, count, info, strings, static_cast<size_t>(std::max(0, o.top_kernels)),
                         [](const KernelInfo&) { return true; });
}

void detail::finish_breakdown(RankBreakdown& b, bool rows) {
  if (!rows) b.availability = {false, "skipped: the trace has no GPU activity (kernels, copies, sets or collectives)"};
  b.exposed_communication_ns = b.communication_ns - b.overlap_ns;
  b.idle_ns = b.wall_ns - b.compute_ns - b.exposed_communication_ns - b.copy_ns;
  b.overlap_fraction =
      b.communication_ns > 0 ? static_cast<double>(b.overlap_ns) / static_cast<double>(b.communication_ns) : 0;
}

void detail::finish_launch(LaunchStats& ls, int64_t small, int64_t wall, bool rows) {
  ls.small_kernel_fraction =
      ls.kernel_count > 0 ? static_cast<double>(small) / static_cast<double>(ls.kernel_count) : 0;
  ls.gap_fraction = wall > 0 ? static_cast<double>(ls.gpu_gap_ns) / static_cast<double>(wall) : 0;
  if (!rows) {
    ls.availability = {false, "skipped: the trace has no kernels"};
    return;
  }
  const bool cpu_slower =
      ls.launch_api_count > 0 ? ls.median_launch_ns >= 0.5 * ls.median_kernel_ns : ls.small_kernel_fraction >= 0.5;
  ls.launch_bound = ls.gap_fraction >= 0.10 && cpu_slower;
}

void detail::finish_copies(CopyStats& cp, CopyGroups& groups, uint64_t host_bytes, bool rows) {
  for (auto& [key, g] : groups) {
    g.bandwidth_gbps = g.time_ns > 0 ? static_cast<double>(g.bytes) / static_cast<double>(g.time_ns) : 0;
    cp.groups.push_back(g);
  }
  std::sort(cp.groups.begin(), cp.groups.end(),
            [](const CopyGroup& a, const CopyGroup& b) { return a.time_ns > b.time_ns; });
  cp.pageable_fraction = host_bytes > 0 ? static_cast<double>(cp.pageable_bytes) / static_cast<double>(host_bytes) : 0;
  if (!rows) cp.availability = {false, "skipped: the trace has no memory copies or sets"};
}

void detail::finish_sync(SyncStats& sy, const std::map<trace::SyncKind, SyncGroup>& groups, int64_t wall, bool rows) {
  if (!rows) sy.availability = {false, "skipped: the trace has no synchronization records and no CUDA API calls"};
  for (const auto& [kind, g] : groups) sy.groups.push_back(g);
  sy.fraction = wall > 0 ? static_cast<double>(sy.host_sync_ns) / static_cast<double>(wall) : 0;
}

std::pair<Timestamp, Timestamp> detail::input_span(const IterationStats& its, Timestamp ws, Timestamp we) {
  if (its.count > 0) return {its.iterations.front().start, its.iterations.back().end};
  return {ws, we};
}

void detail::finish_input(InputStats& in, const IterationStats& its, Timestamp ws, Timestamp we, bool any_htod,
                          int64_t compute_ns) {
  in.iterations = its.count;
  in.compute_ns = compute_ns;
  const auto [span_start, span_end] = input_span(its, ws, we);
  const int64_t denom = its.count > 0 ? std::max<int64_t>(1, span_end - span_start) : std::max<int64_t>(0, we - ws);
  in.fraction = denom > 0 ? static_cast<double>(in.starvation_ns) / static_cast<double>(denom) : 0;
  if (!any_htod) in.availability = {false, "skipped: no host-to-device copies in the window"};
  else if (compute_ns == 0) in.availability = {false, "skipped: no compute kernels in the window"};
}

// NUMA placement of the process's CPUs and memory against the GPU's node.
NumaStats detail::analyze_numa(const trace::Metadata& meta) {
  NumaStats nu;
  int32_t gpu_node = -1;
  for (const auto& d : meta.devices)
    if (d.numa_node >= 0) {
      gpu_node = d.numa_node;
      break;
    }
  if (meta.cpu_affinity.empty() || meta.cpu_numa_node.empty()) {
    nu.availability = {false, meta.source == "kineto"
                                  ? "skipped: the trace has no host facts (imported from PyTorch profiler)"
                                  : "skipped: the trace has no CPU affinity or CPU NUMA map"};
    return nu;
  }
  if (gpu_node < 0) {
    nu.availability = {false, "skipped: the NUMA node of the GPU is unknown"};
    return nu;
  }
  nu.gpu_node = gpu_node;
  std::set<int32_t> nodes;
  for (uint32_t cpu : meta.cpu_affinity)
    if (cpu < meta.cpu_numa_node.size() && meta.cpu_numa_node[cpu] >= 0) nodes.insert(meta.cpu_numa_node[cpu]);
  nu.cpu_nodes.assign(nodes.begin(), nodes.end());
  nu.cpus_cross_node = std::any_of(nodes.begin(), nodes.end(), [&](int32_t n) { return n != gpu_node; });
  nu.memory_nodes = meta.pages_at_end.empty() ? meta.pages_at_start : meta.pages_at_end;
  nu.memory_policy = meta.memory_policy;
  uint64_t all = 0, remote = 0;
  for (const auto& p : nu.memory_nodes) {
    all += p.bytes;
    if (p.node != gpu_node) remote += p.bytes;
  }
  nu.remote_memory_fraction = all > 0 ? static_cast<double>(remote) / static_cast<double>(all) : 0;
  return nu;
}

// A window past this rank's end (or inside a gap of zero length) leaves no
// time to share out: say so instead of printing zeros.
static std::string empty_window_reason(const WindowSpec& w) {
  return fmt::format("skipped: the window {} holds no time of this rank's trace", w.to_string());
}

void detail::mark_empty_window(const Options& o, int64_t wall, RankAnalysis& r) {
  if (!o.window || wall != 0) return;
  const std::string why = empty_window_reason(*o.window);
  for (Availability* a :
       {&r.breakdown.availability, &r.launch.availability, &r.copies.availability, &r.sync.availability,
        &r.precision.availability, &r.layout.availability, &r.input.availability, &r.idle_cover.availability,
        &r.idle_breakdown.availability})
    if (a->available) *a = {false, why};
}

void detail::mark_empty_window(const Options& o, int64_t wall, Attribution& a) {
  if (!o.window || wall != 0 || !a.available) return;
  a.available = false;
  a.reason = empty_window_reason(*o.window);
}

// Collectives for straggler matching, in start order: NCCL's records, else
// the communication kernels. Sequence numbers count over the whole trace.
std::vector<CollectiveArrival> detail::collective_arrivals(const trace::Trace& t, Timestamp ws, Timestamp we,
                                                           const std::vector<KernelInfo>& info,
                                                           const std::vector<Iteration>& iterations) {
  std::vector<CollectiveArrival> out;
  std::map<std::pair<trace::StringId, trace::NcclOp>, int64_t> occurrence;
  // Collectives before the first steady iteration belong to the warm-up.
  Timestamp steady_start = std::numeric_limits<Timestamp>::min();
  for (const Iteration& it : iterations)
    if (!it.warmup) {
      steady_start = it.start;
      break;
    }
  auto push = [&](trace::StringId comm_id, trace::NcclOp op, int64_t seq, Timestamp s, Timestamp e) {
    int64_t& n = occurrence[{comm_id, op}];
    const int64_t sequence = seq >= 0 ? seq : n;
    ++n;
    if (e < ws || s > we || e < s) return;  // outside the window
    CollectiveArrival c;
    c.communicator = comm_id;
    c.op = op;
    c.sequence = sequence;
    c.arrival_unix_ns = t.meta.to_unix_ns(s);
    c.end_unix_ns = t.meta.to_unix_ns(e);
    c.warmup = s < steady_start;
    out.push_back(c);
  };
  const auto& nc = t.nccl;
  const auto& k = t.kernels;
  if (nc.size() > 0) {
    std::vector<uint32_t> order(nc.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return nc.start[x] < nc.start[y]; });
    for (uint32_t i : order) push(nc.communicator[i], nc.op[i], nc.sequence[i], nc.start[i], nc.end[i]);
  } else {
    std::vector<uint32_t> order;
    for (uint32_t i = 0; i < k.size(); ++i)
      if (info[k.name[i]].cls == KernelClass::kCommunication) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return k.start[x] < k.start[y]; });
    for (uint32_t i : order) push(trace::kNoString, op_of_kernel(t.strings.view(k.name[i])), -1, k.start[i], k.end[i]);
  }
  std::set<trace::StringId> comms;
  for (const auto& c : out) comms.insert(c.communicator);
  std::unordered_map<trace::StringId, std::string> names;
  for (trace::StringId id : comms) names[id] = std::string(t.strings.view(id));
  for (auto& c : out) c.communicator_name = names[c.communicator];
  return out;
}

}  // namespace scalescope::analyze
