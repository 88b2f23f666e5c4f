// What program a trace shows (framework, MPI, NCCL, launcher), and how its
// GPU idle time splits among the host-side causes that cover it. The advisor
// reads both: the first to fit its fixes to the job, the second to combine
// savings carved out of the same idle time (docs/advisor.md).
#include "analyze/job.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analyze/detail.hpp"
#include "analyze/intervals.hpp"
#include "base/enum_names.hpp"

namespace scalescope::analyze {

std::string_view to_string(Framework f) {
  static constexpr auto kNames = std::to_array<std::string_view>({"unknown", "pytorch", "cuda"});
  return name_by_value<Framework::kCuda>(kNames, f, "unknown");
}

int64_t IdleCover::covered_ns(unsigned causes) const {
  int64_t sum = 0;
  for (unsigned set = 1; set < kIdleCauseSets; ++set)
    if (set & causes) sum += by_causes[set];
  return sum;
}

namespace detail {

bool is_mpi_call(std::string_view name) { return name.starts_with("MPI_") || name.starts_with("PMPI_"); }

namespace {

// Names that only PyTorch puts in a trace: its operators (Kineto's cpu_op,
// emit_nvtx), its step ranges, its own kernels (at::native). Counted over the
// string table: distinct names, whichever event carries them.
struct PyTorchNames {
  int64_t operators = 0, steps = 0, kernels = 0;
  bool any() const { return operators + steps + kernels > 0; }
};

PyTorchNames pytorch_names(const trace::StringTable& strings) {
  PyTorchNames n;
  for (trace::StringId id = 0; id < strings.size(); ++id) {
    const std::string_view s = strings.view(id);
    if (s.starts_with("aten::") || s.starts_with("autograd::")) ++n.operators;
    else if (s.starts_with("ProfilerStep#") || s.starts_with("Optimizer.step#")) ++n.steps;
    else if (s.find("at::native::") != std::string_view::npos) ++n.kernels;
  }
  return n;
}

bool has_nccl_kernels(const trace::Trace& t) {
  std::vector<int8_t> seen(t.strings.size(), -1);
  for (size_t i = 0; i < t.kernels.size(); ++i) {
    int8_t& s = seen[t.kernels.name[i]];
    if (s < 0) s = contains_ci(t.strings.view(t.kernels.name[i]), "nccl") ? 1 : 0;
    if (s > 0) return true;
  }
  return false;
}

}  // namespace

JobFacts job_facts(const trace::Trace& t, bool gpu_activity, trace::Timestamp ws, trace::Timestamp we,
                   Intervals* mpi_calls) {
  JobFacts job;
  job.launcher = t.meta.launcher;
  job.nccl = t.nccl.size() > 0 || has_nccl_kernels(t);
  // MPI calls: CUDA API rows (a tool that records them there) and NVTX
  // ranges (nsys --trace=mpi writes each call as one).
  std::map<std::string, int64_t, std::less<>> calls;
  std::vector<int8_t> mpi_name(t.strings.size(), -1);
  auto is_mpi = [&](trace::StringId id) {
    int8_t& m = mpi_name[id];
    if (m < 0) m = is_mpi_call(t.strings.view(id)) ? 1 : 0;
    return m > 0;
  };
  Intervals spans;
  int64_t from_api = 0, from_nvtx = 0;
  auto take = [&](trace::StringId name, trace::Timestamp s, trace::Timestamp e) {
    ++calls[std::string(t.strings.view(name))];
    if (e < ws || s > we || e < s) return false;
    ++job.mpi_calls;
    spans.push_back({std::max(s, ws), std::min(e, we)});
    return true;
  };
  for (size_t i = 0; i < t.api.size(); ++i)
    if (is_mpi(t.api.name[i])) from_api += take(t.api.name[i], t.api.start[i], t.api.end[i]) ? 1 : 0;
  for (size_t i = 0; i < t.nvtx.size(); ++i)
    if (t.nvtx.kind[i] == trace::NvtxKind::kRange && is_mpi(t.nvtx.text[i]))
      from_nvtx += take(t.nvtx.text[i], t.nvtx.start[i], t.nvtx.end[i]) ? 1 : 0;
  job.mpi = !calls.empty();
  normalize(spans);
  job.mpi_ns = total(spans);
  if (mpi_calls) *mpi_calls = std::move(spans);

  std::vector<std::string> evidence;
  const PyTorchNames torch = pytorch_names(t.strings);
  if (t.meta.source == "kineto") {
    job.framework = Framework::kPyTorch;
    evidence.push_back("a PyTorch-profiler (Kineto) trace");
  } else if (torch.any()) {
    job.framework = Framework::kPyTorch;
    std::vector<std::string> parts;
    if (torch.operators > 0) parts.push_back(fmt::format("{} aten:: operator names", torch.operators));
    if (torch.steps > 0) parts.push_back(fmt::format("{} ProfilerStep#/Optimizer.step# ranges", torch.steps));
    if (torch.kernels > 0) parts.push_back(fmt::format("{} at::native kernels", torch.kernels));
    evidence.push_back(fmt::format("PyTorch: {}", fmt::join(parts, ", ")));
  } else if (gpu_activity) {
    job.framework = Framework::kCuda;
    evidence.push_back("GPU work without PyTorch operators, steps or kernels");
  }
  if (job.mpi) {
    std::vector<std::pair<std::string, int64_t>> by_count(calls.begin(), calls.end());
    std::stable_sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<std::string> names;
    for (size_t i = 0; i < by_count.size() && i < 4; ++i)
      names.push_back(fmt::format("{} x{}", by_count[i].first, by_count[i].second));
    evidence.push_back(fmt::format("MPI: {}{} ({})", fmt::join(names, ", "), by_count.size() > 4 ? ", ..." : "",
                                   from_api > 0 && from_nvtx > 0 ? "API and NVTX"
                                   : from_api > 0                ? "API"
                                                                 : "NVTX"));
  }
  if (job.nccl) evidence.push_back(t.nccl.size() > 0 ? "NCCL collectives" : "NCCL kernels");
  if (!job.launcher.empty()) evidence.push_back("launcher " + job.launcher);
  job.evidence = fmt::format("{}", fmt::join(evidence, "; "));
  return job;
}

void IdleSplitter::add(Interval gap, unsigned bits) {
  gap = {std::max(gap.start, cover_.span_start), std::min(gap.end, cover_.span_end)};
  if (gap.end <= gap.start) return;
  cover_.c.idle_ns += gap.end - gap.start;
  // Host waits and MPI calls come sorted and disjoint, as gaps do: the spans
  // ending before this gap cannot reach a later one.
  while (wait_from_ < waits_->size() && (*waits_)[wait_from_].end <= gap.start) ++wait_from_;
  while (mpi_from_ < mpi_->size() && (*mpi_)[mpi_from_].end <= gap.start) ++mpi_from_;
  // Between two boundaries the causes covering the gap are constant.
  trace::Timestamp at = gap.start;
  size_t w = wait_from_, m = mpi_from_;
  while (at < gap.end) {
    trace::Timestamp next = gap.end;
    unsigned set = bits;
    while (w < waits_->size() && (*waits_)[w].end <= at) ++w;
    while (m < mpi_->size() && (*mpi_)[m].end <= at) ++m;
    for (auto [list, i, bit] : {std::tuple{waits_, w, kIdleHostSync}, std::tuple{mpi_, m, kIdleMpi}}) {
      if (i >= list->size()) continue;
      const Interval& iv = (*list)[i];
      if (iv.start <= at) {
        set |= bit;
        next = std::min(next, iv.end);
      } else {
        next = std::min(next, iv.start);
      }
    }
    cover_.c.by_causes[set] += next - at;
    at = next;
  }
}

}  // namespace detail
}  // namespace scalescope::analyze
