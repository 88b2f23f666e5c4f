#include "trace/memory_budget.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

namespace scalescope::trace {
namespace {

uint64_t read_u64(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::numeric_limits<uint64_t>::max();
  return std::strtoull(word.c_str(), nullptr, 10);
}

uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return std::numeric_limits<uint64_t>::max();
}

uint64_t mapped_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long pages = 0;
  const int n = std::fscanf(f, "%llu", &pages);
  std::fclose(f);
  return n == 1 ? pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace

uint64_t available_memory_bytes() {
  uint64_t avail = mem_available();
  const uint64_t mapped = mapped_bytes();
  for (int which : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit rl {};
    if (::getrlimit(which, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      avail = std::min<uint64_t>(avail, rl.rlim_cur > mapped ? rl.rlim_cur - mapped : 0);
  }
  // cgroup v2: the limit of our own group (containers, systemd slices, CI).
  const uint64_t max = read_u64("/sys/fs/cgroup/memory.max");
  if (max != std::numeric_limits<uint64_t>::max()) {
    const uint64_t cur = read_u64("/sys/fs/cgroup/memory.current");
    if (cur != std::numeric_limits<uint64_t>::max()) avail = std::min<uint64_t>(avail, max > cur ? max - cur : 0);
  }
  return avail;
}

}  // namespace scalescope::trace
