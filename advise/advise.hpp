#pragma once
// The advisor: rules that turn a RunAnalysis into findings, each with evidence
// (figures and where in the trace), an estimated saving (an upper bound as a
// share of step time, and how it was estimated) and a concrete fix. Rules and
// thresholds are documented in docs/advisor.md. No finding without evidence
// above its rule's threshold.
//
//   std::vector<advise::Finding> f = advise::advise(run);   // ranked by saving
//   nlohmann::json j = f;                                   // to_json below

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyze/analyze.hpp"

namespace scalescope::advise {

enum class Severity : uint8_t { kInfo = 0, kWarning, kCritical };
std::string_view to_string(Severity s);

struct Figure {
  std::string name;  // "pageable HtoD share"
  double value = 0;
  std::string unit;  // "ns", "bytes", "fraction", "count", "GB/s"
};

// A figure as a person reads it, with the formatters of every table:
// "60.703 ms" for 60702501.55 ns, "0.043%" for the fraction 4.26e-4,
// "1.50 MiB", "x1.25" for a ratio, "1,234" for a count.
std::string format_figure(const Figure& f);

// An upper bound is time the trace shows the problem costs (the fix can gain
// at most that); an estimate assumes how much faster the fixed code runs.
enum class SavingKind : uint8_t { kUpperBound = 0, kEstimate };
std::string_view to_string(SavingKind k);

struct RankSaving {
  int32_t rank = -1;
  double fraction = 0;  // that rank's own saving, share of its step time
};

struct Finding {
  std::string id;     // stable rule id, e.g. "pinned-memory"
  std::string title;  // one line
  Severity severity = Severity::kInfo;
  std::string evidence;  // sentence with the figures and where (ranks, kernels)
  std::vector<Figure> figures;
  std::vector<int32_t> ranks;  // ranks the finding is about (empty: all)
  double saving_fraction = 0;  // the saving, share of step time (the worst rank's)
  SavingKind saving_kind = SavingKind::kUpperBound;
  std::string saving_method;  // how the saving was estimated
  std::string fix;            // concrete change in the job's framework, e.g. "DataLoader(pin_memory=True)"
  std::vector<RankSaving> rank_savings;  // every rank above the threshold, with its own saving
  // The cause graph (docs/advisor.md): this finding is a symptom of
  // `explained_by` (another finding's id; "" for a root cause), and is the
  // cause of the findings in `explains`. Fixing a root fixes what it explains.
  std::string explained_by;
  std::vector<std::string> explains;
  // Ranking key: a root's largest saving over itself and what it explains
  // (fixing the root gains that); an explained finding's root's.
  double chain_saving_fraction = 0;
  // Roots only: fixing this root and every root ranked above it
  // (combined_count of them), combined over the timeline (docs/advisor.md),
  // not summed; 0 on explained findings.
  double combined_fraction = 0;
  int combined_count = 0;
  // Why the window cannot support the finding (fewer than two complete
  // iterations): its severity is then held at info. Empty when it can.
  std::string caveat;
};

// How combined_fraction is computed, in one sentence (for tables and pages).
std::string_view combined_method();

// Thresholds of the rules (defaults as in docs/advisor.md).
struct Thresholds {
  double pageable_share_of_step = 0.02;  // pageable copy time / step time
  double layout_share = 0.03;            // conversion kernels / kernel time
  double fp32_share = 0.10;              // FP32 non-tensor-core GEMM/conv / kernel time
  double fp64_share = 0.02;
  double exposed_comm_share = 0.10;      // exposed communication / wall
  double straggler_share = 0.05;         // a rank's lateness / step time
  double launch_gap_share = 0.10;        // GPU gaps / wall when launch-bound
  double sync_share = 0.05;              // host synchronize / wall
  double starvation_share = 0.05;        // input starvation / iteration time
  double iteration_cv = 0.10;            // steady-state coefficient of variation
  double sync_copy_share = 0.02;         // synchronous copies / wall
  double remote_memory_fraction = 0.10;  // pages off the GPU's NUMA node
  // Host threads (the collector's host sampler): judged only where the GPU
  // idles at least host_gpu_idle_share of the wall time (else the host does
  // not hold the step back).
  double host_gpu_idle_share = 0.10;
  double host_busy_share = 0.85;          // main thread on a CPU / wall: host-bound
  double host_main_wait_share = 0.30;     // main thread asleep / wall, with workers busy: loader-bound
  double host_worker_cores = 0.25;        // workers' CPU (cores) that makes a sleeping main thread loader-bound
  double host_run_wait_share = 0.05;      // main thread runnable but off-CPU / wall: contention
  double host_contended_instants = 0.10;  // samples with more runnable threads than cores: contention
  double host_communication_share = 0.05;  // GPU idle inside MPI calls / step time
  // GPU clocks (the collector's NVML samples): the median SM clock this far
  // below the GPU's maximum, and, where NVML's reasons are recorded, held
  // down by one in this share of the samples.
  double clock_deficit = 0.10;
  double throttled_samples = 0.10;
};

// Applies every rule, links causes to their symptoms, combines the savings;
// roots sorted by chain_saving_fraction, descending, each followed by the
// findings it explains.
std::vector<Finding> advise(const analyze::RunAnalysis& run, const Thresholds& thresholds = {});

// Every finding id advise() can report: the per-rank rules in the order they
// run (one function each), then the run-level ones.
std::vector<std::string_view> rule_ids();

void to_json(nlohmann::json& j, const Figure& v);
void to_json(nlohmann::json& j, const RankSaving& v);
void to_json(nlohmann::json& j, const Finding& v);

}  // namespace scalescope::advise
