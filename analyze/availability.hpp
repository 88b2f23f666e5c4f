#pragma once
// Why an analysis has no figures (every result type holds one).

#include <string>

namespace scalescope::analyze {

// Why an analysis has no figures: e.g. "skipped: the trace has no host facts
// (imported from PyTorch profiler)".
struct Availability {
  bool available = true;
  std::string reason;  // empty when available
};

}  // namespace scalescope::analyze
