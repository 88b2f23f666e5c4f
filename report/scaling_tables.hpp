#pragma once
// The tables of `scalescope scaling`, rendered from the typed study
// (sweep/scaling_study.hpp): runs, scaling per configuration, break-even,
// comparisons, predictions. The HTML report draws the same object.
//
//   report::print_tables(std::cout, "scaling", report::scaling_tables(sweep::study_scaling(stored, {})),
//                        OutputFormat::kCsv);  // JSON: the typed sweep::ScalingStudy itself

#include <optional>
#include <vector>

#include "report/table.hpp"

namespace scalescope::sweep {
struct ConfigScaling;
struct ScalingStudy;
struct StoredSweep;
}

namespace scalescope::report {

// All tables, in the order `scalescope scaling` prints them (comparisons only
// when there are any, predictions only when asked for).
std::vector<Table> scaling_tables(const sweep::ScalingStudy& study);

// The tables the HTML report shows on their own.
// One configuration's rows as the HTML report shows them beside its charts
// ("Scaling: <label>"): the main table's columns the page keeps, under the
// page's headers (one column list for both); config.table must be set.
Table scaling_config_table(const sweep::ConfigScaling& config, const sweep::ScalingStudy& study);
Table scaling_comparison_table(const sweep::ScalingStudy& study);

// A `--scheduler slurm` sweep's jobs: one row per run with its job id, state,
// exit code, node list, GPUs allocated and time queued; no rows for a sweep
// without Slurm jobs.
Table slurm_jobs_table(const sweep::StoredSweep& stored);

}  // namespace scalescope::report
