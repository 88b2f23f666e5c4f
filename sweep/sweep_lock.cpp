#include "sweep/sweep_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "sweep/utc_time.hpp"
#include "base/error.hpp"

namespace scalescope::sweep {
namespace {

// Field 22 of /proc/<pid>/stat (after the parenthesised command name, which may hold spaces).
unsigned long long start_ticks_of(long pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  return 0;
}

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

std::string Runner::to_text() const { return fmt::format("pid={} host={} start={}", pid, host, start_ticks); }

Runner Runner::parse(const std::string& text) {
  Runner r;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    if (word.starts_with("pid=")) r.pid = std::strtol(word.c_str() + 4, nullptr, 10);
    if (word.starts_with("host=")) r.host = word.substr(5);
    if (word.starts_with("start=")) r.start_ticks = std::strtoull(word.c_str() + 6, nullptr, 10);
  }
  return r;
}

Runner Runner::self() {
  Runner r;
  r.pid = ::getpid();
  r.host = host_name();
  r.start_ticks = start_ticks_of(r.pid);
  return r;
}

bool Runner::alive_here() const {
  if (pid <= 0 || host != host_name()) return false;
  return start_ticks_of(pid) == start_ticks && start_ticks != 0;
}

namespace {

// The holder named in the lock file's text "pid N on HOST, started ...", as a
// Runner without start time; pid 0 when the text is not of that form.
Runner holder_of(const std::string& text) {
  Runner r;
  std::istringstream in(text);
  std::string pid_word, on_word;
  long pid = 0;
  if (in >> pid_word >> pid >> on_word >> r.host && pid_word == "pid" && on_word == "on") {
    if (!r.host.empty() && r.host.back() == ',') r.host.pop_back();
    r.pid = pid;
  }
  return r;
}

// Is the process that wrote the lock text gone? Only answerable on this host.
bool holder_gone(const std::string& text) {
  const Runner h = holder_of(text);
  if (h.pid <= 0 || h.host != host_name()) return false;
  return ::kill(static_cast<pid_t>(h.pid), 0) != 0 && errno == ESRCH;
}

std::string read_holder(int fd) {
  char buf[512] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("unknown process");
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
  return holder;
}

}  // namespace

SweepLock::SweepLock(const std::filesystem::path& db) {
  std::filesystem::path path = db;
  path += ".lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("{}: cannot create the lock file {} ({})", db.string(), path.string(), std::strerror(errno));
  // A sweep killed hard can leave its lock held for a moment after it is gone:
  // a job or watchdog it had just forked shares the descriptor until its exec,
  // close or death. So a lock whose writer is dead is waited for (up to 3 s),
  // while a live holder is refused at once.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = read_holder(fd_);
    if (err == EWOULDBLOCK && holder_gone(holder) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) fail("{}: cannot lock {} ({})", db.string(), path.string(), std::strerror(err));
    fail("{}: another sweep is running on this database ({}); wait for it to end or write to another -o file",
         db.string(), holder);
  }
  const Runner me = Runner::self();
  const std::string text = fmt::format("pid {} on {}, started {}\n", me.pid, me.host, utc_now_iso());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    // The lock holds without its text; the second sweep then names no holder.
  }
}

SweepLock::~SweepLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace scalescope::sweep
