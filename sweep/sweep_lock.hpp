#pragma once
// Private to the sweep runner: one sweep at a time per results file, and who
// runs it. The lock is flock() on "<db>.lock" beside the database, held for the
// life of the sweep; the kernel drops it when the holder dies (even SIGKILL),
// so a stale lock file never blocks a later sweep. A job the dead sweep had just
// forked shares the descriptor until its exec or death: a lock whose recorded
// writer is gone is waited for (up to 3 s) instead of refused.

#include <filesystem>
#include <string>

namespace scalescope::sweep {

// This process as a sweep runner: pid, host and the process start time in
// clock ticks since boot (a reused pid has another start time).
struct Runner {
  long pid = 0;
  std::string host;
  unsigned long long start_ticks = 0;
  std::string to_text() const;                   // "pid=123 host=node1 start=456"
  static Runner parse(const std::string& text);  // pid 0 when not a runner text
  static Runner self();
  // Is this runner's process still alive (same pid and start time)? Only
  // answerable on the same host: false when the host differs.
  bool alive_here() const;
};

class SweepLock {
 public:
  // Takes the lock or throws Error: "X: another sweep is running on this
  // database (pid 123 on node1, started 2026-12-01T10:00:00Z); ...".
  explicit SweepLock(const std::filesystem::path& db);
  ~SweepLock();
  SweepLock(const SweepLock&) = delete;
  SweepLock& operator=(const SweepLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace scalescope::sweep
