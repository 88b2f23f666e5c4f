#pragma once
// A progress bar for long work (sweeps, large ingests and loads). On a terminal
// it redraws one line on stderr, at most every 100 ms, with a rate and an ETA;
// elsewhere (CI logs, pipes) it prints no progress (notes only), so that an
// error stays the one line a script reads. Plain mode (a line at most every 10 s and one at the end)
// is there for callers that ask for it. Thread-safe: workers may call advance().
//
//   report::Progress p("ingest", files.size());
//   for (auto& f : files) { ingest(f); p.advance(); }
//   p.finish();  // or let the destructor do it

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace scalescope::report {

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  enum class Mode {
    kAuto,   // bar on a terminal (stderr a tty), no progress lines otherwise
    kBar,    // always redraw one line (tests)
    kPlain,  // always plain lines
    kQuiet,  // nothing (--quiet, or --format json to a terminal)
  };

  struct Options {
    Mode mode = Mode::kAuto;
    std::FILE* out = stderr;
    std::chrono::milliseconds redraw_interval{100};
    std::chrono::milliseconds plain_interval{10'000};
    std::function<Clock::time_point()> now;  // injectable clock for tests; steady_clock when empty
    int width = 0;                           // bar columns; 0: from $COLUMNS, else 80
  };

  // total == 0: unknown total (a counter and rate, no bar or ETA).
  Progress(std::string label, uint64_t total);
  Progress(std::string label, uint64_t total, Options options);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(uint64_t n = 1);
  void set(uint64_t done);
  // Text after the counter, e.g. the run now going ("N=8 repeat 2"); kept short.
  void set_detail(std::string_view detail);
  // Prints a line of its own above the bar (a bar line is cleared first).
  void note(std::string_view line);
  // Draws the final state and ends the line; later calls do nothing.
  void finish();

  uint64_t done() const;
  // The line as it would be drawn now, without the leading '\r' (for tests).
  std::string line() const;

  // "1m05s", "12.3s", "2h03m": a compact duration for ETAs.
  static std::string format_eta(double seconds);

 private:
  void maybe_draw_locked(bool force);
  std::string line_locked(Clock::time_point now) const;
  Clock::time_point now() const;

  std::string label_;
  uint64_t total_ = 0;
  uint64_t done_ = 0;
  std::string detail_;
  Options options_;
  bool bar_ = false;
  bool draw_ = true;  // progress lines at all (notes print unless kQuiet)
  bool finished_ = false;
  bool drawn_ = false;  // a bar line is on screen
  Clock::time_point start_;
  Clock::time_point last_draw_;
  mutable std::mutex mutex_;
};

}  // namespace scalescope::report
