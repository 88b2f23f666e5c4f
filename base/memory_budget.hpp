#pragma once
// How much memory this process may still take: the readers size their limits
// by it, so a hostile input is refused with a one-line error instead of
// growing until the kernel's OOM killer (or an rlimit's bad_alloc) ends us.

#include <cstddef>
#include <cstdint>

namespace scalescope::trace {

// The least of: MemAvailable (/proc/meminfo), the address-space and data
// rlimits minus what the process already maps, and the cgroup v2 limit minus
// its usage. UINT64_MAX when nothing is known.
// Example: 512 MiB free and `ulimit -v 1048576` with 300 MiB mapped -> ~512 MiB.
uint64_t available_memory_bytes();

// Asks for transparent huge pages over a large buffer that is about to be
// written (after reserve(), before the first touch). On these VMs the first
// write to a 4 KiB page costs ~15 us; one 2 MiB page replaces 512 such faults.
// Advice only: a no-op for buffers under 2 MiB, or where THP is "never".
// Example: v.reserve(n); advise_huge_pages(v.data(), v.capacity() * sizeof v[0]);
void advise_huge_pages(const void* p, size_t bytes);

// Makes glibc malloc keep freed memory for reuse instead of handing it back
// and mapping fresh pages for the next large buffer (call once, first thing in
// main). bench/RESULTS.md, "The allocator: fresh pages", has the figures.
void tune_allocator();

}  // namespace scalescope::trace
