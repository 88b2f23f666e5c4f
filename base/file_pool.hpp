#pragma once
// A few threads over a list of input files, one file per task (on the one
// thread pool, parallel_for.hpp), with the
// error behaviour of a plain loop over them: the exception of the first
// failing file in list order is the one rethrown, whatever thread saw it
// first, so a run's error names the same file on every machine.
//
//   const unsigned threads = threads_for_files(files.size(), bytes_each);
//   for_each_file(files.size(), threads, [&](size_t i) { traces[i] = import(files[i]); });

#include <cstddef>
#include <cstdint>
#include <functional>

namespace scalescope::trace {

// Threads for `files` inputs that each need about `bytes_each` of memory while
// one thread works on them: at most the cores, and no more than the memory
// this process may still take allows (available_memory_bytes); at least 1.
unsigned threads_for_files(size_t files, uint64_t bytes_each);

// Calls work(i) for every i in [0, n) on `threads` threads (the caller's
// included). When some work(i) throws, indices above the smallest failing one
// are no longer started, every smaller one still runs, and the smallest
// failing index's exception is rethrown once all threads are done.
void for_each_file(size_t n, unsigned threads, const std::function<void(size_t)>& work);

}  // namespace scalescope::trace
