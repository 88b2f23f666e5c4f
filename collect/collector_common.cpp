#include "collect/collector_common.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "collect/sampler_common.hpp"

namespace scalescope::collect {

std::atomic<bool> g_in_child{false};

void warn(const char* format, ...) {
  char line[1024];
  int n = std::snprintf(line, sizeof(line), "scalescope: warning: ");
  va_list args;
  va_start(args, format);
  int m = std::vsnprintf(line + n, sizeof(line) - static_cast<size_t>(n) - 2, format, args);
  va_end(args);
  size_t len = std::min(sizeof(line) - 2, static_cast<size_t>(n) + static_cast<size_t>(std::max(m, 0)));
  line[len] = '\n';
  [[maybe_unused]] auto w = ::write(2, line, len + 1);  // one write: lines of ranks do not interleave
}

void* cupti_symbol(const char* name) {
  void* cupti = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_NOLOAD);
  if (!cupti) cupti = dlopen("libcupti.so", RTLD_LAZY | RTLD_NOLOAD);
  return cupti ? dlsym(cupti, name) : nullptr;
}

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "CUPTI error " + std::to_string(static_cast<int>(r));
  return s;
}

int64_t test_clock_offset_ns() {
  static const int64_t offset = [] {
    const char* v = std::getenv("SCALESCOPE_TEST_CLOCK_OFFSET_NS");
    return v && *v ? std::strtoll(v, nullptr, 10) : int64_t{0};
  }();
  return offset;
}

int64_t unix_now_ns() { return realtime_ns() + test_clock_offset_ns(); }

trace::Timestamp cupti_now() {
  uint64_t t = 0;
  if (cuptiGetTimestamp(&t) != CUPTI_SUCCESS) return 0;
  return static_cast<trace::Timestamp>(t);
}

uint32_t os_thread_id() {
  thread_local const uint32_t tid = static_cast<uint32_t>(::gettid());
  return tid;
}

bool nvtx_records_by_hooks() {
  static const bool hooks = [] {
    const char* v = std::getenv("SCALESCOPE_NVTX_RECORDS");
    if (!v || !*v || std::string_view(v) == "cupti") return false;
    if (std::string_view(v) == "hooks") return true;
    warn("SCALESCOPE_NVTX_RECORDS=%s: expected cupti or hooks; NVTX goes to CUPTI", v);
    return false;
  }();
  return hooks;
}

}  // namespace scalescope::collect
