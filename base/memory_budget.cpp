#include "base/memory_budget.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
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

void advise_huge_pages(const void* p, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < kHuge) return;
  // Outward to 2 MiB boundaries, as glibc's own hugetlb tunable does: a large
  // block sits 16 bytes into its (2 MiB-aligned) mapping, so rounding inward
  // would lose its first huge page. Parts of the range that are not mapped
  // make madvise return ENOMEM after advising the rest; advice, so ignored.
  const auto begin = reinterpret_cast<uintptr_t>(p) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes + kHuge - 1) & ~(kHuge - 1);
  (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

void tune_allocator() {
#ifdef __GLIBC__
  // glibc gives every block above M_MMAP_THRESHOLD (128 KiB, rising to at most
  // 32 MiB as blocks are freed) its own mapping and unmaps it on free, and
  // gives heap memory back above M_TRIM_THRESHOLD: each trace, chunk buffer
  // and analysis vector then starts on fresh pages, ~15 us per 4 KiB page on
  // these VMs. Fixing the threshold at its maximum and not trimming keeps
  // freed memory for the next rank or analysis. Blocks above 32 MiB (the
  // columns of a multi-million-event trace) still get their own mapping; the
  // reader and the analyses advise huge pages for those (advise_huge_pages).
  (void)::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  (void)::mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace scalescope::trace
