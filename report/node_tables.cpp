#include "report/run_tables.hpp"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analyze/analyze.hpp"
#include "base/format_units.hpp"
#include "trace/import/clock_alignment.hpp"

namespace scalescope::report {
namespace {

Cell ns(int64_t v) { return v; }
Cell nsd(double v) { return v; }

std::vector<Column> cols(std::initializer_list<ColumnSpec> spec) { return columns(spec); }

}  // namespace

std::vector<Table> node_tables(const analyze::RunAnalysis& run) {
  std::vector<Table> out;
  size_t named = 0;
  for (const auto& h : run.clocks.hosts) named += h.hostname.starts_with("(unknown host") ? 0 : 1;
  if (named > 1 || run.clocks.any_applied()) {
    Table t("Clocks per host (aligned from matched collectives; --no-align-clocks turns it off)",
            cols({{"host", 0},
                  {"status", 0},
                  {"first_rank", 0},
                  {"processes", 0},
                  {"offset_ns", 0},
                  {"drift_ppm", 3},
                  {"uncertainty_ns", 0},
                  {"spread_ns", 0},
                  {"collectives", 0},
                  {"measured_against", 0}}));
    for (const auto& h : run.clocks.hosts) {
      const bool ref = h.status == trace::HostClockStatus::kReference;
      const bool estimated = !ref && h.matched > 0;
      t.add_row({h.hostname, std::string(trace::to_string(h.status)), int64_t{h.first_rank}, int64_t{h.rank_count},
                 estimated ? Cell{h.offset_ns} : Cell{}, estimated ? Cell{h.drift_ppm} : Cell{},
                 estimated ? nsd(h.uncertainty_ns) : Cell{}, estimated ? nsd(h.spread_ns) : Cell{},
                 estimated ? Cell{h.matched} : Cell{}, h.measured_against});
    }
    t.add_note(
        "offset: the host's clock minus the reference's; agrees: within the noise or 2 us, left alone; "
        "unmatched: no collective shared with an aligned host, left alone");
    out.push_back(std::move(t));
  }
  const auto& n = run.nodes;
  const bool groups_known = std::any_of(n.communicators.begin(), n.communicators.end(),
                                        [](const analyze::CommunicatorSummary& c) { return !c.group.empty(); });
  if (n.availability.available) {
    Table t("Nodes (means over each node's ranks)", cols({{"host", 0},
                                                          {"node", 0},
                                                          {"ranks", 0},
                                                          {"wall_ns", 0},
                                                          {"compute_ns", 0},
                                                          {"exposed_comm_ns", 0},
                                                          {"copies_sets_ns", 0},
                                                          {"idle_ns", 0},
                                                          {"steady_median_iteration_ns", 0},
                                                          {"late_ns", 0},
                                                          {"steady_late_ns", 0},
                                                          {"times_last", 0}}));
    for (const auto& x : n.nodes)
      t.add_row({x.hostname, x.node_rank >= 0 ? Cell{int64_t{x.node_rank}} : Cell{},
                 fmt::format("{}", fmt::join(x.ranks, ",")), nsd(x.wall_ns), nsd(x.compute_ns),
                 nsd(x.exposed_communication_ns), nsd(x.copy_ns), nsd(x.idle_ns), nsd(x.steady_median_iteration_ns),
                 ns(x.late_ns), ns(x.steady_late_ns), x.times_last});
    if (!n.slowest_node.empty()) t.add_note(fmt::format("slowest node: {} (by {})", n.slowest_node, n.slowest_node_by));
    if (!n.missing_nodes.empty())
      t.add_note(fmt::format("{} of {} expected nodes did not report: {}", n.missing_nodes.size(),
                             n.expected_nodes > 0 ? std::to_string(n.expected_nodes) : std::string("?"),
                             fmt::join(n.missing_nodes, ", ")));
    if (!n.missing_ranks.empty())
      t.add_note(fmt::format("{} of {} ranks have no trace: {}", n.missing_ranks.size(), n.expected_ranks,
                             fmt::join(n.missing_ranks, ",")));
    out.push_back(std::move(t));
  }
  if (n.availability.available || groups_known) {
    // The process group column only where some group is known: a run
    // without torch.distributed's groups keeps the narrower table.
    std::vector<Column> spec = cols({{"communicator", 0},
                                     {"process_group", 0},
                                     {"scope", 0, 1},
                                     {"ranks", 0},
                                     {"hosts", 0, 1},
                                     {"collectives", 0},
                                     {"time_ns", 0}});
    if (!groups_known) spec.erase(spec.begin() + 1);
    Table t(groups_known ? "Communicators and their process groups"
                         : "Communicators: intra-node (one host) against inter-node (several hosts)",
            std::move(spec));
    for (const auto& c : n.communicators) {
      std::vector<Cell> row = {c.name.empty() ? std::string("(from kernel names)") : c.name};
      if (groups_known)
        row.push_back(c.group.empty() ? std::string("?")
                                      : fmt::format("{} ({})", c.group, trace::integer_ranges(c.group_ranks, ",")));
      for (Cell cell : std::initializer_list<Cell>{std::string(c.inter_node ? "inter-node" : "intra-node"),
                                                   int64_t{c.ranks}, int64_t{c.hosts}, c.collectives, ns(c.time_ns)})
        row.push_back(std::move(cell));
      t.add_row(std::move(row));
    }
    if (groups_known)
      t.add_note("process group: torch.distributed's (default_pg is the world), with its ranks; ranks: those whose "
                 "traces hold the communicator");
    if (n.availability.available)
      t.add_note(fmt::format("intra-node: {} collectives, {}; inter-node: {} collectives, {} (kernel time over ranks)",
                             n.intra_node_collectives,
                             report::format_duration_ns(static_cast<double>(n.intra_node_ns)),
                             n.inter_node_collectives,
                             report::format_duration_ns(static_cast<double>(n.inter_node_ns))));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace scalescope::report
