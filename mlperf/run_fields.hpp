#pragma once
// The fields of a run in the runs table's column order, each a name and how to
// get its value: the one list that the runs CSV (mlperf/runs_csv.cpp), the
// JSON (mlperf/mlperf_json.cpp) and the runs table (report/mlperf_tables.cpp)
// are written from.
//
//   for (const RunField& f : run_fields()) std::visit(write, f.value(run));

#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

namespace scalescope::mlperf {

struct Run;

// Text, a count or number (nullopt: missing; empty in CSV, null in JSON), or
// yes/no (converged).
using RunValue = std::variant<std::string_view, std::optional<int64_t>, std::optional<double>, bool>;

struct RunField {
  std::string_view name;
  RunValue (*value)(const Run&);  // views into the run: valid while it lives
};

const std::vector<RunField>& run_fields();

}  // namespace scalescope::mlperf
