#pragma once
// The tables of `scalescope stats` (nsys-stats-like summaries), from
// trace/stats' typed summaries, and its typed JSON (also the C library's
// stats call): the summaries per trace and combined across them.
//
//   for (const auto& t : report::stats_tables(trace::compute_stats(trace), "rank 0", {"kernels"})) t.print(std::cout);
//   report::json_envelope("stats", report::stats_json("run.ssrun", ranks, std::nullopt, {"kernels"}, left_out))

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/table.hpp"
#include "trace/model/trace.hpp"
#include "trace/stats/stats.hpp"

namespace scalescope::report {

// What a trace's summaries are headed by: "rank N", else "trace <index>".
std::string stats_scope_label(const trace::Trace& t, size_t index);

// One scope of `stats`: a trace's summaries, or those of all ranks combined.
struct StatsScope {
  std::string label;
  std::optional<int> rank;  // none: a trace without a rank, or all ranks
  trace::TraceStats stats;
};

// One scope per trace of `ranks` (launchers already left out,
// trace/model/launcher.hpp; only the first of rank `rank` when given, an
// Error naming `input` when there is none), then "all ranks" combined when
// there are several. The JSON and the tables below are both made from
// these.
std::vector<StatsScope> stats_scopes(std::string_view input, const std::vector<const trace::Trace*>& ranks,
                                     std::optional<int> rank);

// {"input", "scopes": [{"label", "rank" (null without one), "stats"}],
// "left_out"}: the scopes of stats_scopes. Each stats object keeps the
// summaries named in `summaries` (stats' --report names); empty: all of them.
nlohmann::json stats_json(std::string_view input, const std::vector<const trace::Trace*>& ranks,
                          std::optional<int> rank, const std::set<std::string>& summaries,
                          const std::vector<std::string>& left_out);

// The summaries named in `want` (stats' --report names: api, kernels,
// memtime, memsize, nvtx, nccl, problems), each titled "<summary> (<scope>)".
// Names stay whole: the terminal abbreviates them in the middle to fit its
// width; CSV and JSON keep them exact. Times in ns.
std::vector<Table> stats_tables(const trace::TraceStats& s, const std::string& scope,
                                const std::set<std::string>& want);

// The tables `stats` prints: stats_tables of every scope of stats_scopes,
// with the processes left out (launchers) noted under the first table.
std::vector<Table> stats_scope_tables(std::string_view input, const std::vector<const trace::Trace*>& ranks,
                                      std::optional<int> rank, const std::set<std::string>& want,
                                      const std::vector<std::string>& left_out);

}  // namespace scalescope::report
