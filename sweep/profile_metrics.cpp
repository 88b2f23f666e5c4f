#include "sweep/profile_metrics.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "trace/error.hpp"

#if SCALESCOPE_SWEEP_WITH_ANALYZE
#include "analyze/analyze.hpp"
#include "trace/stats.hpp"
#include "trace/trace_file.hpp"
#endif

namespace scalescope::sweep {

#if SCALESCOPE_SWEEP_WITH_ANALYZE
void add_profile_metrics(const std::filesystem::path& trace_dir, RunMetrics& metrics) {
  std::error_code ec;
  if (!std::filesystem::exists(trace_dir, ec)) {
    metrics.notes.push_back(fmt::format("no trace at {}", trace_dir.string()));
    return;
  }
  std::vector<trace::Trace> traces;
  try {
    traces = trace::load_run(trace_dir);
  } catch (const Error& e) {
    metrics.notes.push_back(fmt::format("trace not readable: {}", e.what()));
    return;
  }
  analyze::Options options;
  double slowest_ns = 0;
  int64_t iterations_rank0 = 0;
  // Energy: the sampler runs once per node; (host, device) keys avoid double counting.
  std::map<std::pair<std::string, uint32_t>, double> energy;
  double ring_bytes_time = 0, comm_seconds = 0, allreduce_bytes_rank0 = 0;
  bool first = true;
  // One GPU's compute per steady iteration, the mean over ranks: constant in N
  // under weak scaling (fixed per-GPU batch), ~1/N under strong scaling, which
  // lets `scalescope scaling` tell them apart (scaling::classify_work_per_step).
  double compute_per_iteration_sum = 0;
  int compute_ranks = 0;
  for (const auto& t : traces) {
    const auto it = analyze::find_iterations(t, options);
    if (it.availability.available && it.steady_median_ns > 0) slowest_ns = std::max(slowest_ns, it.steady_median_ns);
    if (first) iterations_rank0 = it.count - it.warmup_count;
    if (it.availability.available && it.count - it.warmup_count > 0) {
      const auto info = analyze::classify_names(t, options.classifier);
      const auto steady_begin = std::find_if(it.iterations.begin(), it.iterations.end(),
                                             [](const analyze::Iteration& i) { return !i.warmup; });
      const trace::Timestamp from = steady_begin->start, to = it.iterations.back().end;
      int64_t compute_ns = 0;
      for (size_t i = 0; i < t.kernels.size(); ++i)
        if (info[t.kernels.name[i]].cls == analyze::KernelClass::kCompute && t.kernels.start[i] >= from &&
            t.kernels.end[i] <= to)
          compute_ns += t.kernels.end[i] - t.kernels.start[i];
      if (compute_ns > 0) {
        compute_per_iteration_sum +=
            static_cast<double>(compute_ns) * 1e-9 / static_cast<double>(it.count - it.warmup_count);
        ++compute_ranks;
      }
    }
    std::map<uint32_t, std::pair<double, double>> span;  // device -> (first, last) energy
    for (size_t i = 0; i < t.counters.size(); ++i) {
      if (t.counters.metric[i] != trace::CounterMetric::kEnergyJoules) continue;
      auto [pos, inserted] = span.try_emplace(t.counters.device[i], t.counters.value[i], t.counters.value[i]);
      if (!inserted) pos->second.second = t.counters.value[i];
    }
    for (const auto& [dev, fl] : span) {
      auto& e = energy[{t.meta.hostname, dev}];
      e = std::max(e, fl.second - fl.first);
    }
    for (size_t i = 0; i < t.nccl.size(); ++i) {
      if (t.nccl.op[i] != trace::NcclOp::kAllReduce) continue;
      const double dur = static_cast<double>(t.nccl.end[i] - t.nccl.start[i]) * 1e-9;
      if (first) allreduce_bytes_rank0 += static_cast<double>(t.nccl.bytes[i]);
      // As `stats` and the report compute it (communicator size, else WORLD_SIZE).
      if (const double bus = trace::nccl_bus_bytes(t, i); bus > 0 && dur > 0) {
        ring_bytes_time += bus;
        comm_seconds += dur;
      }
    }
    first = false;
  }
  if (slowest_ns > 0) metrics.values["iteration_s"] = slowest_ns * 1e-9;
  else metrics.notes.push_back("the trace shows no steady-state iterations");
  if (compute_ranks > 0) metrics.values["compute_s_per_iter"] = compute_per_iteration_sum / compute_ranks;
  if (!energy.empty()) {
    double total = 0;
    for (const auto& [k, v] : energy) total += v;
    metrics.values["energy_j"] = total;
  } else {
    metrics.notes.push_back("the trace has no NVML energy counters");
  }
  if (comm_seconds > 0 && iterations_rank0 > 0) {
    metrics.values["allreduce_busbw"] = ring_bytes_time / comm_seconds;
    metrics.values["allreduce_bytes_per_iter"] = allreduce_bytes_rank0 / static_cast<double>(iterations_rank0);
  }
}
#else
void add_profile_metrics(const std::filesystem::path&, RunMetrics& metrics) {
  metrics.notes.push_back("trace metrics are not available: this build has no analyze library");
}
#endif

}  // namespace scalescope::sweep
