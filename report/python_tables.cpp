#include "report/run_tables.hpp"

#include <string>
#include <utility>

#include <fmt/format.h>

#include "analyze/analyze.hpp"
#include "base/format_units.hpp"

namespace scalescope::report {

std::vector<Table> python_frame_tables(const analyze::RunAnalysis& run) {
  std::vector<Table> out;
  Table t("Python frames (the Python bootstrap's samples inside windows, wall time: where each thread's samples "
          "ended; callers = the stack that ended there most often, outermost first)",
          columns({{"rank", 0},
                   {"process", 0},
                   {"pid", 0},
                   {"tid", 0},
                   {"thread", 0},
                   {"samples", 0},
                   {"share_pct", 1},
                   {"frame_samples", 0},
                   {"where", 0},
                   {"callers", 0, 1}}));
  t.set_id("python_frames");
  bool any = false;
  for (const auto& r : run.ranks) {
    const auto& p = r.python;
    if (!p.availability.available) continue;
    any = true;
    for (const auto& th : p.threads)
      for (const auto& f : th.top)
        t.add_row({int64_t{r.rank}, std::string(th.worker ? "worker" : "rank"), int64_t{th.pid}, int64_t{th.tid},
                   th.name + (th.is_main ? " (main)" : ""), th.samples, 100 * f.share, f.samples, f.where, f.callers});
    std::string note = fmt::format("rank {}: {} process{} ({} worker{}) sampled at {:g} Hz, {} thread samples",
                                   r.rank, p.processes, p.processes == 1 ? "" : "es", p.worker_processes,
                                   p.worker_processes == 1 ? "" : "s", p.hz, p.samples);
    if (p.dropped > 0) note += fmt::format(", {} of new stacks past the cap not kept", p.dropped);
    if (p.truncated > 0) note += fmt::format(", {} cut at the depth cap", p.truncated);
    note += fmt::format("; the sampler's own CPU time: {} of a core at most",
                        trace::format_percent(p.sampler_cpu_per_second));
    t.add_note(std::move(note));
    for (const auto& problem : p.problems) t.add_note(fmt::format("rank {}: Python sampler {}", r.rank, problem));
  }
  if (!any) return out;
  out.push_back(std::move(t));
  return out;
}

}  // namespace scalescope::report
