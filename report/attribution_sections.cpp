// The report's view of attribution (docs/attribution.md): sortable tables of
// GPU time by operator and by module/range, and an icicle chart of the tree.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "analyze/analyze.hpp"
#include "report/report_document.hpp"
#include "report/table.hpp"

namespace scalescope::report::detail {

namespace {

constexpr size_t kTableRows = 60;

Json rows_block(const std::string& title, const analyze::RankAnalysis& r,
                const std::vector<analyze::AttributionRow>& rows, bool with_kind) {
  const auto& a = r.attribution;
  std::vector<Column> columns;
  if (with_kind) columns.emplace_back("kind");
  for (const char* c : {"name", "calls", "GPU ms (incl.)", "self GPU ms", "share of busy", "kernel sum ms",
                        "kernels/call", "CPU ms", "self CPU ms"})
    columns.emplace_back(c, 3);
  Table t(title, columns);
  auto share = [&](int64_t ns) {
    return a.busy_ns > 0 ? static_cast<double>(ns) / static_cast<double>(a.busy_ns) : 0.0;
  };
  for (size_t i = 0; i < rows.size() && i < kTableRows; ++i) {
    const auto& x = rows[i];
    std::vector<Cell> cells;
    if (with_kind) cells.emplace_back(std::string(analyze::to_string(x.kind)));
    for (Cell c : std::initializer_list<Cell>{
             x.name, x.calls, ms(static_cast<double>(x.gpu_ns)), ms(static_cast<double>(x.self_gpu_ns)),
             share(x.gpu_ns), ms(static_cast<double>(x.sum_ns)), x.kernels_per_call, ms(static_cast<double>(x.cpu_ns)),
             ms(static_cast<double>(x.self_cpu_ns))})
      cells.push_back(std::move(c));
    t.add_row(std::move(cells));
  }
  std::vector<Cell> un;
  if (with_kind) un.emplace_back(std::string("-"));
  for (Cell c : std::initializer_list<Cell>{
           std::string("(unattributed)"), Cell{}, ms(static_cast<double>(a.unattributed_ns)),
           ms(static_cast<double>(a.unattributed_ns)), share(a.unattributed_ns), Cell{}, Cell{}, Cell{}, Cell{}})
    un.push_back(std::move(c));
  t.add_row(std::move(un));
  if (rows.size() > kTableRows)
    t.add_note(
        fmt::format("the {} largest of {}; all of them: scalescope analyze --format csv", kTableRows, rows.size()));
  Json j = table_block(t, {with_kind ? 1 : 0});
  j["sortable"] = true;
  return j;
}

}  // namespace

Json attribution_blocks(const std::vector<analyze::RankAnalysis>& ranks) {
  if (ranks.empty()) return Json::array();
  const analyze::RankAnalysis& r = ranks.front();
  const auto& a = r.attribution;
  if (!a.available) {
    std::string reason = a.reason.starts_with("skipped: ") ? a.reason.substr(9) : a.reason;
    return Json::array({paragraph(fmt::format("GPU time by operator: skipped, {}.", reason), "skipped")});
  }
  // Without operator or module ranges (an nsys export, an MPI job) every
  // table would hold one "(unattributed)" row.
  if (a.operators.empty() && a.ranges.empty())
    return Json::array(
        {paragraph("GPU time by operator: skipped, no operator ranges in the trace.", "skipped")});
  Json blocks = Json::array();
  std::string who = ranks.size() > 1 ? fmt::format(" ({}; the other ranks: scalescope analyze --json)", r.label) : "";
  blocks.push_back(paragraph(fmt::format(
      "GPU time by operator, module and range{}: {:.1f}% of the GPU's busy time ({:.2f} ms) was launched inside a range; "
      "{:.2f} ms is unattributed ({:.2f} ms without a launch call in the trace, {:.2f} ms launched outside every range). "
      "Where kernels overlap, busy time is shared among them, so the parts add up to the busy time.{}",
      who, a.busy_ns > 0 ? 100.0 * static_cast<double>(a.attributed_ns) / static_cast<double>(a.busy_ns) : 0.0,
      ms(static_cast<double>(a.busy_ns)), ms(static_cast<double>(a.unattributed_ns)),
      ms(static_cast<double>(a.no_launch_ns)), ms(static_cast<double>(a.outside_ranges_ns)),
      a.link_source.empty() ? std::string()
                            : fmt::format(" {} backward ranges are shown under the forward module that made them ({}).",
                                          a.backward_links, a.link_source))));
  // The icicle: nodes as [parent, name, kind, gpu ms, self ms, kernels].
  Json nodes = Json::array();
  for (const auto& n : a.tree)
    nodes.push_back(
        Json::array({n.parent, n.name, std::string(analyze::to_string(n.kind)), ms(static_cast<double>(n.gpu_ns)),
                     ms(static_cast<double>(n.self_gpu_ns)), n.kernels}));
  blocks.push_back(
      {{"type", "chart"},
       {"kind", "icicle"},
       {"tall", true},
       {"unit", "ms"},
       {"title", "GPU time by module and operator (icicle: width = GPU time, depth = nesting)"},
       {"nodes", std::move(nodes)},
       {"notes", Json::array({"Each bar is a range; its children are the ranges inside it. The top bar is all "
                              "GPU work; its uncovered part is the unattributed time. Click a bar to zoom."})}});
  if (a.operators.empty())
    blocks.push_back(paragraph("GPU time by operator: skipped, no operator ranges in the trace.", "skipped"));
  else
    blocks.push_back(rows_block("GPU time by operator (click a column to sort)", r, a.operators, false));
  if (a.ranges.empty())
    blocks.push_back(paragraph("GPU time by module and range: skipped, no module or NVTX ranges in the trace.", "skipped"));
  else
    blocks.push_back(rows_block("GPU time by module and range (click a column to sort)", r, a.ranges, true));
  return blocks;
}

}  // namespace scalescope::report::detail
