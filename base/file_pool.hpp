#pragma once
// How many threads to give a list of input files, one file per task on the
// one thread pool (parallel_for.hpp, whose error behaviour is a plain loop's:
// the first failing file in list order is the one rethrown).
//
//   const unsigned threads = threads_for_files(files.size(), bytes_each);
//   parallel_for(files.size(), threads, [&](size_t i, unsigned) { traces[i] = import(files[i]); });

#include <cstddef>
#include <cstdint>

namespace scalescope::trace {

// Threads for `files` inputs that each need about `bytes_each` of memory while
// one thread works on them: at most the cores, and no more than the memory
// this process may still take allows (available_memory_bytes); at least 1.
unsigned threads_for_files(size_t files, uint64_t bytes_each);

}  // namespace scalescope::trace
