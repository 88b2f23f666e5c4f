// The report's view of attribution (docs/attribution.md): sortable tables of
// GPU time by operator and by module/range, and an icicle chart of the tree.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "analyze/analyze.hpp"
#include "report/run_tables.hpp"
#include "report/report_document.hpp"
#include "report/table.hpp"

namespace scalescope::report::detail {

namespace {

// The operators and ranges the page lists (sortable; every row: analyze --format csv).
constexpr int kTableRows = 60;

// `analyze`'s table (report/run_tables.hpp), sortable on the page.
Json sortable_block(const Table& t) {
  int name_column = 0;
  for (size_t i = 0; i < t.columns().size(); ++i)
    if (t.columns()[i].name == "name") name_column = static_cast<int>(i);
  Json j = table_block(t, {name_column});
  j["sortable"] = true;
  return j;
}

}  // namespace

Json attribution_blocks(const analyze::RunAnalysis& run) {
  const std::vector<analyze::RankAnalysis>& ranks = run.ranks;
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
  // The first rank's operators, then its modules and ranges; a table without
  // rows says why in its notes.
  for (const Table& t : attribution_tables(run, kTableRows, false)) {
    if (!t.rows().empty()) blocks.push_back(sortable_block(t));
    for (const std::string& note : t.notes())
      if (t.rows().empty()) blocks.push_back(paragraph(note, "skipped"));
  }
  return blocks;
}

}  // namespace scalescope::report::detail
