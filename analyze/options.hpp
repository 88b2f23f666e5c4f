#pragma once
// What analyze_rank is asked for: the window and the rules (WindowSpec's text: iterations.cpp).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "analyze/kernel_classifier.hpp"

namespace scalescope::analyze {

// --window START:END. Forms: "10%:90%" (of the trace span), "5s:10s" or
// "2000000:9000000" (time after the trace's first event; units ns, us, ms, s,
// a bare number is ns; kind kNanoseconds either way), "it5:it50" (iterations
// 5 to 49, 0-based, end exclusive). Both ends use the same form.
struct WindowSpec {
  enum class Kind : uint8_t { kNanoseconds = 0, kPercent, kIterations };
  Kind kind = Kind::kPercent;
  double start = 0, end = 100;
  static WindowSpec parse(std::string_view text);  // throws Error naming the text
  static constexpr double kMaxNanoseconds = 1e18;  // ~31 years: offsets stay far inside int64
  static constexpr double kMaxIterations = 1e9;
  std::string to_string() const;
};

struct Options {
  std::optional<WindowSpec> window;  // none: the whole trace
  std::string iteration_range;       // NVTX range name marking one iteration; "" = automatic
  KernelClassifier classifier;
  int top_kernels = 200;          // kernel names kept per rank (for top lists and diff)
  double warmup_tolerance = 0.5;  // an early iteration longer than (1+tol) x steady median is warm-up
  bool attribution = true;        // GPU time by operator and range (attribution.hpp); off to measure its cost
  // Align the hosts' clocks from matched collectives before stragglers are
  // measured (trace/import/clock_alignment.hpp); false: estimate and report only.
  bool align_clocks = true;
  // analyze_path reads an .sstrace rank of more rows than this chunk by chunk
  // (analyze_rank_streaming: memory bounded whatever its length, the same
  // figures); smaller ones whole, which costs less: the streamed passes
  // decode every chunk three to five times and hold about 230 MiB with
  // attribution, what reading 2.5 M rows whole takes (bench/RESULTS.md).
  // 0: every .sstrace rank streamed.
  uint64_t stream_above_rows = 4'000'000;
};

}  // namespace scalescope::analyze
