#include "report/stats_tables.hpp"

#include <map>

#include <fmt/format.h>

#include "base/error.hpp"
#include "trace/stats/stats.hpp"

namespace scalescope::report {

std::string stats_scope_label(const trace::Trace& t, size_t index) {
  return t.meta.rank >= 0 ? fmt::format("rank {}", t.meta.rank) : fmt::format("trace {}", index);
}

std::vector<StatsScope> stats_scopes(std::string_view input, const std::vector<const trace::Trace*>& ranks,
                                     std::optional<int> rank) {
  std::vector<StatsScope> out;
  std::vector<const trace::Trace*> chosen;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const trace::Trace& t = *ranks[i];
    if (rank && (t.meta.rank != *rank || !chosen.empty())) continue;
    chosen.push_back(&t);
    out.push_back({stats_scope_label(t, i), t.meta.rank >= 0 ? std::optional<int>(t.meta.rank) : std::nullopt,
                   trace::compute_stats(t)});
  }
  if (rank && chosen.empty()) fail("{}: no trace of rank {}", input, *rank);
  if (chosen.size() > 1) out.push_back({"all ranks", std::nullopt, trace::compute_stats(chosen)});
  return out;
}

nlohmann::json stats_json(std::string_view input, const std::vector<const trace::Trace*>& ranks,
                          std::optional<int> rank, const std::set<std::string>& summaries,
                          const std::vector<std::string>& left_out) {
  static const std::map<std::string, std::string> kKeyOfSummary = {
      {"api", "api"},   {"kernels", "kernels"}, {"memtime", "memory_time"}, {"memsize", "memory_size"},
      {"nvtx", "nvtx"}, {"nccl", "nccl"},       {"problems", "problems"}};
  for (const auto& name : summaries)
    if (!kKeyOfSummary.count(name))
      fail("no summary '{}' (api, kernels, memtime, memsize, nvtx, nccl, problems)", name);
  nlohmann::json scopes = nlohmann::json::array();
  for (StatsScope& sc : stats_scopes(input, ranks, rank)) {
    nlohmann::json stats = sc.stats;
    if (!summaries.empty())
      for (const auto& [name, key] : kKeyOfSummary)
        if (!summaries.count(name)) stats.erase(key);
    scopes.push_back({{"label", std::move(sc.label)},
                      {"rank", sc.rank ? nlohmann::json(*sc.rank) : nlohmann::json()},
                      {"stats", std::move(stats)}});
  }
  return {{"input", input}, {"scopes", std::move(scopes)}, {"left_out", left_out}};
}

}  // namespace scalescope::report
