#include "report/run_tables.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "advise/advise.hpp"
#include "analyze/analyze.hpp"
#include "base/format_units.hpp"

namespace scalescope::report {
namespace {

// The steady figures where the run has them (what the advisor judged), else the whole trace's.
const analyze::RankAnalysis& judged(const analyze::RankAnalysis& r) { return r.steady ? *r.steady : r; }

std::string pct(double part, double whole) { return whole > 0 ? fmt::format("{:.0f} %", 100.0 * part / whole) : "-"; }

std::string step_line(const analyze::RunAnalysis& run) {
  std::vector<double> medians;
  int64_t steps = 0;
  for (const auto& r : run.ranks) {
    const auto& it = r.iterations;
    if (!it.availability.available || it.count == 0) continue;
    medians.push_back(it.steady_median_ns > 0 ? it.steady_median_ns : it.median_ns);
    steps = std::max(steps, it.count - it.warmup_count);
  }
  if (medians.empty()) {
    const auto& it = run.ranks.front().iterations;
    return fmt::format("steps: not found ({})", it.availability.reason.empty() ? "no iteration marks" : it.availability.reason);
  }
  const auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
  if (*hi - *lo < 0.005 * *hi)
    return fmt::format("step time: {} (median of {} steady steps)", trace::format_duration_ns(*hi), steps);
  return fmt::format("step time: {} to {} across ranks (median of up to {} steady steps; the slowest rank sets the pace)",
                     trace::format_duration_ns(*lo), trace::format_duration_ns(*hi), steps);
}

std::string gpu_line(const analyze::RunAnalysis& run) {
  double wall = 0, compute = 0, comm = 0, copy = 0, idle = 0;
  for (const auto& r : run.ranks) {
    const auto& b = judged(r).breakdown;
    if (!b.availability.available) continue;
    wall += b.wall_ns, compute += b.compute_ns, comm += b.exposed_communication_ns, copy += b.copy_ns,
        idle += b.idle_ns;
  }
  if (wall <= 0) return "GPU time: no GPU activity in the trace";
  return fmt::format("GPU time{}: compute {}, communication not hidden {}, copies {}, idle {}",
                     run.ranks.size() > 1 ? " (all ranks)" : "", pct(compute, wall), pct(comm, wall),
                     pct(copy, wall), pct(idle, wall));
}

}  // namespace

std::vector<std::string> run_headline(const analyze::RunAnalysis& run, const std::vector<advise::Finding>& findings,
                                      std::string_view input, size_t top_findings) {
  std::vector<std::string> lines;
  if (run.ranks.empty()) {
    lines.push_back(fmt::format("{}: no rank with GPU activity", input));
    return lines;
  }
  lines.push_back(fmt::format("{}: {} rank{}{}", input, run.ranks.size(), run.ranks.size() == 1 ? "" : "s",
                              run.ranks.front().steady ? ", steady steps (warm-up left out)" : ""));
  lines.push_back(step_line(run));
  lines.push_back(gpu_line(run));
  if (findings.empty()) {
    lines.push_back("findings: none above their thresholds");
  } else {
    lines.push_back(fmt::format("top finding{} (saving: share of step time):", findings.size() == 1 ? "" : "s"));
    const size_t n = std::min(top_findings, findings.size());
    const advise::Finding* last_root = nullptr;
    for (size_t i = 0; i < n; ++i) {
      const auto& f = findings[i];
      const char* bound = f.saving_kind == advise::SavingKind::kEstimate ? "about" : "up to";
      const std::string cause = f.explained_by.empty() ? std::string() : ", caused by " + f.explained_by;
      lines.push_back(
          fmt::format("  {}. {} ({} {:.1f} %{}): {}", i + 1, f.title, bound, 100.0 * f.saving_fraction, cause, f.fix));
      if (f.explained_by.empty()) last_root = &f;
    }
    if (last_root && last_root->combined_count > 1)
      lines.push_back(fmt::format("  fixing the first {} root causes: about {:.1f} % of step time, combined over the "
                                  "timeline (not summed)",
                                  last_root->combined_count, 100.0 * last_root->combined_fraction));
    if (findings.size() > n) lines.push_back(fmt::format("  ... and {} more", findings.size() - n));
  }
  return lines;
}

}  // namespace scalescope::report
