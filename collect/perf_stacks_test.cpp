#include "collect/perf_stacks.hpp"

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "collect/host_sampler.hpp"
#include "trace/model/elf_build_id.hpp"
#include "trace/model/frame_namer.hpp"

// Functions whose addresses the symbol tests feed in as frames: named (not
// static) so that the test binary's symbol table has them, never inlined.
namespace scalescope_test_frames {
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int caller(int x) { return leaf(x) + 2; }
__attribute__((noinline)) uint64_t busy_spin(const std::atomic<bool>& stop) {
  uint64_t v = 1;
  while (!stop.load(std::memory_order_relaxed))
    for (int i = 0; i < 1000; ++i) v = v * 6364136223846793005ull + 1442695040888963407ull;
  return v;
}
}  // namespace scalescope_test_frames

namespace scalescope::collect {
namespace {

using trace::Trace;

void put_record(std::vector<uint8_t>& out, uint32_t type, const std::vector<uint64_t>& words) {
  perf_event_header h{};
  h.type = type;
  h.size = static_cast<uint16_t>(sizeof h + words.size() * 8);
  const size_t at = out.size();
  out.resize(at + h.size);
  std::memcpy(out.data() + at, &h, sizeof h);
  std::memcpy(out.data() + at + sizeof h, words.data(), words.size() * 8);
}

std::vector<uint64_t> sample_words(uint32_t pid, uint32_t tid, uint64_t time, const std::vector<uint64_t>& ips) {
  std::vector<uint64_t> w = {uint64_t{tid} << 32 | pid, time, ips.size()};
  w.insert(w.end(), ips.begin(), ips.end());
  return w;
}

TEST(PerfRecords, ParsesSamplesAndLostAndSkipsOtherTypes) {
  std::vector<uint8_t> bytes;
  const uint64_t user = static_cast<uint64_t>(PERF_CONTEXT_USER);
  put_record(bytes, PERF_RECORD_SAMPLE, sample_words(10, 11, 5000, {user, 0x1000, 0x2000}));
  put_record(bytes, PERF_RECORD_LOST, {7, 42});
  put_record(bytes, PERF_RECORD_THROTTLE, {1, 2, 3});  // skipped
  put_record(bytes, PERF_RECORD_SAMPLE, sample_words(10, 12, 6000, {}));
  std::vector<PerfSample> got;
  std::vector<std::vector<uint64_t>> ips;
  uint64_t lost = 0;
  EXPECT_TRUE(parse_perf_records(
      bytes,
      [&](const PerfSample& s) {
        got.push_back(s);
        ips.emplace_back(s.ips.begin(), s.ips.end());
      },
      &lost));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].pid, 10u);
  EXPECT_EQ(got[0].tid, 11u);
  EXPECT_EQ(got[0].time, 5000u);
  EXPECT_EQ(ips[0], (std::vector<uint64_t>{user, 0x1000, 0x2000}));
  EXPECT_TRUE(is_perf_context(ips[0][0]));
  EXPECT_FALSE(is_perf_context(ips[0][1]));
  EXPECT_EQ(got[1].tid, 12u);
  EXPECT_TRUE(ips[1].empty());
  EXPECT_EQ(lost, 42u);
}

TEST(PerfRecords, MalformedRecordsStopTheParseAfterWhatCameBefore) {
  std::vector<uint8_t> good;
  put_record(good, PERF_RECORD_SAMPLE, sample_words(1, 2, 3, {0x10}));
  int n = 0;
  uint64_t lost = 0;
  auto count = [&](const PerfSample&) { ++n; };
  // A callchain longer than its record.
  std::vector<uint8_t> bad = good;
  std::vector<uint64_t> w = sample_words(1, 2, 3, {0x10});
  w[2] = 1000;
  put_record(bad, PERF_RECORD_SAMPLE, w);
  EXPECT_FALSE(parse_perf_records(bad, count, &lost));
  EXPECT_EQ(n, 1);
  // A size under the header's, and a record cut short.
  std::vector<uint8_t> tiny = good;
  perf_event_header h{PERF_RECORD_SAMPLE, 0, 4};
  tiny.resize(tiny.size() + 8);
  std::memcpy(tiny.data() + good.size(), &h, sizeof h);
  EXPECT_FALSE(parse_perf_records(tiny, count, &lost));
  std::vector<uint8_t> cut = good;
  cut.pop_back();
  EXPECT_FALSE(parse_perf_records(cut, count, &lost));
  EXPECT_EQ(n, 2);  // tiny's first record; cut has none whole
  EXPECT_TRUE(parse_perf_records({}, count, &lost));
}

// A fake ring laid out as the kernel's: the metadata page, then the data area.
struct FakeRing {
  static constexpr uint64_t kSize = 64;
  alignas(4096) uint8_t page[4096] = {};
  uint8_t data[kSize] = {};
  perf_event_mmap_page* meta() { return reinterpret_cast<perf_event_mmap_page*>(page); }
};

TEST(PerfRing, UnwrapsARecordAcrossTheEndAndMarksItRead) {
  FakeRing r;
  std::vector<uint8_t> rec;
  put_record(rec, PERF_RECORD_SAMPLE, sample_words(5, 6, 77, {0xabc}));  // 40 bytes
  ASSERT_EQ(rec.size(), 40u);
  const uint64_t tail = 1000 * FakeRing::kSize + 48;  // counters run on past the size
  for (size_t i = 0; i < rec.size(); ++i) r.data[(48 + i) % FakeRing::kSize] = rec[i];
  r.meta()->data_tail = tail;
  r.meta()->data_head = tail + rec.size();
  std::vector<uint8_t> out;
  drain_perf_ring(r.meta(), r.data, FakeRing::kSize, out);
  EXPECT_EQ(out, rec);
  EXPECT_EQ(r.meta()->data_tail, tail + rec.size());
  drain_perf_ring(r.meta(), r.data, FakeRing::kSize, out);
  EXPECT_TRUE(out.empty());
  // A head further ahead than the ring holds reads nothing and catches up.
  r.meta()->data_head = r.meta()->data_tail + FakeRing::kSize + 8;
  drain_perf_ring(r.meta(), r.data, FakeRing::kSize, out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(r.meta()->data_tail, r.meta()->data_head);
}

TEST(PerfMaps, KeepsExecutableMappingsSortedWithTheirFiles) {
  const std::string text =
      "7f0000002000-7f0000003000 r-xp 00002000 08:01 12 /usr/lib/libz.so.1\n"
      "55550000-55551000 r--p 00000000 08:01 13 /usr/bin/python3\n"
      "55551000-55560000 r-xp 00001000 08:01 13 /usr/bin/python3\n"
      "7fff00000000-7fff00002000 r-xp 00000000 00:00 0                          [vdso]\n"
      "7e0000000000-7e0000001000 rwxp 00000000 00:00 0 \n"
      "garbage line\n"
      "7d0000000000-7d0000001000 r-xp 00000000 08:01 14 /tmp/a file (deleted)";
  std::vector<std::string> names;
  std::vector<MapRange> out;
  parse_maps(text, out, [&](std::string_view p) {
    names.emplace_back(p);
    return static_cast<uint32_t>(names.size() - 1);
  });
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].start, 0x55551000u);
  EXPECT_EQ(out[0].offset, 0x1000u);
  EXPECT_EQ(names[out[0].module], "/usr/bin/python3");
  EXPECT_EQ(names[out[1].module], "/tmp/a file (deleted)");
  EXPECT_EQ(names[out[2].module], "[anon]");
  EXPECT_EQ(names[out[3].module], "/usr/lib/libz.so.1");
  EXPECT_EQ(out[3].end, 0x7f0000003000u);
  EXPECT_EQ(names[out[4].module], "[vdso]");
}

std::string function_of(const Trace& t, uint32_t id) {
  for (size_t i = 0; i < t.host_callsites.size(); ++i)
    if (t.host_callsites.id[i] == id) return std::string(t.strings.view(t.host_callsites.function[i]));
  return "<missing>";
}
uint32_t parent_of(const Trace& t, uint32_t id) {
  for (size_t i = 0; i < t.host_callsites.size(); ++i)
    if (t.host_callsites.id[i] == id) return t.host_callsites.parent[i];
  return UINT32_MAX;
}

// Samples of this process with frames at this binary's own functions: the
// prefix tree stores a repeated stack once; the collector writes frames
// unnamed with the module's build-id and mapping (format 1.4), and the
// offline namer (trace/model/frame_namer.hpp) names them from the file.
TEST(PerfStacks, BuildsCallsiteTreeWithModulesThatNameOffline) {
  auto s = PerfStacks::create_without_events({});
  const auto pid = static_cast<uint32_t>(getpid());
  const auto leaf = reinterpret_cast<uint64_t>(&scalescope_test_frames::leaf) + 1;
  const auto ret = reinterpret_cast<uint64_t>(&scalescope_test_frames::caller) + 2;  // a return address
  const uint64_t user = static_cast<uint64_t>(PERF_CONTEXT_USER);
  const std::vector<uint64_t> ips = {user, leaf, ret};
  s->ingest({pid, pid, 1000, ips}, 5);
  s->ingest({pid, pid + 1, 2000, ips}, 5);
  const std::vector<uint64_t> unmapped = {user, 0x10};
  s->ingest({pid, pid, 3000, unmapped}, 5);
  Trace t;
  s->drain(t, t.strings);
  ASSERT_EQ(t.host_stack_samples.size(), 3u);
  EXPECT_EQ(t.host_stack_samples.time[0], 1005);
  EXPECT_EQ(t.host_stack_samples.tid[1], pid + 1);
  ASSERT_EQ(t.host_callsites.size(), 3u);  // caller, leaf under it, the unmapped frame
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(t.strings.view(t.host_callsites.function[i]), "");  // no names in the process
  const uint32_t leaf_id = t.host_stack_samples.callsite[0];
  EXPECT_EQ(t.host_stack_samples.callsite[1], leaf_id);
  // One module row for this process: this binary, its build-id, the mapping the frames fell in.
  ASSERT_EQ(t.host_modules.size(), 1u);
  const std::string exe(t.strings.view(t.host_modules.path[0]));
  EXPECT_NE(exe.find("collect_perf_stacks_test"), std::string::npos) << exe;
  EXPECT_EQ(t.host_modules.pid[0], pid);
  std::string error;
  const std::string id = trace::elf_build_id_of_file(exe.c_str(), &error).value_or("");
  EXPECT_FALSE(id.empty()) << error;
  EXPECT_EQ(t.strings.view(t.host_modules.build_id[0]), id);
  EXPECT_LE(t.host_modules.map_start[0], leaf);
  EXPECT_GT(t.host_modules.map_end[0], leaf);
  EXPECT_GT(s->modules_ns(), 0u);
  const uint32_t lone = t.host_stack_samples.callsite[2];
  EXPECT_EQ(parent_of(t, lone), 0u);
  for (size_t i = 0; i < t.host_callsites.size(); ++i)
    if (t.host_callsites.id[i] == lone) {
      EXPECT_EQ(t.host_callsites.address[i], 0x10u);
      EXPECT_EQ(t.strings.view(t.host_callsites.module[i]), "");
      EXPECT_EQ(t.host_callsites.status[i], trace::FrameStatus::kUnmapped);
    } else {
      EXPECT_EQ(t.strings.view(t.host_callsites.module[i]), exe);
      EXPECT_EQ(t.host_callsites.status[i], trace::FrameStatus::kUnnamed);
    }
  // Offline (libdw comes with the build dependencies, scripts/install-deps.sh: names are required here).
  trace::FrameNamer().name(t);
  EXPECT_EQ(s->method(), "perf_event_open task-clock, frame-pointer callchains");
  EXPECT_EQ(function_of(t, leaf_id), "scalescope_test_frames::leaf(int)");
  EXPECT_EQ(function_of(t, parent_of(t, leaf_id)), "scalescope_test_frames::caller(int)");
  EXPECT_EQ(parent_of(t, parent_of(t, leaf_id)), 0u);
  // The next drain has only what came since: no callsite, no module row again.
  s->ingest({pid, pid, 4000, ips}, 0);
  Trace t2;
  s->drain(t2, t2.strings);
  EXPECT_EQ(t2.host_callsites.size(), 0u);
  EXPECT_EQ(t2.host_modules.size(), 0u);
  ASSERT_EQ(t2.host_stack_samples.size(), 1u);
  EXPECT_EQ(t2.host_stack_samples.callsite[0], leaf_id);
}

// Through code built without frame pointers the kernel's walk ends in
// "return addresses" that are 0 or point into the stack. The walk is cut at
// the first return address outside every executable mapping: that frame and
// every one beyond it (even one that happens to point into code) are
// dropped, the stack hangs under one [stack walk cut] frame shared by every
// cut stack, and the cut is counted. A whole walk is kept as it was.
TEST(PerfStacks, CutsTheWalkAtAReturnAddressOutsideExecutableMappings) {
  auto s = PerfStacks::create_without_events({});
  const auto pid = static_cast<uint32_t>(getpid());
  const auto leaf = reinterpret_cast<uint64_t>(&scalescope_test_frames::leaf) + 1;
  const auto ret = reinterpret_cast<uint64_t>(&scalescope_test_frames::caller) + 2;
  const auto code_beyond = reinterpret_cast<uint64_t>(&scalescope_test_frames::busy_spin) + 2;
  uint64_t on_stack = 0;  // its address is in [stack], mapped but not executable
  const auto stack_address = reinterpret_cast<uint64_t>(&on_stack);
  const uint64_t user = static_cast<uint64_t>(PERF_CONTEXT_USER);
  s->ingest({pid, pid, 1000, std::vector<uint64_t>{user, leaf, ret, stack_address, 0, code_beyond}}, 0);
  s->ingest({pid, pid, 2000, std::vector<uint64_t>{user, leaf, 0, stack_address}}, 0);  // cut after the leaf
  s->ingest({pid, pid, 3000, std::vector<uint64_t>{user, leaf, ret}}, 0);               // whole
  EXPECT_EQ(s->walks_cut(), 2u);
  Trace t;
  s->drain(t, t.strings);
  ASSERT_EQ(t.host_stack_samples.size(), 3u);
  auto row_of = [&](uint32_t id) {
    for (size_t i = 0; i < t.host_callsites.size(); ++i)
      if (t.host_callsites.id[i] == id) return i;
    ADD_FAILURE() << "no callsite " << id;
    return size_t{0};
  };
  // Sample 0: leaf <- caller <- [stack walk cut].
  const uint32_t leaf0 = t.host_stack_samples.callsite[0];
  const uint32_t caller0 = parent_of(t, leaf0);
  const uint32_t cut = parent_of(t, caller0);
  ASSERT_NE(cut, 0u);
  EXPECT_EQ(parent_of(t, cut), 0u);
  EXPECT_EQ(t.host_callsites.status[row_of(cut)], trace::FrameStatus::kWalkCut);
  EXPECT_EQ(t.host_callsites.module[row_of(cut)], trace::kNoString);
  EXPECT_EQ(trace::frame_label(t, row_of(cut)), "[stack walk cut]");
  EXPECT_EQ(t.host_callsites.status[row_of(caller0)], trace::FrameStatus::kUnnamed);
  // Sample 1: the leaf right under the same cut frame.
  EXPECT_EQ(parent_of(t, t.host_stack_samples.callsite[1]), cut);
  // Sample 2: whole, its outermost frame the caller.
  const uint32_t caller2 = parent_of(t, t.host_stack_samples.callsite[2]);
  EXPECT_NE(caller2, caller0);
  EXPECT_EQ(parent_of(t, caller2), 0u);
  // cut, caller and leaf under it, leaf under cut, caller and leaf at the root:
  // no frame of the garbage, nor of the code address beyond it.
  EXPECT_EQ(t.host_callsites.size(), 6u);
  for (size_t i = 0; i < t.host_callsites.size(); ++i) {
    EXPECT_NE(t.host_callsites.status[i], trace::FrameStatus::kUnmapped) << "callsite " << t.host_callsites.id[i];
    if (t.host_callsites.status[i] != trace::FrameStatus::kWalkCut) {
      EXPECT_NE(t.strings.view(t.host_callsites.module[i]), "") << "callsite " << t.host_callsites.id[i];
    }
  }
  // Named offline as before; the cut frame keeps its status.
  trace::FrameNamer().name(t);
  EXPECT_EQ(function_of(t, caller0), "scalescope_test_frames::caller(int)");
  EXPECT_EQ(t.host_callsites.status[row_of(cut)], trace::FrameStatus::kWalkCut);
  EXPECT_EQ(trace::to_string(trace::FrameStatus::kWalkCut), "stack walk cut");
  EXPECT_EQ(t.meta.extra["host_stack_naming"].rfind("offline: 5 of 5 frames named", 0), 0u)
      << t.meta.extra["host_stack_naming"];
}

// The real kernel, where it allows task-clock sampling with callchains: a
// thread spinning in busy_spin() is sampled, and most leaves name it.
TEST(PerfStacks, RealKernelSamplesASpinningThread) {
  std::string why;
  PerfStacksOptions o;
  o.hz = 1000;
  auto s = PerfStacks::create(o, static_cast<uint32_t>(syscall(SYS_gettid)), &why);
  if (!s) GTEST_SKIP() << "perf_event_open refused here: " << why;
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> tid{0};
  std::thread spinner([&] {
    tid = static_cast<uint32_t>(syscall(SYS_gettid));
    scalescope_test_frames::busy_spin(stop);
  });
  while (tid == 0) std::this_thread::yield();
  ASSERT_TRUE(s->add_thread(static_cast<uint32_t>(getpid()), tid));
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s->poll(0);
  }
  stop = true;
  spinner.join();
  s->remove_thread(tid);
  Trace t;
  s->drain(t, t.strings);
  trace::FrameNamer().name(t);
  // 400 ms at 1 kHz of its CPU time; on a loaded two-core machine it may get a quarter of that.
  ASSERT_GE(t.host_stack_samples.size(), 20u) << s->method();
  size_t in_spin = 0;
  for (size_t i = 0; i < t.host_stack_samples.size(); ++i) {
    EXPECT_EQ(t.host_stack_samples.tid[i], tid.load());
    in_spin += function_of(t, t.host_stack_samples.callsite[i]).find("busy_spin") != std::string::npos;
  }
  EXPECT_GT(in_spin * 2, t.host_stack_samples.size()) << in_spin << " of " << t.host_stack_samples.size();
  EXPECT_EQ(s->threads_opened(), 1u);
}

// The host sampler opens an event per thread it finds, and says in its
// method which way stacks were taken (or why not).
TEST(PerfStacks, HostSamplerRecordsStacksOrSaysWhyNot) {
  std::atomic<bool> stop{false};
  std::thread spinner([&] { scalescope_test_frames::busy_spin(stop); });
  HostSamplerOptions o;
  o.pid = static_cast<uint32_t>(getpid());
  o.stack_hz = 1000;
  std::string error;
  auto clock = [] {
    return static_cast<trace::Timestamp>(std::chrono::steady_clock::now().time_since_epoch().count());
  };
  auto h = HostSampler::create(o, clock, &error);
  ASSERT_TRUE(h) << error;
  std::string why;
  const bool allowed = PerfStacks::create({}, static_cast<uint32_t>(syscall(SYS_gettid)), &why) != nullptr;
  for (int i = 0; i < 30; ++i) {
    h->sample_once();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop = true;
  spinner.join();
  h->sample_once();
  h->finish_threads();
  Trace t;
  h->drain(t, t.strings);
  if (!allowed) {
    EXPECT_EQ(h->stack_method().rfind("off: perf_event_open", 0), 0u) << h->stack_method();
    EXPECT_EQ(t.host_stack_samples.size(), 0u);
    GTEST_SKIP() << "perf_event_open refused here: " << why;
  }
  EXPECT_EQ(h->stack_method().rfind("perf_event_open task-clock", 0), 0u) << h->stack_method();
  EXPECT_GT(t.host_stack_samples.size(), 5u);
  EXPECT_GT(t.host_callsites.size(), 0u);
  EXPECT_EQ(h->stack_samples(), t.host_stack_samples.size());
  for (size_t i = 0; i < t.host_stack_samples.size(); ++i) EXPECT_EQ(t.host_stack_samples.pid[i], o.pid);

  HostSamplerOptions off = o;
  off.stack_hz = 0;
  auto h2 = HostSampler::create(off, clock, &error);
  ASSERT_TRUE(h2);
  EXPECT_EQ(h2->stack_method(), "off");
  EXPECT_EQ(h2->stacks(), nullptr);
}

}  // namespace
}  // namespace scalescope::collect
