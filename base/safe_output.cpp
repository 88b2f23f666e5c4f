// One place for the output rule of every writing command (safe_output.hpp).
// The signal handler may only call async-signal-safe functions: registered
// paths live in a fixed table of C strings published with atomics.

#include "base/safe_output.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>

#include <fmt/format.h>

#include "base/error.hpp"

namespace scalescope::trace {
namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxTemps = 256;
std::array<std::atomic<char*>, kMaxTemps> g_temps{};

void on_fatal_signal(int sig) {
  for (auto& slot : g_temps) {
    const char* p = slot.load();
    if (p && ::unlink(p) != 0) ::rmdir(p);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    // Keep a handler someone else installed (the sweep's stop handler), and
    // an ignored signal ignored (nohup).
    if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

// Is `inner` (which need not exist yet) `outer` or below it, at any depth?
// Symlinks in `inner`'s existing part are resolved first; the ancestors are
// then compared with `outer` by device and inode, so another spelling of the
// folder (a symlink, a bind mount's path, "a/../a") is still recognised.
bool is_within(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(inner, ec);
  fs::path resolved = fs::weakly_canonical(absolute, ec);
  if (ec) resolved = absolute.lexically_normal();
  for (fs::path p = resolved; !p.empty(); p = p.parent_path()) {
    if (same_file(p, outer)) return true;
    if (p == p.parent_path()) break;
  }
  return false;
}

}  // namespace

bool same_file(const fs::path& a, const fs::path& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void check_output(const fs::path& out, const std::vector<fs::path>& inputs, bool replace_existing) {
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(out, ec));
  for (const fs::path& in : inputs) {
    if (same_file(out, in))
      fail("{}: the output is the input {}; choose another -o (scalescope never writes over an input)", out.string(),
           in.string());
    // Nothing is written into an input folder, at any depth: a run
    // directory's traces, the folder a report reads, an MLPerf log tree.
    if (fs::is_directory(in, ec) && is_within(out, in))
      fail("{}: is inside the input folder {}; choose an -o outside it (scalescope never writes into an input)",
           out.string(), in.string());
    // A directory output replaced as a whole must not hold an input.
    if (exists && fs::is_directory(out, ec) && is_within(in, out))
      fail("{}: the output directory holds the input {}; choose another -o", out.string(), in.string());
  }
  if (exists && !replace_existing) fail("{}: already exists; pass --force to replace it", out.string());
}

fs::path temp_path_for(const fs::path& out) {
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  return dir / fmt::format(".{}.tmp-{}", out.filename().string(), ::getpid());
}

void register_temp(const fs::path& p) {
  install_handlers();  // each time: someone may have reset a handler since (cheap: three sigaction calls)
  char* copy = ::strdup(p.c_str());
  if (!copy) return;  // out of memory: the file is still removed on normal paths
  for (auto& slot : g_temps) {
    char* expected = nullptr;
    if (slot.compare_exchange_strong(expected, copy)) return;
  }
  std::free(copy);  // table full: only signal cleanup is lost
}

void unregister_temp(const fs::path& p) {
  for (auto& slot : g_temps) {
    char* cur = slot.load();
    if (cur && p.native() == cur && slot.compare_exchange_strong(cur, nullptr)) {
      std::free(cur);
      return;
    }
  }
}

TempPath::TempPath(fs::path p) : path_(std::move(p)) { register_temp(path_); }

TempPath::~TempPath() {
  if (done_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
  unregister_temp(path_);
}

void TempPath::commit_to(const fs::path& out) {
  std::error_code ec;
  fs::rename(path_, out, ec);
  if (ec) {
    std::error_code cleanup;  // not ec: its success would replace the reason in the message
    fs::remove_all(path_, cleanup);
    unregister_temp(path_);
    done_ = true;
    fail("{}: cannot write output: {}", out.string(), ec.message());
  }
  unregister_temp(path_);
  done_ = true;
}

}  // namespace scalescope::trace
