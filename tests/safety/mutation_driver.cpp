// Mutation driver: runs a command of the scalescope CLI over mutants of seed
// inputs (bit flips, byte overwrites, truncations, insertions, deletions,
// splices) under a memory rlimit and a timeout, and fails when any run ends
// other than "exit 0" or "non-zero exit with a one-line error" (a signal, a
// hang, an internal error, a multi-line error). Bounded in time and memory so
// that it runs in CI; failing mutants are kept for replay.
//
//   mutation_driver --kind sstrace --seed a.sstrace --seed b.sstrace --mutants 200 --rng 1
//                   --ext .sstrace --work DIR -- scalescope stats {}
//
// A seed that is a directory (an MLLOG tree, a run directory) is copied and
// one file inside it is mutated. "{}" in the command is the mutant's path.
// Adding an input kind: one more add_mutation_test() in tests/safety/CMakeLists.txt.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Options {
  std::string kind = "input";
  std::vector<fs::path> seeds;
  int mutants = 100;
  uint64_t rng = 1;
  std::string ext;
  fs::path work = "mutants";
  double timeout_s = 10;
  uint64_t memory_mb = 1024;
  double budget_s = 60;  // stop early (counted) once this much wall time is spent
  std::vector<std::string> command;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "mutation_driver: " << why
            << "\nusage: mutation_driver --kind K --seed PATH... [--mutants N] [--rng SEED] [--ext .x] [--work DIR]"
               " [--timeout-s S] [--memory-mb M] [--budget-s S] -- command {} args\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  auto value = [&](const char* name) -> std::string {
    if (i + 1 >= argc) usage(std::string(name) + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      for (++i; i < argc; ++i) o.command.emplace_back(argv[i]);
      break;
    }
    if (a == "--kind") o.kind = value("--kind");
    else if (a == "--seed") o.seeds.emplace_back(value("--seed"));
    else if (a == "--mutants") o.mutants = std::stoi(value("--mutants"));
    else if (a == "--rng") o.rng = std::stoull(value("--rng"));
    else if (a == "--ext") o.ext = value("--ext");
    else if (a == "--work") o.work = value("--work");
    else if (a == "--timeout-s") o.timeout_s = std::stod(value("--timeout-s"));
    else if (a == "--memory-mb") o.memory_mb = std::stoull(value("--memory-mb"));
    else if (a == "--budget-s") o.budget_s = std::stod(value("--budget-s"));
    else usage("unknown option " + a);
  }
  if (o.seeds.empty()) usage("no --seed");
  if (o.command.empty()) usage("no command after --");
  return o;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

// One mutation of `s`, drawn from `rng`; `other` is a second seed for splices.
std::string mutate(std::string s, const std::string& other, std::mt19937_64& rng, std::string* what) {
  auto pick = [&](uint64_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  const int op = static_cast<int>(rng() % 7);
  if (s.empty()) s = "x";
  switch (op) {
    case 0: {  // 1-8 bit flips
      const int n = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < n; ++k) s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8));
      *what = "bitflip x" + std::to_string(n);
      break;
    }
    case 1: {  // truncation
      const size_t at = pick(s.size());
      s.resize(at);
      *what = "truncate at " + std::to_string(at);
      break;
    }
    case 2: {  // overwrite with an interesting value (sizes, counts, lengths)
      static const uint64_t kValues[] = {
          0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x100000000ull, 0x7FFFFFFFFFFFFFFFull, ~0ull};
      const uint64_t v = kValues[rng() % (sizeof kValues / sizeof kValues[0])];
      const size_t width = size_t{1} << (rng() % 4);
      const size_t at = pick(s.size());
      for (size_t k = 0; k < width && at + k < s.size(); ++k) s[at + k] = static_cast<char>(v >> (8 * k));
      *what = "overwrite " + std::to_string(width) + " bytes at " + std::to_string(at);
      break;
    }
    case 3: {  // insert random bytes
      const size_t at = pick(s.size() + 1), n = 1 + pick(64);
      std::string ins(n, '\0');
      for (char& c : ins) c = static_cast<char>(rng());
      s.insert(at, ins);
      *what = "insert " + std::to_string(n) + " at " + std::to_string(at);
      break;
    }
    case 4: {  // delete a range
      const size_t at = pick(s.size()), n = 1 + pick(std::min<size_t>(s.size() - at, 4096));
      s.erase(at, n);
      *what = "delete " + std::to_string(n) + " at " + std::to_string(at);
      break;
    }
    case 5: {  // splice: a range of another seed (or this one) over this one
      const std::string& src = other.empty() ? s : other;
      const size_t from = pick(src.size()), n = 1 + pick(std::min<size_t>(src.size() - from, 4096));
      const size_t at = pick(s.size());
      s.replace(at, std::min(n, s.size() - at), src.substr(from, n));
      *what = "splice " + std::to_string(n) + " at " + std::to_string(at);
      break;
    }
    default: {  // duplicate a range (repeated chunks, repeated events)
      const size_t at = pick(s.size()), n = 1 + pick(std::min<size_t>(s.size() - at, 4096));
      s.insert(at, s.substr(at, n));
      *what = "duplicate " + std::to_string(n) + " at " + std::to_string(at);
      break;
    }
  }
  return s;
}

struct Outcome {
  bool ok = false;
  std::string why;
};

// Runs the command with the rlimit and timeout; judges its ending.
Outcome run(const Options& o, const fs::path& mutant) {
  std::vector<std::string> args;
  for (const auto& a : o.command) {
    std::string x = a;
    for (size_t p; (p = x.find("{}")) != std::string::npos;) x.replace(p, 2, mutant.string());
    args.push_back(x);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) return {false, "pipe failed"};
  const pid_t pid = ::fork();
  if (pid == 0) {
    const rlim_t bytes = static_cast<rlim_t>(o.memory_mb) << 20;
    struct rlimit rl {
      bytes, bytes
    };
    ::setrlimit(RLIMIT_AS, &rl);
    struct rlimit core {
      0, 0
    };
    ::setrlimit(RLIMIT_CORE, &core);
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(err[1], 2);
    ::setenv("NO_COLOR", "1", 1);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(err[1]);
  std::string stderr_text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.timeout_s);
  bool timed_out = false;
  int status = 0;
  ::fcntl(err[0], F_SETFL, O_NONBLOCK);
  for (;;) {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(err[0], buf, sizeof buf)) > 0)
      if (stderr_text.size() < (1u << 20)) stderr_text.append(buf, static_cast<size_t>(n));
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    struct pollfd pfd {
      err[0], POLLIN, 0
    };
    ::poll(&pfd, 1, 20);
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;) stderr_text.append(buf, static_cast<size_t>(n));
  ::close(err[0]);
  if (timed_out) return {false, "no result within " + std::to_string(o.timeout_s) + " s (hang?)"};
  if (WIFSIGNALED(status)) return {false, std::string("killed by signal ") + strsignal(WTERMSIG(status))};
  const int rc = WEXITSTATUS(status);
  if (rc == 0) return {true, ""};
  // A refusal: exactly one line, "scalescope: error: ..." (warnings may precede it).
  std::vector<std::string> lines;
  for (size_t p = 0; p < stderr_text.size();) {
    const size_t e = stderr_text.find('\n', p);
    lines.push_back(stderr_text.substr(p, e == std::string::npos ? std::string::npos : e - p));
    p = e == std::string::npos ? stderr_text.size() : e + 1;
  }
  size_t errors = 0, others = 0;
  for (const auto& l : lines) {
    if (l.rfind("scalescope: error: ", 0) == 0) ++errors;
    else if (l.rfind("scalescope: warning: ", 0) != 0 && !l.empty()) ++others;
  }
  if (rc == 1 && errors == 1 && others == 0) return {true, ""};
  return {false, "exit " + std::to_string(rc) + " with stderr: " + stderr_text.substr(0, 400)};
}

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  fs::remove_all(o.work);
  fs::create_directories(o.work / "failures");
  std::mt19937_64 rng(o.rng);
  std::vector<std::string> seed_bytes;  // for file seeds; empty for directories
  for (const auto& s : o.seeds) {
    if (!fs::exists(s)) usage("no seed " + s.string());
    seed_bytes.push_back(fs::is_directory(s) ? std::string() : read_all(s));
  }
  const auto t0 = std::chrono::steady_clock::now();
  int ran = 0, failed = 0;
  for (int m = 0; m < o.mutants; ++m) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > o.budget_s) break;
    const size_t k = static_cast<size_t>(rng() % o.seeds.size());
    const std::string& other = seed_bytes[static_cast<size_t>(rng() % seed_bytes.size())];
    std::string what;
    fs::path mutant;
    if (fs::is_directory(o.seeds[k])) {
      mutant = o.work / ("mutant-" + std::to_string(m) + o.ext);
      fs::remove_all(mutant);
      fs::copy(o.seeds[k], mutant, fs::copy_options::recursive);
      const auto files = files_under(mutant);
      if (files.empty()) usage("seed directory without files: " + o.seeds[k].string());
      const fs::path& f = files[static_cast<size_t>(rng() % files.size())];
      write_all(f, mutate(read_all(f), other, rng, &what));
      what = fs::relative(f, mutant).string() + ": " + what;
    } else {
      mutant = o.work / ("mutant-" + std::to_string(m) + o.ext);
      write_all(mutant, mutate(seed_bytes[k], other, rng, &what));
    }
    const Outcome r = run(o, mutant);
    ++ran;
    if (r.ok) {
      fs::remove_all(mutant);
      continue;
    }
    ++failed;
    const fs::path keep = o.work / "failures" / mutant.filename();
    fs::rename(mutant, keep);
    std::cerr << o.kind << " mutant " << m << " (" << o.seeds[k].filename().string() << ", " << what << "): " << r.why
              << "\n  replay: kept as " << keep.string() << "\n";
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << o.kind << ": " << ran << " mutants in " << wall << " s, " << failed << " failed (rng " << o.rng
            << ", memory limit " << o.memory_mb << " MiB, timeout " << o.timeout_s << " s)\n";
  if (ran == 0) return 1;
  return failed == 0 ? 0 : 1;
}
