#include "report/sweep_progress.hpp"

#include <chrono>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "report/terminal.hpp"

namespace scalescope::report {

std::string format_eta(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = std::llround(s);
  if (t >= 3600) return fmt::format("{}h{:02d}m", t / 3600, (t % 3600) / 60);
  if (t >= 60) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

namespace {

std::string bar_of(int done, int planned) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / std::max(1, planned));
  return std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kWidth - filled), '.');
}

struct Printer {
  std::FILE* out;
  bool bar;
  std::chrono::steady_clock::time_point last_draw{};

  void draw_running(const sweep::SweepEvent& e, const std::string& label) {
    fmt::print(out, "\r\033[K[{}] {}/{} runs, {} failed, elapsed {}  (running: g{}{}{} r{}, {})",
               bar_of(e.done, e.planned), e.done, e.planned, e.failed, format_eta(e.sweep_elapsed_s), e.gpus,
               label.empty() ? "" : " ", label, e.rep, format_eta(e.run_elapsed_s));
  }

  void operator()(const sweep::SweepEvent& e) {
    using Kind = sweep::SweepEvent::Kind;
    const std::string label = terminal_safe(e.config_label);
    switch (e.kind) {
      case Kind::kOrphanRerun:
        fmt::print(out, "run {}: left 'running' by a sweep that died; running it again\n", e.run_index);
        break;
      case Kind::kRunStarted:
        last_draw = std::chrono::steady_clock::now();
        if (bar) draw_running(e, label);
        else if (!e.note.empty())  // submitted to a scheduler: several wait at once, so the plan index names it
          fmt::print(out, "run #{} gpus={}{}{} rep={}: {} (elapsed {})\n", e.run_index, e.gpus,
                     label.empty() ? "" : " ", label, e.rep, terminal_safe(e.note), format_eta(e.sweep_elapsed_s));
        else
          fmt::print(out, "run {}/{} gpus={}{}{} rep={}: running (elapsed {})\n", e.done + 1, e.planned, e.gpus,
                     label.empty() ? "" : " ", label, e.rep, format_eta(e.sweep_elapsed_s));
        break;
      case Kind::kRunning:
        if (!bar || std::chrono::steady_clock::now() - last_draw < std::chrono::seconds(1)) return;
        last_draw = std::chrono::steady_clock::now();
        draw_running(e, label);
        break;
      case Kind::kRunFinished: {
        const std::string metric = e.metric ? fmt::format("{:.6g}", *e.metric) : "-";
        if (bar)
          fmt::print(out, "\r\033[K[{}] {}/{} runs, {} failed, elapsed {}, ETA {}  (last: g{} {} r{} {} {})",
                     bar_of(e.done, e.planned), e.done, e.planned, e.failed, format_eta(e.sweep_elapsed_s),
                     format_eta(e.eta_s), e.gpus, label, e.rep, sweep::status_name(e.status), metric);
        else
          fmt::print(out, "run {}/{} gpus={}{}{} rep={}: {} in {:.2f} s, {}={}{}{} (elapsed {}, ETA {})\n", e.done,
                     e.planned, e.gpus, label.empty() ? "" : " ", label, e.rep, sweep::status_name(e.status), e.wall_s,
                     e.metric_name, metric, e.note.empty() ? "" : "; ", terminal_safe(e.note),
                     format_eta(e.sweep_elapsed_s), format_eta(e.eta_s));
        break;
      }
      case Kind::kQueue: {
        // One line per change: "queue: g1 3 queued 1 running 2 done | g2 precision=bf16 ...".
        std::string line;
        for (const auto& q : e.queue)
          line += fmt::format("{}g{}{}{} {} queued {} running {} done", line.empty() ? "" : " | ", q.gpus,
                              q.config_label.empty() ? "" : " ", terminal_safe(q.config_label), q.queued, q.running,
                              q.done);
        fmt::print(out, "{}queue: {}\n", bar ? "\r\033[K" : "", line);
        break;
      }
      case Kind::kSweepEnded:
        if (bar) fmt::print(out, "\n");
        break;
    }
    std::fflush(out);
  }
};

}  // namespace

sweep::SweepObserver sweep_progress_printer(std::FILE* out, bool bar) {
  if (!out) return {};
  auto printer = std::make_shared<Printer>(Printer{out, bar});
  return [printer](const sweep::SweepEvent& e) { (*printer)(e); };
}

}  // namespace scalescope::report
