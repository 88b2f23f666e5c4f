// Fuzzes the --window and --iteration-range arguments of analyze/diff: the
// input is "WINDOW\nRANGE_NAME". Parsing and resolving them against a small
// synthetic trace (ProfilerStep#N ranges) must give an analysis or a
// scalescope::Error, never a fault or undefined behaviour (huge numbers,
// windows past the trace, names that match no range).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analyze/analyze.hpp"
#include "base/error.hpp"
#include "trace/model/synthetic_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scalescope;
  static const trace::Trace kTrace = trace::make_synthetic_trace(1500, 3);
  if (size > 4096) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const std::string_view window = input.substr(0, nl);
  const std::string_view range = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  analyze::Options o;
  o.iteration_range = std::string(range);
  try {
    if (!window.empty()) {
      o.window = analyze::WindowSpec::parse(window);
      (void)analyze::WindowSpec::parse(o.window->to_string());  // the printed form parses again
    }
    (void)analyze::combine({analyze::analyze_rank(kTrace, o)});
  } catch (const Error&) {}
  return 0;
}
