#include "report/stats_json.hpp"

#include <map>

#include <fmt/format.h>

#include "base/error.hpp"
#include "trace/stats/stats.hpp"

namespace scalescope::report {

std::string stats_scope_label(const trace::Trace& t, size_t index) {
  return t.meta.rank >= 0 ? fmt::format("rank {}", t.meta.rank) : fmt::format("trace {}", index);
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
  auto scope = [&](std::string label, nlohmann::json rank_number, const trace::TraceStats& st) {
    nlohmann::json stats = st;
    if (!summaries.empty())
      for (const auto& [name, key] : kKeyOfSummary)
        if (!summaries.count(name)) stats.erase(key);
    return nlohmann::json{{"label", std::move(label)}, {"rank", std::move(rank_number)}, {"stats", std::move(stats)}};
  };
  std::vector<const trace::Trace*> chosen;
  nlohmann::json scopes = nlohmann::json::array();
  for (size_t i = 0; i < ranks.size(); ++i) {
    const trace::Trace& t = *ranks[i];
    if (rank && (t.meta.rank != *rank || !chosen.empty())) continue;
    chosen.push_back(&t);
    scopes.push_back(scope(stats_scope_label(t, i), t.meta.rank >= 0 ? nlohmann::json(t.meta.rank) : nlohmann::json(),
                           trace::compute_stats(t)));
  }
  if (rank && chosen.empty()) fail("{}: no trace of rank {}", input, *rank);
  if (chosen.size() > 1) scopes.push_back(scope("all ranks", nullptr, trace::compute_stats(chosen)));
  return {{"input", input}, {"scopes", std::move(scopes)}, {"left_out", left_out}};
}

}  // namespace scalescope::report
