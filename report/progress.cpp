#include "report/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "report/terminal.hpp"

namespace scalescope::report {

namespace {

int terminal_width() {
  if (const char* c = std::getenv("COLUMNS")) {
    int w = std::atoi(c);
    if (w >= 20 && w <= 1000) return w;
  }
  return 80;
}

}  // namespace

Progress::Progress(std::string label, uint64_t total) : Progress(std::move(label), total, Options{}) {}

Progress::Progress(std::string label, uint64_t total, Options options)
    : label_(std::move(label)), total_(total), options_(std::move(options)) {
  if (options_.out == nullptr) options_.mode = Mode::kQuiet;
  switch (options_.mode) {
    case Mode::kAuto:
      bar_ = isatty(fileno(options_.out)) != 0;
      draw_ = bar_;  // notes still print: they are messages, not progress
      break;
    case Mode::kBar: bar_ = true; break;
    default: bar_ = false; break;
  }
  if (options_.width <= 0) options_.width = terminal_width();
  start_ = now();
  last_draw_ = start_;
  if (options_.mode == Mode::kQuiet) draw_ = false;
  if (!bar_ && draw_) {
    // One line up front so that a log shows the work began.
    fmt::print(options_.out, "{}: started{}\n", label_, total_ ? fmt::format(" ({} to do)", total_) : "");
    std::fflush(options_.out);
  }
}

Progress::~Progress() { finish(); }

Progress::Clock::time_point Progress::now() const { return options_.now ? options_.now() : Clock::now(); }

void Progress::advance(uint64_t n) {
  std::lock_guard lock(mutex_);
  done_ += n;
  maybe_draw_locked(false);
}

void Progress::set(uint64_t done) {
  std::lock_guard lock(mutex_);
  done_ = done;
  maybe_draw_locked(false);
}

void Progress::set_detail(std::string_view detail) {
  std::lock_guard lock(mutex_);
  detail_ = terminal_safe(detail);  // file names and config values may hold escapes
  maybe_draw_locked(false);
}

uint64_t Progress::done() const {
  std::lock_guard lock(mutex_);
  return done_;
}

std::string Progress::line() const {
  std::lock_guard lock(mutex_);
  return line_locked(now());
}

void Progress::note(std::string_view text) {
  std::lock_guard lock(mutex_);
  if (options_.mode == Mode::kQuiet) return;
  if (bar_ && drawn_) fmt::print(options_.out, "\r\033[K");
  fmt::print(options_.out, "{}\n", terminal_safe(text));
  drawn_ = false;
  if (bar_ && !finished_) maybe_draw_locked(true);
  std::fflush(options_.out);
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (!draw_) return;
  const std::string text = line_locked(now());
  if (bar_) fmt::print(options_.out, "\r\033[K{}\n", text);
  else fmt::print(options_.out, "{}\n", text);
  std::fflush(options_.out);
}

void Progress::maybe_draw_locked(bool force) {
  if (finished_ || !draw_) return;
  const auto t = now();
  const auto interval = bar_ ? options_.redraw_interval : options_.plain_interval;
  if (!force && drawn_ && t - last_draw_ < interval) return;
  if (!force && !bar_ && t - last_draw_ < interval) return;
  last_draw_ = t;
  drawn_ = true;
  const std::string text = line_locked(t);
  if (bar_) fmt::print(options_.out, "\r\033[K{}", text);
  else fmt::print(options_.out, "{}\n", text);
  std::fflush(options_.out);
}

std::string Progress::line_locked(Clock::time_point t) const {
  const double elapsed = std::chrono::duration<double>(t - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0.0;
  std::string counts = total_ ? fmt::format("{}/{}", done_, total_) : fmt::format("{}", done_);
  std::string tail;
  if (finished_) {
    tail = fmt::format("done in {}", format_eta(elapsed));
  } else if (total_ && done_ > 0 && done_ < total_) {
    tail =
        fmt::format("ETA {}", format_eta(elapsed * static_cast<double>(total_ - done_) / static_cast<double>(done_)));
  } else if (!total_ && elapsed > 0) {
    tail = fmt::format("{:.1f}/s", rate);
  }
  std::string suffix = counts;
  if (!tail.empty()) suffix += "  " + tail;
  if (!detail_.empty()) suffix += "  " + detail_;
  if (!bar_ || !total_) return fmt::format("{}: {}", label_, suffix);
  // Label, a bar filling the rest of the line, percentage and counts; never wider than the terminal.
  const double fraction = std::clamp(static_cast<double>(done_) / static_cast<double>(total_), 0.0, 1.0);
  const std::string pct = fmt::format("{:3.0f}%", fraction * 100.0);
  const int fixed = static_cast<int>(label_.size() + pct.size() + suffix.size()) + 6;
  const int bar_width = std::clamp(options_.width - fixed, 0, 40);
  if (bar_width < 5) return fmt::format("{}: {} {}", label_, pct, suffix);
  const int filled = static_cast<int>(std::floor(fraction * bar_width));
  return fmt::format("{} [{}{}] {} {}", label_, std::string(static_cast<size_t>(filled), '#'),
                     std::string(static_cast<size_t>(bar_width - filled), '.'), pct, suffix);
}

std::string Progress::format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  if (seconds < 60) return fmt::format("{:.1f}s", seconds);
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

}  // namespace scalescope::report
