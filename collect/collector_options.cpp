#include "collect/collector_options.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/enum_names.hpp"
#include "base/error.hpp"

namespace scalescope::collect {
namespace {

const std::string* find(const Environment& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

double parse_seconds(const Environment& env, const char* name, double fallback) {
  const std::string* v = find(env, name);
  if (!v) return fallback;
  double out = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || p != v->data() + v->size() || !std::isfinite(out) || out < 0)
    fail("{}='{}' is not a non-negative number of seconds", name, *v);
  return out;
}

uint64_t parse_count(const Environment& env, const char* name, uint64_t fallback, uint64_t min) {
  const std::string* v = find(env, name);
  if (!v) return fallback;
  uint64_t out = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || p != v->data() + v->size() || out < min || out > (uint64_t{1} << 40))
    fail("{}='{}' must be a whole number of iterations from {}", name, *v, min);
  return out;
}

// `parse` of a variable's value, its error prefixed with the variable's name.
template <class Parse>
auto parse_named(const std::string& value, const char* name, Parse parse) {
  try {
    return parse(value);
  } catch (const Error& e) {
    fail("{}: {}", name, e.what());
  }
}

bool parse_switch(const Environment& env, const char* name, bool fallback) {
  const std::string* v = find(env, name);
  if (!v) return fallback;
  if (*v != "0" && *v != "1") fail("{}='{}' must be 0 or 1", name, *v);
  return *v == "1";
}

std::string number(double v) {
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

ApiMode parse_api_mode(std::string_view text) {
  if (text == "default") return ApiMode::kDefault;
  if (text == "all") return ApiMode::kAll;
  if (text == "none") return ApiMode::kNone;
  fail("bad API mode '{}': expected default, all or none", text);
}

ApiRecords parse_api_records(std::string_view text) {
  if (text == "activity") return ApiRecords::kActivity;
  if (text == "callbacks") return ApiRecords::kCallbacks;
  fail("bad API record path '{}': expected activity or callbacks", text);
}

std::string_view to_string(ApiRecords records) { return records == ApiRecords::kCallbacks ? "callbacks" : "activity"; }

std::string_view to_string(ApiMode mode) {
  static constexpr auto kNames = std::to_array<std::string_view>({"default", "all", "none"});
  return name_by_value<ApiMode::kNone>(kNames, mode, "default");
}

namespace {

struct ActivityName {
  std::string_view name;
  uint32_t bit;
};
constexpr ActivityName kActivityNames[] = {{"kernel", kActivityKernel},
                                           {"memcpy", kActivityMemcpy},
                                           {"memset", kActivityMemset},
                                           {"sync", kActivitySync},
                                           {"nvtx", kActivityNvtx}};

}  // namespace

uint32_t parse_activities(std::string_view text) {
  if (text == "all") return kAllActivities;
  uint32_t out = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = std::min(text.find(',', pos), text.size());
    std::string_view name = text.substr(pos, comma - pos);
    uint32_t bit = 0;
    for (const auto& a : kActivityNames)
      if (a.name == name) bit = a.bit;
    if (bit == 0)
      fail("bad activity '{}' in '{}': expected a comma-separated list of kernel, memcpy, memset, sync, nvtx (or all)",
           name, text);
    out |= bit;
    pos = comma + 1;
  }
  return out;
}

std::string format_activities(uint32_t activities) {
  std::string out;
  for (const auto& a : kActivityNames) {
    if (!(activities & a.bit)) continue;
    if (!out.empty()) out += ',';
    out += a.name;
  }
  return out;
}

void parse_capture_range(std::string_view text, CollectorOptions& options) {
  options.capture_name.clear();
  if (text.empty() || text == "none") {
    options.capture = CaptureRange::kNone;
  } else if (text == "cudaProfilerApi") {
    options.capture = CaptureRange::kCudaProfilerApi;
  } else if (text.starts_with("nvtx:") && text.size() > 5) {
    options.capture = CaptureRange::kNvtx;
    options.capture_name = std::string(text.substr(5));
  } else {
    fail("bad capture range '{}': expected nvtx:NAME or cudaProfilerApi", text);
  }
}

std::string format_capture_range(const CollectorOptions& options) {
  switch (options.capture) {
    case CaptureRange::kNvtx: {
      std::string out = "nvtx:";  // not "nvtx:" + name: GCC 12 -Wrestrict false positive
      out += options.capture_name;
      return out;
    }
    case CaptureRange::kCudaProfilerApi: return "cudaProfilerApi";
    case CaptureRange::kNone: break;
  }
  return "";
}

CollectorOptions parse_collector_options(const Environment& env) {
  CollectorOptions o;
  if (auto* v = find(env, "SCALESCOPE_RUN_DIR")) o.run_dir = *v;
  if (auto* v = find(env, "SCALESCOPE_API")) o.api = parse_api_mode(*v);
  if (auto* v = find(env, "SCALESCOPE_API_RECORDS"))
    o.api_records = parse_named(*v, "SCALESCOPE_API_RECORDS", parse_api_records);
  o.delay_s = parse_seconds(env, "SCALESCOPE_DELAY", 0);
  o.duration_s = parse_seconds(env, "SCALESCOPE_DURATION", 0);
  if (auto* v = find(env, "SCALESCOPE_CAPTURE_RANGE")) parse_capture_range(*v, o);
  o.nvml_hz = parse_seconds(env, "SCALESCOPE_NVML_HZ", 10);
  if (o.nvml_hz > 1000) fail("SCALESCOPE_NVML_HZ={} is above 1000 Hz", number(o.nvml_hz));
  o.host_hz = parse_seconds(env, "SCALESCOPE_HOST_HZ", 100);
  if (o.host_hz > 1000) fail("SCALESCOPE_HOST_HZ={} is above 1000 Hz", number(o.host_hz));
  o.host_stacks = parse_switch(env, "SCALESCOPE_HOST_STACKS", o.host_stacks);
  if (auto* v = find(env, "SCALESCOPE_BUFFER_MB")) {
    uint32_t mb = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), mb);
    if (ec != std::errc() || p != v->data() + v->size() || mb < 2 || mb > 65536)
      fail("SCALESCOPE_BUFFER_MB='{}' must be a whole number of MiB from 2 to 65536", *v);
    o.buffer_mb = mb;
  }
  o.discard = parse_switch(env, "SCALESCOPE_DISCARD", o.discard);
  o.detach = parse_switch(env, "SCALESCOPE_DETACH", o.detach);
  if (auto* v = find(env, "SCALESCOPE_ACTIVITIES"))
    o.activities = parse_named(*v, "SCALESCOPE_ACTIVITIES", parse_activities);
  o.full = parse_switch(env, "SCALESCOPE_FULL", o.full);
  if (auto* v = find(env, "SCALESCOPE_ITERATION_RANGE")) o.iteration_range = *v;
  o.skip_iterations = parse_count(env, "SCALESCOPE_SKIP_ITERATIONS", o.skip_iterations, 0);
  o.iterations = parse_count(env, "SCALESCOPE_ITERATIONS", o.iterations, 1);
  o.repeat_every = parse_count(env, "SCALESCOPE_REPEAT_EVERY", o.repeat_every, 0);
  o.windows_every_s = parse_seconds(env, "SCALESCOPE_WINDOWS_EVERY", 0);
  o.hang_after_s = parse_seconds(env, "SCALESCOPE_HANG_AFTER", 0);
  validate_sampling(o);
  return o;
}

void validate_sampling(const CollectorOptions& o) {
  if (o.repeat_every != 0 && o.repeat_every <= o.iterations)
    fail(
        "a window of {} iterations repeated every {} iterations leaves none untraced: the repeat must be 0 (once) "
        "or more than the window",
        o.iterations, o.repeat_every);
  if (o.iteration_range.empty()) fail("the iteration range name is empty");
  if (o.windows_every_s != 0 && o.windows_every_s < 1)
    fail("windows every {} s: the period must be at least 1 s (or 0: off)", number(o.windows_every_s));
  if (o.hang_after_s != 0 && o.hang_after_s < 1)
    fail("hang after {} s: the time must be at least 1 s (or 0: off)", number(o.hang_after_s));
}

Environment to_environment(const CollectorOptions& o) {
  Environment env;
  env["SCALESCOPE_RUN_DIR"] = o.run_dir;
  env["SCALESCOPE_API"] = std::string(to_string(o.api));
  env["SCALESCOPE_API_RECORDS"] = std::string(to_string(o.api_records));
  // Every option is set, defaults too: a value the user exported for an
  // earlier run must not leak into this one.
  env["SCALESCOPE_DELAY"] = number(o.delay_s);
  env["SCALESCOPE_DURATION"] = number(o.duration_s);
  env["SCALESCOPE_CAPTURE_RANGE"] = o.capture == CaptureRange::kNone ? "none" : format_capture_range(o);
  env["SCALESCOPE_NVML_HZ"] = number(o.nvml_hz);
  env["SCALESCOPE_HOST_HZ"] = number(o.host_hz);
  env["SCALESCOPE_BUFFER_MB"] = std::to_string(o.buffer_mb);
  env.emplace("SCALESCOPE_DISCARD", o.discard ? "1" : "0");
  env.emplace("SCALESCOPE_DETACH", o.detach ? "1" : "0");
  env["SCALESCOPE_ACTIVITIES"] = format_activities(o.activities);
  env.emplace("SCALESCOPE_FULL", o.full ? "1" : "0");
  env["SCALESCOPE_ITERATION_RANGE"] = o.iteration_range;
  env["SCALESCOPE_SKIP_ITERATIONS"] = std::to_string(o.skip_iterations);
  env["SCALESCOPE_ITERATIONS"] = std::to_string(o.iterations);
  env["SCALESCOPE_REPEAT_EVERY"] = std::to_string(o.repeat_every);
  env["SCALESCOPE_WINDOWS_EVERY"] = number(o.windows_every_s);
  env["SCALESCOPE_HANG_AFTER"] = number(o.hang_after_s);
  if (o.hang_after_s > 0) env["SCALESCOPE_NVTX_RECORDS"] = "hooks";  // NCCL's ranges reach the hang dump's ring
  return env;
}

bool is_default_api(trace::ApiDomain domain, std::string_view name) {
  // CUPTI names carry version suffixes ("cudaMemcpyAsync_v3020", "cuMemcpyHtoD_v2").
  static constexpr std::string_view kRuntime[] = {"cudaLaunch",
                                                  "cudaMemcpy",
                                                  "cudaMemset",
                                                  "cudaStreamSynchronize",
                                                  "cudaDeviceSynchronize",
                                                  "cudaEventSynchronize",
                                                  "cudaStreamWaitEvent",
                                                  "cudaMalloc",
                                                  "cudaFree",
                                                  "cudaHostAlloc",
                                                  "cudaGraphLaunch",
                                                  "cudaProfilerStart",
                                                  "cudaProfilerStop",
                                                  "cudaThreadSynchronize"};
  static constexpr std::string_view kDriver[] = {
      "cuLaunch",           "cuMemcpy",          "cuMemsetD",     "cuStreamSynchronize", "cuCtxSynchronize",
      "cuEventSynchronize", "cuStreamWaitEvent", "cuMemAlloc",    "cuMemFree",           "cuMemHostAlloc",
      "cuGraphLaunch",      "cuProfilerStart",   "cuProfilerStop"};
  // Prefixes on purpose: every allocation variant (cudaMallocAsync, cuMemAllocHost)
  // and every launch variant (cudaLaunchKernelExC, cuLaunchCooperativeKernel) matters.
  auto matches = [name](std::string_view prefix) { return name.starts_with(prefix); };
  if (domain == trace::ApiDomain::kRuntime) return std::ranges::any_of(kRuntime, matches);
  if (domain == trace::ApiDomain::kDriver) return std::ranges::any_of(kDriver, matches);
  return false;
}

}  // namespace scalescope::collect
