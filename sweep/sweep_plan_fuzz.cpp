// Fuzzes the sweep's text inputs: --vary, --gpus, --timeout, --metric (the
// regex metric has its own fuzzer, metric_regex_fuzz), and command
// templates with placeholders, through planning and expansion. Bad text must
// end in scalescope::Error, never a crash or a runaway plan.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sweep/sweep.hpp"
#include "base/error.hpp"
#include "base/number_check.hpp"

namespace {

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size() && out.size() < 16) {
    const size_t end = text.find('\n', start);
    out.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scalescope::sweep;
  if (size > 4096) return 0;
  const auto lines = split_lines(std::string_view(reinterpret_cast<const char*>(data), size));
  // Line 0: GPU list; 1: duration; 2: metric; 3..5: --vary; the rest: template tokens.
  SweepSpec spec;
  try {
    spec.gpus = parse_gpu_list(lines.size() > 0 ? lines[0] : "1");
  } catch (const scalescope::Error&) {
    spec.gpus = {1, 2};
  }
  try {
    if (lines.size() > 1) spec.timeout_s = scalescope::trace::parse_duration(lines[1], "--timeout");
  } catch (const scalescope::Error&) {}
  try {
    if (lines.size() > 2 && !std::string_view(lines[2]).starts_with("regex:"))
      spec.metric = MetricSpec::parse(lines[2]);
  } catch (const scalescope::Error&) {}
  for (size_t i = 3; i < 6 && i < lines.size(); ++i) {
    try {
      spec.vary.push_back(Variable::parse(lines[i]));
    } catch (const scalescope::Error&) {}
  }
  for (size_t i = 6; i < lines.size(); ++i) spec.command.push_back(lines[i]);
  spec.repeat = 2;
  try {
    const auto plan = plan_runs(spec);
    size_t shown = 0;
    for (const auto& run : plan) {
      if (++shown > 64) break;
      for (auto launcher :
           {LauncherKind::kLocal, LauncherKind::kTorchrun, LauncherKind::kSrun, LauncherKind::kMpirun}) {
        spec.launcher = launcher;
        const auto argv = launch_command(spec, run, "/tmp/run", {{"MASTER_ADDR", "h"}});
        if (argv.empty()) __builtin_trap();
      }
      (void)run.dir_name();
      (void)run.config_json();
    }
  } catch (const scalescope::Error&) {}
  return 0;
}
