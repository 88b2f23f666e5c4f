#pragma once
// A progress bar over the trace files a command loads (a run directory of
// many ranks takes seconds to minutes). Drawn only on a terminal and only for
// runs of several files: scripts, pipes and CI logs get no extra lines.
//
//   LoadProgress progress("load");
//   analyze::analyze_path(path, options, threads, progress.callback());
//   progress.finish();

#include <unistd.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "report/progress.hpp"

namespace scalescope::cli {

class LoadProgress {
 public:
  explicit LoadProgress(std::string label) : label_(std::move(label)), enabled_(::isatty(STDERR_FILENO) == 1) {}

  // Ends the bar's line before the command prints its results.
  void finish() {
    std::lock_guard lock(mutex_);
    if (bar_) bar_->finish();
  }

  // Called by loader threads after each file: (files done, files in all).
  std::function<void(size_t, size_t)> callback() {
    if (!enabled_) return {};
    return [this](size_t done, size_t total) {
      std::lock_guard lock(mutex_);
      if (total < kMinFiles) return;
      if (!bar_) bar_ = std::make_unique<report::Progress>(label_, total);
      bar_->set(done);
    };
  }

 private:
  static constexpr size_t kMinFiles = 4;
  std::string label_;
  bool enabled_;
  std::mutex mutex_;
  std::unique_ptr<report::Progress> bar_;
};

}  // namespace scalescope::cli
