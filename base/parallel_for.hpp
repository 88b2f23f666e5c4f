#pragma once
// The one thread pool of every part (the run loader, the run
// analyzer, the C API and the MLPerf ingest each had their own loop, with
// three error policies). Work items are taken in index order by up to
// `threads` threads, the caller's among them.
//
// Error policy: the first error in index order wins, not the first in time,
// so a folder with two bad files names the same file on every run; once an
// item fails no new item starts, and the error is rethrown after every
// started item has finished. An item that must not stop the others (a log
// that ingest only notes) catches its own errors.
//
//   std::vector<RankAnalysis> out(files.size());
//   trace::parallel_for(files.size(), trace::worker_count(0, files.size(), 4),
//                       [&](size_t i, unsigned) { out[i] = analyze(files[i]); });

#include <cstddef>
#include <functional>

namespace scalescope::trace {

// Threads for `items` items: `requested`, or when 0 the hardware's threads
// capped at `max_auto` (0: no cap); at least 1, never more than the items.
unsigned worker_count(unsigned requested, size_t items, unsigned max_auto = 0);

// Calls work(i, worker) for each i in [0, count), worker in [0, threads) (a
// slot for per-thread state such as a parser). on_done(done, count) after
// each item that succeeded, one call at a time. Throws the error of the
// lowest failing index.
void parallel_for(size_t count, unsigned threads, const std::function<void(size_t index, unsigned worker)>& work,
                  const std::function<void(size_t done, size_t count)>& on_done = {});

}  // namespace scalescope::trace
