// JSON forms of the analysis results (nlohmann::json ADL to_json).
#include <nlohmann/json.hpp>

#include "analyze/analyze.hpp"
#include "base/json_fields.hpp"

namespace scalescope::analyze {

using nlohmann::json;

void to_json(json& j, const Availability& v) {
  j = json{{"available", v.available}};
  if (!v.available) j["reason"] = v.reason;
}

void to_json(json& j, const RankBreakdown& v) {
  j = json_with(SCALESCOPE_JSON_FIELDS(v, availability, wall_ns, compute_ns, exposed_communication_ns, copy_ns, idle_ns,
                                       communication_ns, overlap_ns, overlap_fraction),
                {{"window_start_ns", v.window_start}, {"window_end_ns", v.window_end}});
  json streams = json::array();
  for (const auto& s : v.streams) streams.push_back(SCALESCOPE_JSON_FIELDS(s, device, stream, busy_ns, fraction));
  j["streams"] = std::move(streams);
}

void to_json(json& j, const IterationStats& v) {
  j = SCALESCOPE_JSON_FIELDS(v, availability, source, count, warmup_count, median_ns, p95_ns, mean_ns, cv,
                             steady_median_ns, steady_p95_ns, steady_cv);
  json its = json::array();
  for (const auto& it : v.iterations)
    its.push_back({{"start_ns", it.start}, {"end_ns", it.end}, {"warmup", it.warmup}});
  j["iterations"] = std::move(its);
}

void to_json(json& j, const LaunchStats& v) {
  j = SCALESCOPE_JSON_FIELDS(v, availability, kernel_count, kernel_ns, launch_api_count, launch_api_ns,
                             median_kernel_ns, median_launch_ns, gpu_gap_ns, gap_count, gap_fraction,
                             small_kernel_fraction, launch_bound);
}

void to_json(json& j, const CopyStats& v) {
  json groups = json::array();
  for (const auto& g : v.groups)
    groups.push_back(json_with(SCALESCOPE_JSON_FIELDS(g, count, bytes, time_ns, bandwidth_gbps, sync_count, sync_ns),
                               {{"kind", trace::to_string(g.kind)},
                                {"src_kind", trace::to_string(g.src_kind)},
                                {"dst_kind", trace::to_string(g.dst_kind)}}));
  j = json_with(SCALESCOPE_JSON_FIELDS(v, availability, memset_count, memset_ns, host_to_device_bytes, pageable_bytes,
                                       pageable_ns, pageable_host_ns, pageable_fraction, sync_copy_count, sync_copy_ns),
                {{"groups", std::move(groups)}});
}

void to_json(json& j, const SyncStats& v) {
  json groups = json::array();
  for (const auto& g : v.groups)
    groups.push_back({{"kind", trace::to_string(g.kind)}, {"count", g.count}, {"total_ns", g.total_ns}});
  j = json_with(SCALESCOPE_JSON_FIELDS(v, availability, host_sync_ns, fraction), {{"groups", std::move(groups)}});
}

void to_json(json& j, const KernelSummary& v) {
  j = json_with(SCALESCOPE_JSON_FIELDS(v, name, short_name, count, total_ns),
                {{"class", to_string(v.cls)}, {"precision", to_string(v.precision)}});
}

void to_json(json& j, const AttributionRow& v) {
  j = json_with(SCALESCOPE_JSON_FIELDS(v, name, calls, gpu_ns, self_gpu_ns, sum_ns, self_sum_ns, kernels, cpu_ns,
                                       self_cpu_ns, step_fraction, gpu_ns_per_iteration, kernels_per_call),
                {{"kind", to_string(v.kind)}});
}

void to_json(json& j, const Attribution& v) {
  json tree = json::array();
  for (const auto& n : v.tree)
    tree.push_back(json_with(SCALESCOPE_JSON_FIELDS(n, parent, name, gpu_ns, self_gpu_ns, kernels),
                             {{"kind", to_string(n.kind)}}));
  json its = json::array();
  for (const auto& it : v.iterations)
    its.push_back(json_with(SCALESCOPE_JSON_FIELDS(it, busy_ns, attributed_ns, top_operator_gpu_ns),
                            {{"start_ns", it.start}, {"end_ns", it.end}}));
  j = json_with(SCALESCOPE_JSON_FIELDS(v, busy_ns, attributed_ns, unattributed_ns, no_launch_ns, outside_ranges_ns,
                                       no_operator_ns, no_range_ns, activities, unattributed_activities, backward_links,
                                       link_source, iteration_count, operators, ranges),
                {{"availability", Availability{v.available, v.reason}},
                 {"tree", std::move(tree)},
                 {"iterations", std::move(its)}});
  auto responsible = [](const std::vector<ResponsibleOperator>& v) {
    json a = json::array();
    for (const auto& x : v)
      a.push_back(json_with(SCALESCOPE_JSON_FIELDS(x, module, count, sum_ns), {{"operator", x.name}}));
    return a;
  };
  j["layout_conversions"] = responsible(v.layout_conversions);
  j["fp32_no_tensor"] = responsible(v.fp32_no_tensor);
  j["tiny_kernels"] = responsible(v.tiny_kernels);
}

void to_json(json& j, const PrecisionStats& v) {
  json ns = json::object();
  for (int p = 0; p < kPrecisionCount; ++p) ns[std::string(to_string(static_cast<Precision>(p)))] = v.ns[p];
  j = json_with(SCALESCOPE_JSON_FIELDS(v, availability, kernel_ns, fp64_fraction, fp32_no_tensor_fraction,
                                       tensor_core_fraction, tf32_fraction, top_fp32, top_fp64),
                {{"ns", std::move(ns)}});
}

void to_json(json& j, const LayoutStats& v) {
  j = SCALESCOPE_JSON_FIELDS(v, availability, conversion_count, conversion_ns, to_nchw_ns, fraction, top,
                             nchw_half_count, nchw_half_ns, nchw_half_fraction, top_nchw_half);
}

void to_json(json& j, const InputStats& v) {
  j = json_with(SCALESCOPE_JSON_FIELDS(v, availability, iterations, starvation_ns, compute_ns, fraction),
                {{"starved_gaps", v.starved_iterations}});
}

void to_json(json& j, const JobFacts& v) {
  j = json_with(SCALESCOPE_JSON_FIELDS(v, nccl, mpi, launcher, mpi_calls, mpi_ns, evidence),
                {{"framework", to_string(v.framework)}});
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
  j = json_with(SCALESCOPE_JSON_FIELDS(v, availability, span_ns, idle_ns), {{"by_causes_ns", sets}});
}

void to_json(json& j, const IdleBreakdown& v) {
  j = SCALESCOPE_JSON_FIELDS(v, availability, threshold_ns, idle_ns, host_wait_ns, kernel_wait_ns, other_ns,
                             host_wait_gaps, kernel_wait_gaps, other_gaps, unlaunched_gaps);
}

void to_json(json& j, const NumaStats& v) {
  json mem = json::array();
  for (const auto& p : v.memory_nodes) mem.push_back(SCALESCOPE_JSON_FIELDS(p, node, bytes));
  j = json_with(SCALESCOPE_JSON_FIELDS(v, availability, gpu_node, cpu_nodes, memory_policy, cpus_cross_node,
                                       remote_memory_fraction),
                {{"memory_nodes", std::move(mem)}});
}

void to_json(json& j, const GpuClockStats& v) {
  j = SCALESCOPE_JSON_FIELDS(v, availability, device, pci_bus_id, clock_samples, sm_clock_median_mhz, sm_clock_min_mhz,
                             sm_clock_max_mhz, clock_ratio, reason_samples, power_cap_share, thermal_share,
                             hw_slowdown_share, sync_boost_share, app_clocks_share, throttled_share,
                             temperature_median_c, temperature_max_c, temperature_slowdown_c, power_median_w,
                             power_max_w, power_limit_w);
  if (!v.sampled_by.empty()) j["sampled_by"] = v.sampled_by;
}

void to_json(json& j, const HostShares& v) {
  j = SCALESCOPE_JSON_FIELDS(v, wall_ns, main_busy, main_run_wait, main_sleep, main_io, main_other_threads_cores,
                             worker_cores, mean_runnable, max_runnable, main_samples);
}

void to_json(json& j, const HostStats& v) {
  json threads = json::array();
  for (const auto& t : v.threads) {
    json states = json::object();
    for (int s = 0; s < trace::kThreadStateCount; ++s)
      if (t.state_samples[size_t(s)] > 0)
        states[std::string(trace::to_string(trace::ThreadState(s)))] = t.state_samples[size_t(s)];
    threads.push_back(json_with(SCALESCOPE_JSON_FIELDS(t, pid, tid, name, is_main, samples, cpu_ns, run_wait_ns,
                                                       busy_share, voluntary_switches, involuntary_switches, cpus),
                                {{"role", trace::to_string(t.role)}, {"states", std::move(states)}}));
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
  for (const auto& i : v.iterations) its.push_back(SCALESCOPE_JSON_FIELDS(i, index, start, end, shares));
  j = json_with(SCALESCOPE_JSON_FIELDS(v, availability, method, hz, has_run_wait, samples, sample_instants,
                                       worker_processes, main_tid, cores, window, contended_instants, run_wait_cores,
                                       gpu_node, main_cpus, cpus, nodes, main_on_gpu_node, cpu_on_gpu_node),
                {{"threads_sampled", v.thread_count}, {"threads", std::move(threads)}, {"iterations", std::move(its)}});
  if (!v.stack_method.empty()) j.update(SCALESCOPE_JSON_FIELDS(v, stack_method, stack_samples));
  if (!v.stack_naming.empty()) j["stack_naming"] = v.stack_naming;
}

void to_json(json& j, const PythonHotFrame& v) {
  j = SCALESCOPE_JSON_FIELDS(v, where, file, line, function, samples, share, callers);
}

void to_json(json& j, const PythonFrames& v) {
  json threads = json::array();
  for (const auto& t : v.threads)
    threads.push_back(SCALESCOPE_JSON_FIELDS(t, pid, tid, name, is_main, worker, samples, top));
  j = json_with(SCALESCOPE_JSON_FIELDS(v, availability, hz, processes, worker_processes, samples, dropped, truncated,
                                       sampler_cpu_per_second, problems, worker_samples, workers_top),
                {{"threads", std::move(threads)}});
}

void to_json(json& j, const ProfilerPerturbation& v) {
  j = json_with(SCALESCOPE_JSON_FIELDS(v, sampling, measured, text), {{"iterations_seen", v.seen}});
  if (v.measured)
    j.update(json_with(SCALESCOPE_JSON_FIELDS(v, percent, inside, outside, matters),
                       {{"ci_low_percent", v.ci_low}, {"ci_high_percent", v.ci_high}}));
}

void to_json(json& j, const NcclOpStats& v) {
  json groups = json::array();
  for (const auto& g : v.groups)
    groups.push_back(
        json_with(SCALESCOPE_JSON_FIELDS(g, operation, message_bytes, count, time_ns, bytes, bus_bytes, bus_ns),
                  {{"mean_ns", g.mean_ns()},
                   {"algorithm_gbps", or_null(g.algorithm_gb_per_s())},
                   {"bus_gbps", or_null(g.bus_gb_per_s())}}));
  j = json{{"availability", Availability{v.available, v.reason}}, {"groups", std::move(groups)}};
}

void to_json(json& j, const RankAnalysis& v) {
  json classes = json::array();
  for (const auto& c : v.classes)
    classes.push_back({{"class", to_string(c.cls)}, {"count", c.count}, {"total_ns", c.total_ns}});
  j = json_with(SCALESCOPE_JSON_FIELDS(v, rank, label, source, hostname, node_rank, breakdown, iterations, launch,
                                       copies, sync, precision, layout, input, job, idle_cover, idle_breakdown, numa,
                                       top_kernels, attribution, nccl_ops, data_loss),
                {{"gpu_clocks", v.steady ? v.steady->gpu_clocks : v.gpu_clocks}, {"classes", std::move(classes)}});
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
    ranks.push_back(SCALESCOPE_JSON_FIELDS(r, rank, total_late_ns, max_late_ns, late_per_iteration_ns, times_last,
                                           steady_late_ns, steady_late_per_iteration_ns, steady_times_last));
  j = json_with(SCALESCOPE_JSON_FIELDS(v, availability, matched_collectives, unmatched_collectives, total_wait_ns,
                                       steady_matched_collectives, ranked_by, slowest_rank, slowest_rank_median_ns,
                                       fastest_rank_median_ns),
                {{"ranks", std::move(ranks)}});
}

void to_json(json& j, const NodeStats& v) {
  json nodes = json::array();
  for (const auto& n : v.nodes)
    nodes.push_back(json_with(SCALESCOPE_JSON_FIELDS(n, hostname, node_rank, ranks, steady_median_iteration_ns, late_ns,
                                                     steady_late_ns, times_last),
                              {{"mean_wall_ns", n.wall_ns},
                               {"mean_compute_ns", n.compute_ns},
                               {"mean_exposed_communication_ns", n.exposed_communication_ns},
                               {"mean_copy_ns", n.copy_ns},
                               {"mean_idle_ns", n.idle_ns}}));
  json comms = json::array();
  for (const auto& c : v.communicators)
    comms.push_back(SCALESCOPE_JSON_FIELDS(c, name, group, group_name, group_ranks, backend, ranks, hosts, inter_node,
                                           collectives, time_ns));
  j = json_with(SCALESCOPE_JSON_FIELDS(v, availability, intra_node_collectives, inter_node_collectives, intra_node_ns,
                                       inter_node_ns, slowest_node, slowest_node_by, expected_nodes, expected_ranks,
                                       missing_nodes, missing_ranks),
                {{"nodes", std::move(nodes)}, {"communicators", std::move(comms)}});
}

namespace {
json clocks_json(const trace::ClockAlignment& a) {
  json hosts = json::array();
  for (const auto& h : a.hosts)
    hosts.push_back(json_with(
        SCALESCOPE_JSON_FIELDS(h, hostname, measured_against, first_rank, offset_ns, drift_ppm, reference_unix_ns,
                               uncertainty_ns, spread_ns, span_ns),
        {{"status", trace::to_string(h.status)}, {"processes", h.rank_count}, {"matched_collectives", h.matched}}));
  return json{{"applied", a.any_applied()}, {"hosts", std::move(hosts)}};
}
}  // namespace

void to_json(json& j, const HangReport& v) {
  j = json_with(SCALESCOPE_JSON_FIELDS(v, dumps, reasons, in_collective, text), {{"source", "scalescope ring"}});
  if (v.in_collective)
    j.update(json_with(SCALESCOPE_JSON_FIELDS(v, communicator, sequence), {{"op", trace::to_string(v.op)}}));
  auto& ps = j["processes"] = json::array();
  for (const auto& p : v.processes)
    ps.push_back(SCALESCOPE_JSON_FIELDS(p, rank, host, pid, state, last, python, python_note));
  if (v.flight_recorder.dumps > 0) j["flight_recorder"] = v.flight_recorder;
}

void to_json(json& j, const RunAnalysis& v) {
  j = json_with(SCALESCOPE_JSON_FIELDS(v, ranks, stragglers, nodes, nccl_ops, left_out),
                {{"clocks", clocks_json(v.clocks)}});
  if (v.hang.any()) j["hang"] = v.hang;  // only where a run directory holds hang or flight recorder dumps
}

void to_json(json& j, const Delta& v) { j = SCALESCOPE_JSON_FIELDS(v, what, a, b, delta, ratio); }

void to_json(json& j, const RunDiff& v) {
  j = SCALESCOPE_JSON_FIELDS(v, basis, breakdown, classes, top_kernels, copies, changes, added_kernels, removed_kernels,
                             iteration, verdict, note);
}

}  // namespace scalescope::analyze
