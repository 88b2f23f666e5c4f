#include "report/run_tables.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "analyze/analyze.hpp"

namespace scalescope::report {
namespace {

std::vector<Column> cols(std::initializer_list<ColumnSpec> spec) { return columns(spec); }

double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
}

void add_rows(Table& t, const analyze::RankAnalysis& r, const std::vector<analyze::AttributionRow>& rows, size_t limit,
              bool with_kind) {
  const auto& a = r.attribution;
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    const auto& x = rows[i];
    std::vector<Cell> cells{int64_t{r.rank}};
    if (with_kind) cells.emplace_back(std::string(analyze::to_string(x.kind)));
    for (Cell c : std::initializer_list<Cell>{x.name, x.calls, x.gpu_ns, x.self_gpu_ns,
                                              pct(x.gpu_ns, a.busy_ns), x.step_fraction * 100, x.sum_ns, x.kernels,
                                              x.kernels_per_call, x.cpu_ns, x.self_cpu_ns})
      cells.push_back(std::move(c));
    t.add_row(std::move(cells));
  }
  std::vector<Cell> cells{int64_t{r.rank}};
  if (with_kind) cells.emplace_back(std::string("-"));
  for (Cell c : std::initializer_list<Cell>{std::string("(unattributed)"), Cell{}, a.unattributed_ns, a.unattributed_ns,
                                            pct(a.unattributed_ns, a.busy_ns), Cell{}, Cell{},
                                            a.unattributed_activities, Cell{}, Cell{}, Cell{}})
    cells.push_back(std::move(c));
  t.add_row(std::move(cells));
}

std::vector<Column> row_columns(bool with_kind) {
  std::vector<Column> c = cols({{"rank", 0}});
  if (with_kind) c.emplace_back("kind", 0);
  for (auto& x : cols({{"name", 0},
                       {"calls", 0, 1},
                       {"gpu_ns", 0, 1},
                       {"self_gpu_ns", 0},
                       {"busy_pct", 1, 2},
                       {"step_pct", 1},
                       {"kernel_sum_ns", 0, 2},
                       {"kernels", 0, 2},
                       {"kernels_per_call", 1, 2},
                       {"cpu_ns", 0, 1},
                       {"self_cpu_ns", 0, 1}}))
    c.push_back(std::move(x));
  return c;
}

}  // namespace

std::vector<Table> attribution_tables(const analyze::RunAnalysis& run, int top, bool all) {
  std::vector<Table> out;
  const size_t limit = all ? SIZE_MAX : static_cast<size_t>(std::max(1, top));
  std::vector<const analyze::RankAnalysis*> ranks;
  for (const auto& r : run.ranks) ranks.push_back(&r);
  if (!all && ranks.size() > 1) ranks.resize(1);
  Table ops(
      all ? "GPU time by operator (every rank; gpu_ns inclusive, busy time shared where work overlaps)"
          : fmt::format(
                "GPU time by operator (first rank, top {}; gpu_ns inclusive, busy time shared where work overlaps)",
                top),
      row_columns(false));
  Table ranges(all ? "GPU time by module and range (every rank)"
                   : fmt::format("GPU time by module and range (first rank, top {})", top),
               row_columns(true));
  for (const auto* r : ranks) {
    const auto& a = r->attribution;
    if (!a.available) {
      std::string reason = a.reason.starts_with("skipped: ") ? a.reason.substr(9) : a.reason;
      ops.add_note(fmt::format("{}: skipped, {}", r->label, reason));
      ranges.add_note(fmt::format("{}: skipped, {}", r->label, reason));
      continue;
    }
    // A trace without operator ranges (an nsys export, an MPI job) would
    // show one "(unattributed)" row: say so instead.
    if (a.operators.empty()) ops.add_note(fmt::format("{}: skipped, no operator ranges in the trace", r->label));
    else add_rows(ops, *r, a.operators, limit, false);
    if (a.ranges.empty()) ranges.add_note(fmt::format("{}: skipped, no module or NVTX ranges in the trace", r->label));
    else add_rows(ranges, *r, a.ranges, limit, true);
    ops.add_note(fmt::format(
        "{}: {} of {} GPU busy time launched inside a range ({:.1f}%); unattributed {}: {} without a launch "
        "call in the trace, {} launched outside every range",
        r->label, format_duration_ns(static_cast<double>(a.attributed_ns)),
        format_duration_ns(static_cast<double>(a.busy_ns)), pct(a.attributed_ns, a.busy_ns),
        format_duration_ns(static_cast<double>(a.unattributed_ns)),
        format_duration_ns(static_cast<double>(a.no_launch_ns)),
        format_duration_ns(static_cast<double>(a.outside_ranges_ns))));
    if (!a.link_source.empty())
      ranges.add_note(fmt::format("{}: {} backward ranges placed under the forward module that made them ({})",
                                  r->label, a.backward_links, a.link_source));
  }
  if (!all && run.ranks.size() > 1) ops.add_note("every rank's tables: --format csv or --json (attribution)");
  out.push_back(std::move(ops));
  out.push_back(std::move(ranges));
  if (!all) return out;

  Table tree("GPU time tree by module, range and operator (node 0: all GPU work; its self time is unattributed)",
             cols({{"rank", 0},
                   {"node", 0},
                   {"parent", 0},
                   {"kind", 0},
                   {"name", 0},
                   {"gpu_ns", 0},
                   {"self_gpu_ns", 0},
                   {"kernels", 0}}));
  Table its("GPU time per iteration (top operators)", cols({{"rank", 0},
                                                            {"iteration", 0},
                                                            {"start_ns", 0},
                                                            {"end_ns", 0},
                                                            {"busy_ns", 0},
                                                            {"attributed_ns", 0},
                                                            {"operator", 0},
                                                            {"gpu_ns", 0}}));
  for (const auto* r : ranks) {
    const auto& a = r->attribution;
    for (size_t i = 0; i < a.tree.size(); ++i) {
      const auto& n = a.tree[i];
      tree.add_row({int64_t{r->rank}, static_cast<int64_t>(i), n.parent < 0 ? Cell{} : Cell{int64_t{n.parent}},
                    std::string(analyze::to_string(n.kind)), n.name, n.gpu_ns, n.self_gpu_ns, n.kernels});
    }
    for (size_t i = 0; i < a.iterations.size(); ++i) {
      const auto& it = a.iterations[i];
      for (size_t k = 0; k < it.top_operator_gpu_ns.size() && k < a.operators.size(); ++k)
        its.add_row({int64_t{r->rank}, static_cast<int64_t>(i), it.start, it.end, it.busy_ns, it.attributed_ns,
                     a.operators[k].name, it.top_operator_gpu_ns[k]});
    }
  }
  out.push_back(std::move(tree));
  out.push_back(std::move(its));
  return out;
}

}  // namespace scalescope::report
