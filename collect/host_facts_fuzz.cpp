// Fuzzes the collector's text parsers: numa_maps, CPU lists, NCCL kernel
// names, the SCALESCOPE_* options and the run directory's control files
// (window requests and progress, which other processes and users write). None may crash, hang or allocate without
// bound; bad input is an Error (CPU lists, options) or skipped (numa_maps).
#include <cstddef>
#include <cstdint>
#include <string>

#include "collect/collector_options.hpp"
#include "collect/host_facts.hpp"
#include "collect/run_control.hpp"
#include "trace/model/nccl_kernel_name.hpp"
#include "base/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scalescope;
  std::string text(reinterpret_cast<const char*>(data), size);
  collect::parse_numa_maps(text, 4096);
  trace::parse_nccl_kernel_name(text);
  std::string error;
  if (auto r = collect::parse_window_request(text, &error)) {
    // What is accepted round-trips.
    auto again = collect::parse_window_request(collect::window_request_json(*r), &error);
    if (!again || again->id != r->id || again->start_iteration != r->start_iteration) __builtin_trap();
  }
  if (auto p = collect::parse_progress(text, &error)) collect::progress_json(*p);
  try {
    collect::format_cpu_list(collect::parse_cpu_list(text));
  } catch (const Error&) {}
  try {
    auto eq = text.find('=');
    collect::Environment env;
    if (eq != std::string::npos) env[text.substr(0, eq)] = text.substr(eq + 1);
    collect::parse_collector_options(env);
  } catch (const Error&) {}
  return 0;
}
