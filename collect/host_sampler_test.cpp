#include "collect/host_sampler.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

namespace scalescope::collect {
namespace {

namespace fs = std::filesystem;
using trace::ProcessRole;
using trace::ThreadState;

// A fake /proc tree: <root>/<pid>/task/<tid>/{stat,schedstat,status,children}.
class FakeProc {
 public:
  FakeProc() {
    root_ = fs::temp_directory_path() / ("ss-fakeproc-" + std::to_string(getpid()) + "-" + std::to_string(++serial_));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeProc() { fs::remove_all(root_); }
  const fs::path& root() const { return root_; }

  struct T {
    char state = 'S';
    uint32_t ppid = 1;
    uint64_t utime = 0, stime = 0;
    int cpu = 0;
    uint64_t run_ns = 0, wait_ns = 0;
    uint64_t vol = 0, invol = 0;
    std::string comm = "python";
  };
  void set(uint32_t pid, uint32_t tid, const T& t, bool schedstat = true, bool children = true) {
    const fs::path d = dir(pid, tid);
    fs::create_directories(d);
    std::string stat = std::to_string(tid) + " (" + t.comm + ") " + t.state;
    for (int field = 4; field <= 52; ++field) {
      uint64_t v = 0;
      if (field == 4) v = t.ppid;
      if (field == 14) v = t.utime;
      if (field == 15) v = t.stime;
      if (field == 39) v = uint64_t(t.cpu);
      stat += " " + std::to_string(v);
    }
    write(d / "stat", stat + "\n");
    if (schedstat) write(d / "schedstat", std::to_string(t.run_ns) + " " + std::to_string(t.wait_ns) + " 7\n");
    write(d / "status", "Name:\t" + t.comm + "\nState:\tS (sleeping)\nTgid:\t" + std::to_string(pid) +
                            "\nvoluntary_ctxt_switches:\t" + std::to_string(t.vol) + "\nnonvoluntary_ctxt_switches:\t" +
                            std::to_string(t.invol) + "\n");
    if (children && !fs::exists(d / "children")) write(d / "children", "");
  }
  void children(uint32_t pid, uint32_t tid, const std::string& list) { write(dir(pid, tid) / "children", list); }
  void remove_thread(uint32_t pid, uint32_t tid) { fs::remove_all(dir(pid, tid)); }
  void remove_process(uint32_t pid) { fs::remove_all(root_ / std::to_string(pid)); }
  // The thread is still listed but its files read empty: it exited between
  // the listing and the read (procfs then answers ESRCH or nothing).
  void vanish_mid_read(uint32_t pid, uint32_t tid) { write(dir(pid, tid) / "stat", ""); }
  // Process-level stat (the scan fallback reads <pid>/stat).
  void process_stat(uint32_t pid, uint32_t ppid) {
    write(root_ / std::to_string(pid) / "stat",
          std::to_string(pid) + " (p) S " + std::to_string(ppid) + " 0 0 0 0 0 0 0 0 0 0 0\n");
  }

 private:
  fs::path dir(uint32_t pid, uint32_t tid) const { return root_ / std::to_string(pid) / "task" / std::to_string(tid); }
  static void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::trunc) << text; }
  fs::path root_;
  static inline int serial_ = 0;
};

struct Sampled {
  trace::Trace t;
  // Last thread row per (pid, tid, start): readers keep the last one.
  std::map<uint32_t, trace::HostThreadRecord> threads() const {
    std::map<uint32_t, trace::HostThreadRecord> out;
    for (size_t i = 0; i < t.host_threads.size(); ++i) out[t.host_threads.tid[i]] = t.host_threads.row(i);
    return out;
  }
  std::vector<trace::HostSampleRecord> of(uint32_t tid) const {
    std::vector<trace::HostSampleRecord> out;
    for (size_t i = 0; i < t.host_samples.size(); ++i)
      if (t.host_samples.tid[i] == tid) out.push_back(t.host_samples.row(i));
    return out;
  }
  std::string name(const trace::HostThreadRecord& r) const { return std::string(t.strings.view(r.name)); }
};

std::unique_ptr<HostSampler> make(const FakeProc& fp, uint32_t pid, trace::Timestamp* clock,
                                  HostSamplerOptions o = {}) {
  o.proc_root = fp.root().string();
  o.pid = pid;
  std::string err;
  auto s = HostSampler::create(
      o, [clock] { return *clock; }, &err);
  EXPECT_TRUE(s) << err;
  return s;
}

TEST(HostSamplerParse, StatLinesIncludingHostileNames) {
  ProcStat st;
  // Fields 3.. of a stat line; field 39 (the CPU) is index 36.
  auto line_of = [](const std::string& head, std::vector<std::string> fields) {
    std::string s = head;
    for (const auto& f : fields) s += " " + f;
    return s;
  };
  std::vector<std::string> f(50, "0");
  f[0] = "R";
  f[1] = "100";   // ppid
  f[5] = "-1";    // tpgid
  f[11] = "250";  // utime
  f[12] = "75";   // stime
  f[35] = "17";   // exit signal
  f[36] = "13";   // processor
  const std::string l1 = line_of("4242 (pt_main_thread)", f) + "\n";
  ASSERT_TRUE(parse_proc_stat(l1, &st));
  EXPECT_EQ(st.state, 'R');
  EXPECT_EQ(st.ppid, 100u);
  EXPECT_EQ(st.utime_ticks, 250u);
  EXPECT_EQ(st.stime_ticks, 75u);
  EXPECT_EQ(st.cpu, 13);
  EXPECT_EQ(st.comm, "pt_main_thread");
  // A name with ") " and spaces: the last ')' ends it.
  f[0] = "D";
  f[36] = "2";
  const std::string l2 = line_of("7 (a) b (c)", f);
  ASSERT_TRUE(parse_proc_stat(l2, &st));
  EXPECT_EQ(st.comm, "a) b (c");
  EXPECT_EQ(st.state, 'D');
  EXPECT_EQ(st.cpu, 2);
  // Short line (no field 39): the CPU is unknown, the rest parses.
  ASSERT_TRUE(parse_proc_stat("7 (x) S 1 0 0 0 0 0 0 0 0 0 3 4", &st));
  EXPECT_EQ(st.cpu, -1);
  EXPECT_EQ(st.utime_ticks, 3u);
  EXPECT_FALSE(parse_proc_stat("", &st));               // the thread vanished
  EXPECT_FALSE(parse_proc_stat("7 (x) S 1 0 0", &st));  // no utime/stime
  EXPECT_FALSE(parse_proc_stat("garbage", &st));
  // This process's own line.
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  ASSERT_TRUE(parse_proc_stat(line, &st));
  EXPECT_EQ(st.state, 'R');
  EXPECT_GE(st.cpu, 0);
}

TEST(HostSamplerParse, SchedstatStatusChildren) {
  uint64_t a = 0, b = 0;
  ASSERT_TRUE(parse_schedstat("123456789 2000 55\n", &a, &b));
  EXPECT_EQ(a, 123456789u);
  EXPECT_EQ(b, 2000u);
  EXPECT_FALSE(parse_schedstat("", &a, &b));
  EXPECT_FALSE(parse_schedstat("12", &a, &b));
  ASSERT_TRUE(
      parse_status_switches("Name:\tx\nvoluntary_ctxt_switches:\t17\nnonvoluntary_ctxt_switches:\t4\n", &a, &b));
  EXPECT_EQ(a, 17u);
  EXPECT_EQ(b, 4u);
  EXPECT_FALSE(parse_status_switches("Name:\tx\nnonvoluntary_ctxt_switches:\t4\n", &a, &b));  // voluntary missing
  std::vector<uint32_t> kids;
  parse_children("811 812 x 0 813\n", kids);
  EXPECT_EQ(kids, (std::vector<uint32_t>{811, 812, 813}));
}

TEST(HostSampler, EveryStateAndTheDeltas) {
  FakeProc fp;
  const std::string letters = "RSDTtZXIW";
  const std::vector<ThreadState> want = {ThreadState::kRunning, ThreadState::kSleeping, ThreadState::kDiskWait,
                                         ThreadState::kStopped, ThreadState::kStopped,  ThreadState::kZombie,
                                         ThreadState::kZombie,  ThreadState::kIdle,     ThreadState::kOther};
  for (size_t i = 0; i < letters.size(); ++i) {
    FakeProc::T t;
    t.state = letters[i];
    t.cpu = int(i);
    t.run_ns = 1000 * (i + 1);
    t.comm = "t" + std::to_string(i);
    fp.set(500, 500 + uint32_t(i), t);
  }
  trace::Timestamp now = 1000;
  HostSamplerOptions o;
  o.switches_every = 1;
  auto s = make(fp, 500, &now, o);
  EXPECT_EQ(s->method(), "procfs+schedstat");
  EXPECT_EQ(s->discovery(), "children");
  s->sample_once();
  // Second sample: the main thread ran 3 ms more, waited 1 ms, switched.
  FakeProc::T main;
  main.state = 'R';
  main.cpu = 5;
  main.run_ns = 1000 + 3000000;
  main.wait_ns = 1000000;
  main.vol = 4;
  main.invol = 2;
  main.comm = "t0";
  fp.set(500, 500, main);
  now = 2000;
  s->sample_once();
  Sampled out;
  s->drain(out.t, out.t.strings);
  for (size_t i = 0; i < letters.size(); ++i) {
    const auto rows = out.of(500 + uint32_t(i));
    ASSERT_EQ(rows.size(), 2u) << letters[i];
    EXPECT_EQ(rows[0].state, want[i]) << letters[i];
    EXPECT_EQ(rows[0].cpu, int(i));
    EXPECT_EQ(rows[0].cpu_ns, 0u);  // already there at the first sample: a baseline
  }
  const auto m = out.of(500);
  EXPECT_EQ(m[1].time, 2000);
  EXPECT_EQ(m[1].cpu, 5);
  EXPECT_EQ(m[1].cpu_ns, 3000000u);
  EXPECT_EQ(m[1].run_wait_ns, 1000000u);
  EXPECT_EQ(m[1].voluntary_switches, 4u);
  EXPECT_EQ(m[1].involuntary_switches, 2u);
  const auto th = out.threads();
  ASSERT_EQ(th.size(), letters.size());
  EXPECT_EQ(th.at(500).is_main, 1);
  EXPECT_EQ(th.at(501).is_main, 0);
  EXPECT_EQ(th.at(500).role, ProcessRole::kTraced);
  EXPECT_EQ(out.name(th.at(503)), "t3");
  EXPECT_EQ(th.at(500).start, 1000);
  // Rows are written when a thread is first seen; the last sighting comes when it ends.
  s->finish_threads();
  s->drain(out.t, out.t.strings);
  EXPECT_EQ(out.threads().at(500).end, 2000);
}

TEST(HostSampler, WithoutSchedstatUsesClockTicks) {
  FakeProc fp;
  FakeProc::T t;
  t.utime = 10;
  fp.set(600, 600, t, /*schedstat=*/false);
  trace::Timestamp now = 1;
  auto s = make(fp, 600, &now);
  EXPECT_EQ(s->method(), "procfs");
  s->sample_once();
  t.utime = 13;
  t.stime = 2;
  fp.set(600, 600, t, false);
  s->sample_once();
  Sampled out;
  s->drain(out.t, out.t.strings);
  const auto rows = out.of(600);
  ASSERT_EQ(rows.size(), 2u);
  const uint64_t tick_ns = 1000000000ull / uint64_t(sysconf(_SC_CLK_TCK));
  EXPECT_EQ(rows[1].cpu_ns, 5 * tick_ns);
  EXPECT_EQ(rows[1].run_wait_ns, 0u);
}

// DataLoader workers: child processes that start and end while the sampler
// runs, found through the children files, sampled with their deltas since
// birth, and ended when they go; threads appear and vanish too.
TEST(HostSampler, WorkersStartAndEndDuringTheWindow) {
  FakeProc fp;
  FakeProc::T main;
  main.state = 'R';
  fp.set(700, 700, main);
  FakeProc::T pin;
  pin.comm = "pt_pin_memory";
  fp.set(700, 701, pin);
  trace::Timestamp now = 100;
  HostSamplerOptions o;
  o.discover_every = 2;
  o.switches_every = 2;  // ticks 0, 2, 4
  auto s = make(fp, 700, &now, o);
  s->sample_once();  // tick 0: discovery, no workers yet
  // A worker (two threads) and a grandchild start.
  FakeProc::T w;
  w.ppid = 700;
  w.state = 'R';
  w.run_ns = 5000000;  // 5 ms since it was born
  w.vol = 3;
  w.comm = "pt_data_worker";
  fp.set(811, 811, w);
  FakeProc::T w2 = w;
  w2.state = 'S';
  w2.run_ns = 1000;
  fp.set(811, 812, w2);
  FakeProc::T g = w;
  g.ppid = 811;
  g.comm = "grandchild";
  fp.set(900, 900, g);
  fp.children(700, 700, "811\n");
  fp.children(811, 811, "900");
  // A new thread in the traced process.
  FakeProc::T late;
  late.run_ns = 7000;
  late.comm = "late";
  fp.set(700, 702, late);
  now = 200;
  s->sample_once();  // tick 1: no discovery (every 2): the workers are not sampled yet
  now = 300;
  s->sample_once();  // tick 2: discovered and sampled
  main.vol = 5;      // the main thread blocks 5 times between ticks 2 and 3
  fp.set(700, 700, main);
  now = 400;
  s->sample_once();
  // The worker's second thread and then the whole worker end; the grandchild ends.
  fp.remove_thread(811, 812);
  now = 500;
  s->sample_once();
  fp.remove_process(811);
  fp.remove_process(900);
  fp.children(700, 700, "");
  now = 600;
  s->sample_once();
  Sampled out;
  s->drain(out.t, out.t.strings);
  const auto th = out.threads();
  ASSERT_TRUE(th.count(811));
  EXPECT_EQ(th.at(811).role, ProcessRole::kDescendant);
  EXPECT_EQ(th.at(811).parent_pid, 700u);
  EXPECT_EQ(th.at(811).is_main, 1);
  EXPECT_EQ(out.name(th.at(811)), "pt_data_worker");
  EXPECT_EQ(th.at(811).start, 300);
  EXPECT_EQ(th.at(811).end, 500);  // last seen before it ended
  EXPECT_EQ(th.at(812).end, 400);
  EXPECT_EQ(th.at(900).role, ProcessRole::kDescendant);
  EXPECT_EQ(th.at(900).parent_pid, 811u);
  EXPECT_EQ(out.name(th.at(701)), "pt_pin_memory");
  const auto ws = out.of(811);
  ASSERT_EQ(ws.size(), 3u);  // 300, 400, 500
  EXPECT_EQ(ws[0].time, 300);
  EXPECT_EQ(ws[0].cpu_ns, 5000000u);  // born after the sampler started: everything since birth
  EXPECT_EQ(ws[0].voluntary_switches, 3u);
  EXPECT_EQ(ws[0].state, ThreadState::kRunning);
  EXPECT_EQ(ws[1].cpu_ns, 0u);
  // Context switches are read every 2nd sample: the main thread's 5 show at
  // tick 4 (time 500), not at tick 3.
  const auto ms = out.of(700);
  ASSERT_EQ(ms.size(), 6u);
  EXPECT_EQ(ms[3].voluntary_switches, 0u);
  EXPECT_EQ(ms[4].voluntary_switches, 5u);
  EXPECT_EQ(out.of(812).size(), 2u);
  // The late thread of the traced process: born after the first sample.
  const auto ls = out.of(702);
  ASSERT_FALSE(ls.empty());
  EXPECT_EQ(ls[0].time, 200);
  EXPECT_EQ(ls[0].cpu_ns, 7000u);
  EXPECT_EQ(out.of(700).size(), 6u);
  EXPECT_EQ(s->processes_seen(), 3u);
  EXPECT_EQ(s->threads_seen(), 6u);
  // After the worker ended, nothing of it is sampled any more.
  for (size_t i = 0; i < out.t.host_samples.size(); ++i)
    if (out.t.host_samples.time[i] == 600) {
      EXPECT_EQ(out.t.host_samples.pid[i], 700u);
    }
}

TEST(HostSampler, ThreadVanishingMidReadEndsWithoutASample) {
  FakeProc fp;
  fp.set(720, 720, {});
  fp.set(720, 721, {});
  trace::Timestamp now = 10;
  auto s = make(fp, 720, &now);
  s->sample_once();
  fp.vanish_mid_read(720, 721);  // listed, but its stat reads empty
  now = 20;
  s->sample_once();
  Sampled out;
  s->drain(out.t, out.t.strings);
  EXPECT_EQ(out.of(721).size(), 1u);
  EXPECT_EQ(out.of(720).size(), 2u);
  EXPECT_EQ(out.threads().at(721).end, 10);
  // The traced process itself disappearing (a fake tree only) samples nothing, no crash.
  fp.remove_process(720);
  now = 30;
  s->sample_once();
  Sampled after;
  s->drain(after.t, after.t.strings);
  EXPECT_EQ(after.t.host_samples.size(), 0u);
}

TEST(HostSampler, DescendantsWithTheirOwnCollectorAreLeftToIt) {
  FakeProc fp;
  fp.set(730, 730, {});
  FakeProc::T r;
  r.ppid = 730;
  fp.set(731, 731, r);  // a rank under the agent: traced by its own collector
  FakeProc::T w;
  w.ppid = 731;
  fp.set(732, 732, w);  // that rank's worker
  fp.children(730, 730, "731");
  fp.children(731, 731, "732");
  trace::Timestamp now = 1;
  HostSamplerOptions o;
  o.traced_elsewhere = [](uint32_t pid) { return pid == 731; };
  o.discover_every = 1;
  auto s = make(fp, 730, &now, o);
  s->sample_once();
  s->sample_once();
  Sampled out;
  s->drain(out.t, out.t.strings);
  EXPECT_EQ(out.of(731).size(), 0u);
  EXPECT_EQ(out.of(730).size(), 2u);
  // 732 was found through 731 before 731 was excluded at the end of the
  // first discovery; its own collector's rank would not see it (it is that
  // rank's child, not ours), so it stays here.
  EXPECT_EQ(out.of(732).size(), 2u);
}

TEST(HostSampler, ScanFindsDescendantsWithoutChildrenFiles) {
  FakeProc fp;
  fp.set(740, 740, {}, true, /*children=*/false);
  fp.process_stat(740, 1);
  trace::Timestamp now = 1;
  HostSamplerOptions o;
  o.discover_every = 1;
  auto s = make(fp, 740, &now, o);
  EXPECT_EQ(s->discovery(), "scan");
  s->sample_once();
  FakeProc::T w;
  w.ppid = 740;
  fp.set(741, 741, w, true, false);
  fp.process_stat(741, 740);
  FakeProc::T g;
  g.ppid = 741;
  fp.set(742, 742, g, true, false);
  fp.process_stat(742, 741);
  FakeProc::T other;
  fp.set(99, 99, other, true, false);  // not ours
  fp.process_stat(99, 1);
  now = 2;
  s->sample_once();
  Sampled out;
  s->drain(out.t, out.t.strings);
  EXPECT_EQ(out.of(741).size(), 1u);
  EXPECT_EQ(out.of(742).size(), 1u);
  EXPECT_EQ(out.of(99).size(), 0u);
  EXPECT_EQ(out.threads().at(742).parent_pid, 741u);
}

TEST(HostSampler, KeepsFewerDescriptorsThanItsBudget) {
  FakeProc fp;
  for (uint32_t i = 0; i < 20; ++i) fp.set(750, 750 + i, {});
  trace::Timestamp now = 1;
  HostSamplerOptions o;
  o.max_open_files = 4;
  auto s = make(fp, 750, &now, o);
  const auto fds_before = std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator());
  s->sample_once();
  s->sample_once();
  const auto fds_after = std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator());
  EXPECT_LE(fds_after - fds_before, 4 + 1);  // the budget + the task directory
  Sampled out;
  s->drain(out.t, out.t.strings);
  EXPECT_EQ(out.t.host_samples.size(), 40u);
}

// The real /proc: this process's busy thread runs, a forked child (a
// DataLoader worker's shape) is found, sampled and seen to end.
TEST(HostSampler, RealProcFindsABusyThreadAndAForkedChild) {
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    volatile uint64_t x = 0;
    while (!stop.load()) x = x + 1;
  });
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A busy worker: 60 ms of CPU (however loaded the machine), at most 5 s.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    volatile uint64_t x = 0;
    timespec ts{};
    do {
      for (int i = 0; i < 100000; ++i) x = x + 1;
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    } while (ts.tv_nsec < 60000000 && ts.tv_sec == 0 && std::chrono::steady_clock::now() < until);
    _exit(0);
  }
  HostSamplerOptions o;
  o.pid = static_cast<uint32_t>(getpid());
  o.discover_every = 1;
  std::string err;
  auto s = HostSampler::create(
      o, [] { return trace::Timestamp(std::chrono::steady_clock::now().time_since_epoch().count()); }, &err);
  ASSERT_TRUE(s) << err;
  // Sample until the child has exited (a zombie until reaped), then a few more.
  for (int i = 0; i < 600; ++i) {
    s->sample_once();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (i >= 10 && waitid(P_PID, static_cast<id_t>(child), nullptr, WEXITED | WNOHANG | WNOWAIT) == 0) {
      siginfo_t info{};
      waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOHANG | WNOWAIT);
      if (info.si_pid == child) break;
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  s->sample_once();  // the reaped child is gone
  stop = true;
  busy.join();
  s->finish_threads();
  Sampled out;
  s->drain(out.t, out.t.strings);
  const auto th = out.threads();
  ASSERT_TRUE(th.count(uint32_t(getpid())));
  ASSERT_TRUE(th.count(uint32_t(child))) << "the forked child was not found";
  EXPECT_EQ(th.at(uint32_t(child)).role, ProcessRole::kDescendant);
  uint64_t child_cpu = 0;
  for (const auto& r : out.of(uint32_t(child))) child_cpu += r.cpu_ns;
  EXPECT_GT(child_cpu, 20000000u);  // it spun for 60 ms of CPU, counted from its birth
  // Some thread of ours (the busy one) was running and used CPU.
  uint64_t running = 0, cpu = 0;
  for (size_t i = 0; i < out.t.host_samples.size(); ++i)
    if (out.t.host_samples.pid[i] == uint32_t(getpid())) {
      running += out.t.host_samples.state[i] == ThreadState::kRunning;
      cpu += out.t.host_samples.cpu_ns[i];
    }
  EXPECT_GT(running, 2u);
  EXPECT_GT(cpu, 5000000u);
  // No sample of the child after it was reaped.
  const trace::Timestamp last = out.t.host_samples.time.back();
  for (const auto& r : out.of(uint32_t(child))) EXPECT_LT(r.time, last);
}

TEST(HostSampler, ThreadSamplesAtItsRateAndStops) {
  FakeProc fp;
  fp.set(760, 760, {});
  std::atomic<trace::Timestamp> t{0};
  HostSamplerOptions o;
  o.proc_root = fp.root().string();
  o.pid = 760;
  std::string err;
  auto s = HostSampler::create(
      o, [&] { return ++t; }, &err);
  ASSERT_TRUE(s) << err;
  s->start(200);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  s->stop();
  EXPECT_GE(s->samples_taken(), 10u);
  EXPECT_LE(s->samples_taken(), 60u);
  Sampled out;
  s->drain(out.t, out.t.strings);
  EXPECT_EQ(out.t.host_samples.size(), s->samples_taken());
  EXPECT_EQ(out.threads().at(760).end, out.t.host_samples.time.back());  // stop() wrote the last row
  EXPECT_GT(s->thread_cpu_ns(), 0u);
}

TEST(HostSampler, MissingProcessIsAOneLineError) {
  HostSamplerOptions o;
  o.proc_root = "/nonexistent-proc";
  o.pid = 1;
  std::string err;
  EXPECT_FALSE(HostSampler::create(
      o, [] { return trace::Timestamp(0); }, &err));
  EXPECT_NE(err.find("/nonexistent-proc"), std::string::npos);
}

}  // namespace
}  // namespace scalescope::collect
