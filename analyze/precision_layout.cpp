// Precision and layout of a window's kernels, and the top lists by name (rules: docs/kernel-classes.md).
#include "analyze/precision_layout.hpp"

#include <algorithm>
#include <functional>
#include <string_view>

#include "analyze/options.hpp"
#include "analyze/rank_analysis.hpp"
#include "trace/model/kernel_short_name.hpp"

namespace scalescope::analyze {

namespace {

// The `limit` names of most time (ties: lower id first) among those with a
// count that `keep` accepts.
std::vector<KernelSummary> top_of(const std::vector<int64_t>& ns, const std::vector<int64_t>& count,
                                  const std::vector<KernelInfo>& info, const trace::StringTable& strings, size_t limit,
                                  const std::function<bool(const KernelInfo&)>& keep) {
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < ns.size(); ++id)
    if (count[id] > 0 && keep(info[id])) ids.push_back(id);
  const size_t n = std::min(limit, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
                    [&](uint32_t a, uint32_t b) { return ns[a] > ns[b] || (ns[a] == ns[b] && a < b); });
  std::vector<KernelSummary> out;
  std::vector<std::string_view> names;
  for (size_t k = 0; k < n; ++k) {
    const uint32_t id = ids[k];
    names.push_back(strings.view(id));
    out.push_back({std::string(strings.view(id)), {}, info[id].cls, info[id].precision, count[id], ns[id]});
  }
  const std::vector<std::string> short_names = trace::distinct_short_names(names);
  for (size_t k = 0; k < n; ++k) out[k].short_name = short_names[k];
  return out;
}

}  // namespace

// Precision and layout shares from the sums of the window's kernels, and the
// top lists by name.
void detail::finish_kernel_tables(bool no_kernels, const trace::StringTable& strings, const Options& o,
                                  const std::vector<KernelInfo>& info, const std::vector<int64_t>& ns,
                                  const std::vector<int64_t>& count, RankAnalysis& r) {
  PrecisionStats& prec = r.precision;
  LayoutStats& layout = r.layout;
  if (no_kernels) {
    prec.availability = {false, "skipped: the trace has no kernels"};
    layout.availability = {false, "skipped: the trace has no kernels"};
  }
  if (prec.kernel_ns > 0) {
    const double kn = static_cast<double>(prec.kernel_ns);
    prec.fp64_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kFp64)]) / kn;
    prec.fp32_no_tensor_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kFp32NoTensor)]) / kn;
    prec.tensor_core_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kTensorCore)]) / kn;
    prec.tf32_fraction = static_cast<double>(prec.ns[static_cast<int>(Precision::kTf32)]) / kn;
    layout.fraction = static_cast<double>(layout.conversion_ns) / kn;
    layout.nchw_half_fraction = static_cast<double>(layout.nchw_half_ns) / kn;
  }
  prec.top_fp32 =
      top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.precision == Precision::kFp32NoTensor; });
  prec.top_fp64 =
      top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.precision == Precision::kFp64; });
  layout.top = top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.layout_conversion; });
  layout.top_nchw_half = top_of(ns, count, info, strings, 5, [](const KernelInfo& i) { return i.nchw_half; });
  r.top_kernels = top_of(ns, count, info, strings, static_cast<size_t>(std::max(0, o.top_kernels)),
                         [](const KernelInfo&) { return true; });
}

}  // namespace scalescope::analyze
