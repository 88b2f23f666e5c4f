#pragma once
// The tables of `scalescope stats` (nsys-stats-like summaries), from
// trace/stats' typed summaries; its JSON is report/stats_json.hpp.
//
//   for (const auto& t : report::stats_tables(trace::compute_stats(trace), "rank 0", {"kernels"})) t.print(std::cout);

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "report/table.hpp"
#include "trace/stats/stats.hpp"

namespace scalescope::report {

// The summaries named in `want` (stats' --report names: api, kernels,
// memtime, memsize, nvtx, nccl, problems), each titled "<summary> (<scope>)".
// Names stay whole: the terminal abbreviates them in the middle to fit its
// width; CSV and JSON keep them exact. Times in ns.
std::vector<Table> stats_tables(const trace::TraceStats& s, const std::string& scope,
                                const std::set<std::string>& want);

// The tables `stats` prints: stats_tables of every scope of stats_scopes
// (report/stats_json.hpp), with the processes left out (launchers) noted
// under the first table.
std::vector<Table> stats_scope_tables(std::string_view input, const std::vector<const trace::Trace*>& ranks,
                                      std::optional<int> rank, const std::set<std::string>& want,
                                      const std::vector<std::string>& left_out);

}  // namespace scalescope::report
