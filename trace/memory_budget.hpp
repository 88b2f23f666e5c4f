#pragma once
// How much memory this process may still take: the readers size their limits
// by it, so a hostile input is refused with a one-line error instead of
// growing until the kernel's OOM killer (or an rlimit's bad_alloc) ends us.

#include <cstdint>

namespace scalescope::trace {

// The least of: MemAvailable (/proc/meminfo), the address-space and data
// rlimits minus what the process already maps, and the cgroup v2 limit minus
// its usage. UINT64_MAX when nothing is known.
// Example: 512 MiB free and `ulimit -v 1048576` with 300 MiB mapped -> ~512 MiB.
uint64_t available_memory_bytes();

}  // namespace scalescope::trace
