#include "sweep/profile_metrics.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"

#include "analyze/analyze.hpp"
#include "trace/stats/stats.hpp"

namespace scalescope::sweep {

void add_profile_metrics(const std::filesystem::path& trace_dir, RunMetrics& metrics) {
  std::error_code ec;
  if (!std::filesystem::exists(trace_dir, ec)) {
    metrics.notes.push_back(fmt::format("no trace at {}", trace_dir.string()));
    return;
  }
  // The run pipeline of `scalescope analyze`; what only the events hold
  // (energy counters, all-reduce sizes) is taken as it passes each rank.
  // Energy: the sampler runs once per node; (host, device) keys avoid double counting.
  std::map<std::pair<std::string, uint32_t>, double> energy;
  double ring_bytes_time = 0, comm_seconds = 0;
  std::vector<double> allreduce_bytes;  // by input index
  analyze::RunAnalysis run;
  try {
    run = analyze::analyze_path(
        trace_dir, analyze::Options{}, 0, {}, [&](size_t input_index, const trace::Trace& t, const analyze::RankAnalysis&) {
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
          allreduce_bytes.resize(std::max(allreduce_bytes.size(), input_index + 1));
          for (size_t i = 0; i < t.nccl.size(); ++i) {
            if (t.nccl.op[i] != trace::NcclOp::kAllReduce) continue;
            const double dur = static_cast<double>(t.nccl.end[i] - t.nccl.start[i]) * 1e-9;
            allreduce_bytes[input_index] += static_cast<double>(t.nccl.bytes[i]);
            // As `stats` and the report compute it (communicator size, else WORLD_SIZE).
            if (const double bus = trace::nccl_bus_bytes(t, i); bus > 0 && dur > 0) {
              ring_bytes_time += bus;
              comm_seconds += dur;
            }
          }
        });
  } catch (const Error& e) {
    metrics.notes.push_back(fmt::format("trace not readable: {}", e.what()));
    return;
  }
  double slowest_ns = 0;
  // One GPU's compute per steady iteration, the mean over ranks: constant in N
  // under weak scaling (fixed per-GPU batch), ~1/N under strong scaling, which
  // lets `scalescope scaling` tell them apart (scaling::classify_work_per_step).
  // Compute is the steady window's breakdown, as `analyze --window
  // it<first>:<end>` prints it: concurrent kernels count once.
  double compute_per_iteration_sum = 0;
  int compute_ranks = 0;
  for (const analyze::RankAnalysis& r : run.ranks) {
    const analyze::IterationStats& it = r.iterations;
    if (it.availability.available && it.steady_median_ns > 0) slowest_ns = std::max(slowest_ns, it.steady_median_ns);
    const int64_t steady_iterations = r.steady_end_iteration - r.steady_first_iteration;
    if (r.steady && r.steady->breakdown.availability.available && steady_iterations > 0 &&
        r.steady->breakdown.compute_ns > 0) {
      compute_per_iteration_sum +=
          static_cast<double>(r.steady->breakdown.compute_ns) * 1e-9 / static_cast<double>(steady_iterations);
      ++compute_ranks;
    }
  }
  // The first rank's (ranks are in rank order).
  const analyze::RankAnalysis* first = run.ranks.empty() ? nullptr : &run.ranks.front();
  const int64_t iterations_first = first ? first->iterations.count - first->iterations.warmup_count : 0;
  const double allreduce_bytes_first =
      first && first->input_index < allreduce_bytes.size() ? allreduce_bytes[first->input_index] : 0;
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
  if (comm_seconds > 0 && iterations_first > 0) {
    metrics.values["allreduce_busbw"] = ring_bytes_time / comm_seconds;
    metrics.values["allreduce_bytes_per_iter"] = allreduce_bytes_first / static_cast<double>(iterations_first);
  }
}

}  // namespace scalescope::sweep
