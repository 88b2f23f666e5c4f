// The official score of a result folder: the olympic mean of its run times.
// Rules and sources: docs/mlperf.md (training_rules.adoc "Benchmark Results",
// mlcommons/logging result_summarizer).

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "mlperf/mlperf.hpp"

namespace scalescope::mlperf {

Score score_runs(const std::vector<const Run*>& runs, const std::string& benchmark_folder) {
  Score s;
  s.benchmark_folder = benchmark_folder;
  s.benchmark = canonical_benchmark(benchmark_folder);
  s.runs = static_cast<int>(runs.size());
  std::vector<double> times;
  for (const Run* r : runs) {
    if (s.submitter.empty()) {
      s.submitter = r->submitter;
      s.system = r->system;
      s.division = r->division;
      s.accelerator = r->accelerator;
      s.accelerators = r->accelerators;
      s.scaling_factor = r->scaling_factor;
    }
    if (r->converged && r->minutes) times.push_back(*r->minutes);
  }
  s.converged = static_cast<int>(times.size());
  // A refusal ingest recorded (bad scaling.json, invalid system description)
  // holds for the runs CSV too: no score, the reason instead.
  for (const Run* r : runs) {
    if (r->problem.empty()) continue;
    s.reason = r->problem;
    return s;
  }
  const BenchmarkRule* rule = find_benchmark_rule(benchmark_folder);
  if (rule == nullptr) {
    s.reason = fmt::format("unknown benchmark '{}': its required number of runs is not known", benchmark_folder);
    return s;
  }
  s.required = rule->required_runs;
  if (runs.empty()) {
    s.reason = "no run logs in the folder";
    return s;
  }
  const int non_converged = s.runs - s.converged;
  std::vector<std::string> reasons;
  if (non_converged > rule->max_non_converged)
    reasons.push_back(fmt::format("invalid: {} of {} runs did not converge (at most {} may)", non_converged, s.runs,
                                  rule->max_non_converged));
  if (s.runs < s.required) reasons.push_back(fmt::format("{} runs, fewer than the {} required", s.runs, s.required));
  if (!reasons.empty()) {
    s.reason = fmt::format("{}", fmt::join(reasons, "; "));
    return s;
  }
  // Drop the fastest max_non_converged runs and as many of the slowest; each
  // non-converged run counts as one of the slowest (it has no time to keep).
  std::sort(times.begin(), times.end());
  const size_t drop_fast = static_cast<size_t>(rule->max_non_converged);
  const size_t drop_slow = static_cast<size_t>(rule->max_non_converged - non_converged);
  if (times.size() <= drop_fast + drop_slow) {
    s.reason = "no run left after dropping the fastest and slowest";
    return s;
  }
  const auto first = times.begin() + static_cast<std::ptrdiff_t>(drop_fast);
  const auto last = times.end() - static_cast<std::ptrdiff_t>(drop_slow);
  const double mean = std::accumulate(first, last, 0.0) / static_cast<double>(last - first);
  s.unscaled_minutes = mean;
  s.minutes = mean * s.scaling_factor.value_or(1.0);
  return s;
}

std::vector<Score> score_folders(const std::vector<Run>& runs, const std::vector<ResultFolder>& folders) {
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, std::vector<const Run*>> by_folder;
  for (const Run& r : runs) by_folder[{r.submitter, r.system, r.benchmark_folder}].push_back(&r);
  std::map<Key, const ResultFolder*> folder_info;
  for (const ResultFolder& f : folders) {
    folder_info[{f.submitter, f.system, f.benchmark_folder}] = &f;
    by_folder.try_emplace({f.submitter, f.system, f.benchmark_folder});
  }
  std::vector<Score> out;
  for (const auto& [key, list] : by_folder) {
    Score s = score_runs(list, std::get<2>(key));
    s.submitter = std::get<0>(key);
    s.system = std::get<1>(key);
    if (auto it = folder_info.find(key); it != folder_info.end()) {
      const ResultFolder& f = *it->second;
      if (list.empty()) s.scaling_factor = f.scaling_factor;
      if (!f.problem.empty()) {
        // An unusable scaling.json leaves the score unknown, not unscaled.
        s.minutes.reset();
        if (s.reason.find(f.problem) == std::string::npos)
          s.reason = s.reason.empty() ? f.problem : s.reason + "; " + f.problem;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace scalescope::mlperf
