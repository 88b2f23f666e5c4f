// JSON forms of the analysis results (nlohmann::json ADL to_json).
#include <nlohmann/json.hpp>

#include "analyze/analyze.hpp"

namespace scalescope::analyze {

using nlohmann::json;

void to_json(json& j, const Availability& v) {
  j = json{{"available", v.available}};
  if (!v.available) j["reason"] = v.reason;
}

void to_json(json& j, const RankBreakdown& v) {
  j = json{{"availability", v.availability},
           {"window_start_ns", v.window_start},
           {"window_end_ns", v.window_end},
           {"wall_ns", v.wall_ns},
           {"compute_ns", v.compute_ns},
           {"exposed_communication_ns", v.exposed_communication_ns},
           {"copy_ns", v.copy_ns},
           {"idle_ns", v.idle_ns},
           {"communication_ns", v.communication_ns},
           {"overlap_ns", v.overlap_ns},
           {"overlap_fraction", v.overlap_fraction}};
  json streams = json::array();
  for (const auto& s : v.streams)
    streams.push_back({{"device", s.device}, {"stream", s.stream}, {"busy_ns", s.busy_ns}, {"fraction", s.fraction}});
  j["streams"] = std::move(streams);
}

void to_json(json& j, const IterationStats& v) {
  j = json{{"availability", v.availability},
           {"source", v.source},
           {"count", v.count},
           {"warmup_count", v.warmup_count},
           {"median_ns", v.median_ns},
           {"p95_ns", v.p95_ns},
           {"mean_ns", v.mean_ns},
           {"cv", v.cv},
           {"steady_median_ns", v.steady_median_ns},
           {"steady_p95_ns", v.steady_p95_ns},
           {"steady_cv", v.steady_cv}};
  json its = json::array();
  for (const auto& it : v.iterations)
    its.push_back({{"start_ns", it.start}, {"end_ns", it.end}, {"warmup", it.warmup}});
  j["iterations"] = std::move(its);
}

void to_json(json& j, const LaunchStats& v) {
  j = json{{"availability", v.availability},
           {"kernel_count", v.kernel_count},
           {"kernel_ns", v.kernel_ns},
           {"launch_api_count", v.launch_api_count},
           {"launch_api_ns", v.launch_api_ns},
           {"median_kernel_ns", v.median_kernel_ns},
           {"median_launch_ns", v.median_launch_ns},
           {"gpu_gap_ns", v.gpu_gap_ns},
           {"gap_count", v.gap_count},
           {"gap_fraction", v.gap_fraction},
           {"small_kernel_fraction", v.small_kernel_fraction},
           {"launch_bound", v.launch_bound}};
}

void to_json(json& j, const CopyStats& v) {
  json groups = json::array();
  for (const auto& g : v.groups)
    groups.push_back({{"kind", trace::to_string(g.kind)},
                      {"src_kind", trace::to_string(g.src_kind)},
                      {"dst_kind", trace::to_string(g.dst_kind)},
                      {"count", g.count},
                      {"bytes", g.bytes},
                      {"time_ns", g.time_ns},
                      {"bandwidth_gbps", g.bandwidth_gbps},
                      {"sync_count", g.sync_count},
                      {"sync_ns", g.sync_ns}});
  j = json{{"availability", v.availability},
           {"groups", std::move(groups)},
           {"memset_count", v.memset_count},
           {"memset_ns", v.memset_ns},
           {"host_to_device_bytes", v.host_to_device_bytes},
           {"pageable_bytes", v.pageable_bytes},
           {"pageable_ns", v.pageable_ns},
           {"pageable_host_ns", v.pageable_host_ns},
           {"pageable_fraction", v.pageable_fraction},
           {"sync_copy_count", v.sync_copy_count},
           {"sync_copy_ns", v.sync_copy_ns}};
}

void to_json(json& j, const SyncStats& v) {
  json groups = json::array();
  for (const auto& g : v.groups)
    groups.push_back({{"kind", trace::to_string(g.kind)}, {"count", g.count}, {"total_ns", g.total_ns}});
  j = json{{"availability", v.availability},
           {"groups", std::move(groups)},
           {"host_sync_ns", v.host_sync_ns},
           {"fraction", v.fraction}};
}

void to_json(json& j, const KernelSummary& v) {
  j = json{{"name", v.name},
           {"short_name", v.short_name},
           {"class", to_string(v.cls)},
           {"precision", to_string(v.precision)},
           {"count", v.count},
           {"total_ns", v.total_ns}};
}

void to_json(json& j, const AttributionRow& v) {
  j = json{{"name", v.name},
           {"kind", to_string(v.kind)},
           {"calls", v.calls},
           {"gpu_ns", v.gpu_ns},
           {"self_gpu_ns", v.self_gpu_ns},
           {"sum_ns", v.sum_ns},
           {"self_sum_ns", v.self_sum_ns},
           {"kernels", v.kernels},
           {"cpu_ns", v.cpu_ns},
           {"self_cpu_ns", v.self_cpu_ns},
           {"step_fraction", v.step_fraction},
           {"gpu_ns_per_iteration", v.gpu_ns_per_iteration},
           {"kernels_per_call", v.kernels_per_call}};
}

void to_json(json& j, const Attribution& v) {
  json tree = json::array();
  for (const auto& n : v.tree)
    tree.push_back({{"parent", n.parent},
                    {"name", n.name},
                    {"kind", to_string(n.kind)},
                    {"gpu_ns", n.gpu_ns},
                    {"self_gpu_ns", n.self_gpu_ns},
                    {"kernels", n.kernels}});
  json its = json::array();
  for (const auto& it : v.iterations)
    its.push_back({{"start_ns", it.start},
                   {"end_ns", it.end},
                   {"busy_ns", it.busy_ns},
                   {"attributed_ns", it.attributed_ns},
                   {"top_operator_gpu_ns", it.top_operator_gpu_ns}});
  j = json{{"availability", Availability{v.available, v.reason}},
           {"busy_ns", v.busy_ns},
           {"attributed_ns", v.attributed_ns},
           {"unattributed_ns", v.unattributed_ns},
           {"no_launch_ns", v.no_launch_ns},
           {"outside_ranges_ns", v.outside_ranges_ns},
           {"no_operator_ns", v.no_operator_ns},
           {"no_range_ns", v.no_range_ns},
           {"activities", v.activities},
           {"unattributed_activities", v.unattributed_activities},
           {"backward_links", v.backward_links},
           {"link_source", v.link_source},
           {"iteration_count", v.iteration_count},
           {"operators", v.operators},
           {"ranges", v.ranges},
           {"tree", std::move(tree)},
           {"iterations", std::move(its)}};
  auto responsible = [](const std::vector<ResponsibleOperator>& v) {
    json a = json::array();
    for (const auto& x : v)
      a.push_back({{"operator", x.name}, {"module", x.module}, {"count", x.count}, {"sum_ns", x.sum_ns}});
    return a;
  };
  j["layout_conversions"] = responsible(v.layout_conversions);
  j["fp32_no_tensor"] = responsible(v.fp32_no_tensor);
  j["tiny_kernels"] = responsible(v.tiny_kernels);
}

void to_json(json& j, const PrecisionStats& v) {
  json ns = json::object();
  for (int p = 0; p < kPrecisionCount; ++p) ns[std::string(to_string(static_cast<Precision>(p)))] = v.ns[p];
  j = json{{"availability", v.availability},
           {"kernel_ns", v.kernel_ns},
           {"ns", std::move(ns)},
           {"fp64_fraction", v.fp64_fraction},
           {"fp32_no_tensor_fraction", v.fp32_no_tensor_fraction},
           {"tensor_core_fraction", v.tensor_core_fraction},
           {"tf32_fraction", v.tf32_fraction},
           {"top_fp32", v.top_fp32},
           {"top_fp64", v.top_fp64}};
}

void to_json(json& j, const LayoutStats& v) {
  j = json{{"availability", v.availability},
           {"conversion_count", v.conversion_count},
           {"conversion_ns", v.conversion_ns},
           {"to_nchw_ns", v.to_nchw_ns},
           {"fraction", v.fraction},
           {"top", v.top},
           {"nchw_half_count", v.nchw_half_count},
           {"nchw_half_ns", v.nchw_half_ns},
           {"nchw_half_fraction", v.nchw_half_fraction},
           {"top_nchw_half", v.top_nchw_half}};
}

void to_json(json& j, const InputStats& v) {
  j = json{{"availability", v.availability},   {"iterations", v.iterations}, {"starved_gaps", v.starved_iterations},
           {"starvation_ns", v.starvation_ns}, {"compute_ns", v.compute_ns}, {"fraction", v.fraction}};
}

void to_json(json& j, const JobFacts& v) {
  j = json{{"framework", to_string(v.framework)},
           {"nccl", v.nccl},
           {"mpi", v.mpi},
           {"launcher", v.launcher},
           {"mpi_calls", v.mpi_calls},
           {"mpi_ns", v.mpi_ns},
           {"evidence", v.evidence}};
}

void to_json(json& j, const IdleCover& v) {
  // By cause, each set named by its causes ("launch_gap+host_sync"; "none").
  static constexpr const char* kNames[] = {"launch_gap", "host_sync", "input", "mpi"};
  json sets = json::object();
  for (unsigned set = 0; set < kIdleCauseSets; ++set) {
    if (v.by_causes[set] == 0) continue;
    std::string name;
    for (unsigned bit = 0; bit < 4; ++bit)
      if (set & (1u << bit)) name += (name.empty() ? "" : "+") + std::string(kNames[bit]);
    sets[name.empty() ? "none" : name] = v.by_causes[set];
  }
  j = json{{"availability", v.availability}, {"span_ns", v.span_ns}, {"idle_ns", v.idle_ns}, {"by_causes_ns", sets}};
}

void to_json(json& j, const IdleBreakdown& v) {
  j = json{{"availability", v.availability},     {"threshold_ns", v.threshold_ns},
           {"idle_ns", v.idle_ns},               {"host_wait_ns", v.host_wait_ns},
           {"kernel_wait_ns", v.kernel_wait_ns}, {"other_ns", v.other_ns},
           {"host_wait_gaps", v.host_wait_gaps}, {"kernel_wait_gaps", v.kernel_wait_gaps},
           {"other_gaps", v.other_gaps},         {"unlaunched_gaps", v.unlaunched_gaps}};
}

void to_json(json& j, const NumaStats& v) {
  json mem = json::array();
  for (const auto& p : v.memory_nodes) mem.push_back({{"node", p.node}, {"bytes", p.bytes}});
  j = json{{"availability", v.availability},
           {"gpu_node", v.gpu_node},
           {"cpu_nodes", v.cpu_nodes},
           {"memory_nodes", std::move(mem)},
           {"memory_policy", v.memory_policy},
           {"cpus_cross_node", v.cpus_cross_node},
           {"remote_memory_fraction", v.remote_memory_fraction}};
}

void to_json(json& j, const GpuClockStats& v) {
  j = json{{"availability", v.availability},
           {"device", v.device},
           {"pci_bus_id", v.pci_bus_id},
           {"clock_samples", v.clock_samples},
           {"sm_clock_median_mhz", v.sm_clock_median_mhz},
           {"sm_clock_min_mhz", v.sm_clock_min_mhz},
           {"sm_clock_max_mhz", v.sm_clock_max_mhz},
           {"clock_ratio", v.clock_ratio},
           {"reason_samples", v.reason_samples},
           {"power_cap_share", v.power_cap_share},
           {"thermal_share", v.thermal_share},
           {"hw_slowdown_share", v.hw_slowdown_share},
           {"sync_boost_share", v.sync_boost_share},
           {"app_clocks_share", v.app_clocks_share},
           {"throttled_share", v.throttled_share},
           {"temperature_median_c", v.temperature_median_c},
           {"temperature_max_c", v.temperature_max_c},
           {"temperature_slowdown_c", v.temperature_slowdown_c},
           {"power_median_w", v.power_median_w},
           {"power_max_w", v.power_max_w},
           {"power_limit_w", v.power_limit_w}};
  if (!v.sampled_by.empty()) j["sampled_by"] = v.sampled_by;
}

void to_json(json& j, const HostShares& v) {
  j = json{{"wall_ns", v.wall_ns},
           {"main_busy", v.main_busy},
           {"main_run_wait", v.main_run_wait},
           {"main_sleep", v.main_sleep},
           {"main_io", v.main_io},
           {"main_other_threads_cores", v.main_other_threads_cores},
           {"worker_cores", v.worker_cores},
           {"mean_runnable", v.mean_runnable},
           {"max_runnable", v.max_runnable},
           {"main_samples", v.main_samples}};
}

void to_json(json& j, const HostStats& v) {
  json threads = json::array();
  for (const auto& t : v.threads) {
    json states = json::object();
    for (int s = 0; s < trace::kThreadStateCount; ++s)
      if (t.state_samples[size_t(s)] > 0)
        states[std::string(trace::to_string(trace::ThreadState(s)))] = t.state_samples[size_t(s)];
    threads.push_back({{"pid", t.pid},
                       {"tid", t.tid},
                       {"name", t.name},
                       {"is_main", t.is_main},
                       {"role", trace::to_string(t.role)},
                       {"samples", t.samples},
                       {"states", std::move(states)},
                       {"cpu_ns", t.cpu_ns},
                       {"run_wait_ns", t.run_wait_ns},
                       {"busy_share", t.busy_share},
                       {"voluntary_switches", t.voluntary_switches},
                       {"involuntary_switches", t.involuntary_switches},
                       {"cpus", t.cpus}});
    if (t.stack_samples > 0) {  // native stacks (format 1.3) only: older outputs are unchanged
      auto shares = [](const std::vector<HostThreadSummary::Share>& v) {
        json a = json::array();
        for (const auto& s : v) a.push_back({{"name", s.what}, {"samples", s.samples}, {"share", s.share}});
        return a;
      };
      threads.back().update(json{{"stack_samples", t.stack_samples},
                                 {"top_functions", shares(t.top_functions)},
                                 {"top_stacks", shares(t.top_stacks)}});
    }
  }
  json its = json::array();
  for (const auto& i : v.iterations)
    its.push_back({{"index", i.index}, {"start", i.start}, {"end", i.end}, {"shares", i.shares}});
  j = json{{"availability", v.availability},
           {"method", v.method},
           {"hz", v.hz},
           {"has_run_wait", v.has_run_wait},
           {"samples", v.samples},
           {"sample_instants", v.sample_instants},
           {"threads_sampled", v.thread_count},
           {"worker_processes", v.worker_processes},
           {"main_tid", v.main_tid},
           {"cores", v.cores},
           {"window", v.window},
           {"contended_instants", v.contended_instants},
           {"run_wait_cores", v.run_wait_cores},
           {"gpu_node", v.gpu_node},
           {"main_cpus", v.main_cpus},
           {"cpus", v.cpus},
           {"nodes", v.nodes},
           {"main_on_gpu_node", v.main_on_gpu_node},
           {"cpu_on_gpu_node", v.cpu_on_gpu_node},
           {"threads", std::move(threads)},
           {"iterations", std::move(its)}};
  if (!v.stack_method.empty()) j.update(json{{"stack_method", v.stack_method}, {"stack_samples", v.stack_samples}});
  if (!v.stack_naming.empty()) j["stack_naming"] = v.stack_naming;
}

void to_json(json& j, const PythonHotFrame& v) {
  j = json{{"where", v.where},       {"file", v.file},       {"line", v.line},      {"function", v.function},
           {"samples", v.samples}, {"share", v.share}, {"callers", v.callers}};
}

void to_json(json& j, const PythonFrames& v) {
  json threads = json::array();
  for (const auto& t : v.threads)
    threads.push_back({{"pid", t.pid},
                       {"tid", t.tid},
                       {"name", t.name},
                       {"is_main", t.is_main},
                       {"worker", t.worker},
                       {"samples", t.samples},
                       {"top", t.top}});
  j = json{{"availability", v.availability},
           {"hz", v.hz},
           {"processes", v.processes},
           {"worker_processes", v.worker_processes},
           {"samples", v.samples},
           {"dropped", v.dropped},
           {"truncated", v.truncated},
           {"sampler_cpu_per_second", v.sampler_cpu_per_second},
           {"problems", v.problems},
           {"threads", std::move(threads)},
           {"worker_samples", v.worker_samples},
           {"workers_top", v.workers_top}};
}

void to_json(json& j, const ProfilerPerturbation& v) {
  j = json{{"sampling", v.sampling}, {"measured", v.measured}, {"iterations_seen", v.seen}, {"text", v.text}};
  if (v.measured)
    j.update(json{{"percent", v.percent},
                  {"ci_low_percent", v.ci_low},
                  {"ci_high_percent", v.ci_high},
                  {"inside", v.inside},
                  {"outside", v.outside},
                  {"matters", v.matters}});
}

void to_json(json& j, const NcclOpStats& v) {
  json groups = json::array();
  auto maybe = [](std::optional<double> x) { return x ? json(*x) : json(nullptr); };
  for (const auto& g : v.groups)
    groups.push_back({{"operation", g.operation},
                      {"message_bytes", g.message_bytes},
                      {"count", g.count},
                      {"time_ns", g.time_ns},
                      {"mean_ns", g.mean_ns()},
                      {"bytes", g.bytes},
                      {"algorithm_gbps", maybe(g.algorithm_gb_per_s())},
                      {"bus_bytes", g.bus_bytes},
                      {"bus_ns", g.bus_ns},
                      {"bus_gbps", maybe(g.bus_gb_per_s())}});
  j = json{{"availability", Availability{v.available, v.reason}}, {"groups", std::move(groups)}};
}

void to_json(json& j, const RankAnalysis& v) {
  json classes = json::array();
  for (const auto& c : v.classes)
    classes.push_back({{"class", to_string(c.cls)}, {"count", c.count}, {"total_ns", c.total_ns}});
  j = json{{"rank", v.rank},
           {"label", v.label},
           {"source", v.source},
           {"hostname", v.hostname},
           {"node_rank", v.node_rank},
           {"breakdown", v.breakdown},
           {"iterations", v.iterations},
           {"launch", v.launch},
           {"copies", v.copies},
           {"sync", v.sync},
           {"precision", v.precision},
           {"layout", v.layout},
           {"input", v.input},
           {"job", v.job},
           {"idle_cover", v.idle_cover},
           {"idle_breakdown", v.idle_breakdown},
           {"numa", v.numa},
           {"gpu_clocks", v.steady ? v.steady->gpu_clocks : v.gpu_clocks},
           {"classes", std::move(classes)},
           {"top_kernels", v.top_kernels},
           {"attribution", v.attribution},
           {"nccl_ops", v.nccl_ops},
           {"data_loss", v.data_loss}};
  if (!v.perturbation.sampling.empty()) j["profiler_perturbation"] = v.perturbation;
  // Only for traces with host samples (format 1.2 collector), so older outputs are unchanged.
  if (v.host.availability.available) j["host"] = v.host;
  // Only for run directories with the Python bootstrap's stacks, so other outputs are unchanged.
  if (v.python.availability.available) j["python_frames"] = v.python;
  if (v.steady) {
    // Where the advisor looked; its figures are the findings' evidence.
    const auto& b = v.steady->breakdown;
    j["advisor_window"] = json{{"iterations", "it" + std::to_string(v.steady_first_iteration) + ":it" +
                                                  std::to_string(v.steady_end_iteration)},
                               {"wall_ns", b.wall_ns}};
  }
}

void to_json(json& j, const StragglerStats& v) {
  json ranks = json::array();
  for (const auto& r : v.ranks)
    ranks.push_back({{"rank", r.rank},
                     {"total_late_ns", r.total_late_ns},
                     {"max_late_ns", r.max_late_ns},
                     {"late_per_iteration_ns", r.late_per_iteration_ns},
                     {"times_last", r.times_last},
                     {"steady_late_ns", r.steady_late_ns},
                     {"steady_late_per_iteration_ns", r.steady_late_per_iteration_ns},
                     {"steady_times_last", r.steady_times_last}});
  j = json{{"availability", v.availability},
           {"matched_collectives", v.matched_collectives},
           {"unmatched_collectives", v.unmatched_collectives},
           {"total_wait_ns", v.total_wait_ns},
           {"steady_matched_collectives", v.steady_matched_collectives},
           {"ranked_by", v.ranked_by},
           {"ranks", std::move(ranks)},
           {"slowest_rank", v.slowest_rank},
           {"slowest_rank_median_ns", v.slowest_rank_median_ns},
           {"fastest_rank_median_ns", v.fastest_rank_median_ns}};
}

void to_json(json& j, const NodeStats& v) {
  json nodes = json::array();
  for (const auto& n : v.nodes)
    nodes.push_back({{"hostname", n.hostname},
                     {"node_rank", n.node_rank},
                     {"ranks", n.ranks},
                     {"mean_wall_ns", n.wall_ns},
                     {"mean_compute_ns", n.compute_ns},
                     {"mean_exposed_communication_ns", n.exposed_communication_ns},
                     {"mean_copy_ns", n.copy_ns},
                     {"mean_idle_ns", n.idle_ns},
                     {"steady_median_iteration_ns", n.steady_median_iteration_ns},
                     {"late_ns", n.late_ns},
                     {"steady_late_ns", n.steady_late_ns},
                     {"times_last", n.times_last}});
  json comms = json::array();
  for (const auto& c : v.communicators)
    comms.push_back({{"name", c.name},
                     {"group", c.group},
                     {"group_name", c.group_name},
                     {"group_ranks", c.group_ranks},
                     {"backend", c.backend},
                     {"ranks", c.ranks},
                     {"hosts", c.hosts},
                     {"inter_node", c.inter_node},
                     {"collectives", c.collectives},
                     {"time_ns", c.time_ns}});
  j = json{{"availability", v.availability},
           {"nodes", std::move(nodes)},
           {"communicators", std::move(comms)},
           {"intra_node_collectives", v.intra_node_collectives},
           {"inter_node_collectives", v.inter_node_collectives},
           {"intra_node_ns", v.intra_node_ns},
           {"inter_node_ns", v.inter_node_ns},
           {"slowest_node", v.slowest_node},
           {"slowest_node_by", v.slowest_node_by},
           {"expected_nodes", v.expected_nodes},
           {"expected_ranks", v.expected_ranks},
           {"missing_nodes", v.missing_nodes},
           {"missing_ranks", v.missing_ranks}};
}

namespace {
json clocks_json(const trace::ClockAlignment& a) {
  json hosts = json::array();
  for (const auto& h : a.hosts)
    hosts.push_back({{"hostname", h.hostname},
                     {"status", trace::to_string(h.status)},
                     {"measured_against", h.measured_against},
                     {"first_rank", h.first_rank},
                     {"processes", h.rank_count},
                     {"offset_ns", h.offset_ns},
                     {"drift_ppm", h.drift_ppm},
                     {"reference_unix_ns", h.reference_unix_ns},
                     {"uncertainty_ns", h.uncertainty_ns},
                     {"spread_ns", h.spread_ns},
                     {"matched_collectives", h.matched},
                     {"span_ns", h.span_ns}});
  return json{{"applied", a.any_applied()}, {"hosts", std::move(hosts)}};
}
}  // namespace

void to_json(json& j, const HangReport& v) {
  j = json{{"source", "scalescope ring"},
           {"dumps", v.dumps},
           {"reasons", v.reasons},
           {"in_collective", v.in_collective},
           {"text", v.text}};
  if (v.in_collective) {
    j["op"] = trace::to_string(v.op);
    j["communicator"] = v.communicator;
    j["sequence"] = v.sequence;
  }
  auto& ps = j["processes"] = json::array();
  for (const auto& p : v.processes)
    ps.push_back({{"rank", p.rank}, {"host", p.host}, {"pid", p.pid}, {"state", p.state}, {"last", p.last},
                  {"python", p.python}, {"python_note", p.python_note}});
  if (v.flight_recorder.dumps > 0) j["flight_recorder"] = v.flight_recorder;
}

void to_json(json& j, const RunAnalysis& v) {
  j = json{{"ranks", v.ranks},
           {"stragglers", v.stragglers},
           {"clocks", clocks_json(v.clocks)},
           {"nodes", v.nodes},
           {"nccl_ops", v.nccl_ops},
           {"left_out", v.left_out}};
  if (v.hang.any()) j["hang"] = v.hang;  // only where a run directory holds hang or flight recorder dumps
}

void to_json(json& j, const Delta& v) {
  j = json{{"what", v.what}, {"a", v.a}, {"b", v.b}, {"delta", v.delta}, {"ratio", v.ratio}};
}

void to_json(json& j, const RunDiff& v) {
  j = json{{"basis", v.basis},
           {"breakdown", v.breakdown},
           {"classes", v.classes},
           {"top_kernels", v.top_kernels},
           {"copies", v.copies},
           {"changes", v.changes},
           {"added_kernels", v.added_kernels},
           {"removed_kernels", v.removed_kernels},
           {"iteration", v.iteration},
           {"verdict", v.verdict},
           {"note", v.note}};
}

}  // namespace scalescope::analyze
