#include "collect/run_control.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "collect/collective_ring.hpp"
#include "collect/profile_runner.hpp"
#include "base/error.hpp"

namespace fs = std::filesystem;
using namespace scalescope;
using namespace scalescope::collect;

namespace {

class RunControl : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("scalescope-control-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

WindowRequest request(std::string id, uint64_t start) {
  WindowRequest r;
  r.id = std::move(id);
  r.start_iteration = start;
  r.iterations = 20;
  r.reason = "trigger";
  r.note = "slow \"after\" step 50k";
  r.requested_by = "ana@node1";
  r.ranks = {0, 3};
  return r;
}

}  // namespace

TEST_F(RunControl, RequestRoundTripsAndBadOnesAreRefusedWithTheReason) {
  const WindowRequest r = request("3", 2045);
  std::string error;
  auto back = parse_window_request(window_request_json(r), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->id, "3");
  EXPECT_EQ(back->start_iteration, 2045u);
  EXPECT_EQ(back->ranks, (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(back->note, r.note);
  for (auto [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"[]", "not a JSON object"},
           {R"({"id":"3","start_iteration":1,"iterations":0,"reason":"trigger"})", "\"iterations\" must be 1"},
           {R"({"id":"../x","start_iteration":1,"iterations":2,"reason":"trigger"})", "\"id\" must be"},
           {R"({"id":"3","start_iteration":"1","iterations":2,"reason":"trigger"})", "wrong type"},
           {R"({"id":"3","start_iteration":2.5,"iterations":2,"reason":"trigger"})", "not an integer in range"},
           {R"({"id":"3","start_iteration":1,"iterations":1e300,"reason":"trigger"})", "not an integer in range"},
           {R"({"id":"3","start_iteration":1,"iterations":2,"reason":"trigger","ranks":[0,3e40]})", "\"ranks\" is not a list"},
           {R"({"id":"3","start_iteration":1,"iterations":2,"reason":"trigger","ranks":7})", "\"ranks\" is not a list"},
           {R"({"id":"3","start_iteration":1,"iterations":2,"reason":"whim"})", "\"reason\" must be"},
           {R"({"start_iteration":1,"iterations":2,"reason":"trigger"})", "no \"id\""}}) {
    error.clear();
    EXPECT_FALSE(parse_window_request(text, &error)) << text;
    EXPECT_NE(error.find(why), std::string::npos) << text << " -> " << error;
  }
}

// Two writers of one id: one wins, the other is told; nothing half-written
// is ever read, and temporary files do not stay.
TEST_F(RunControl, OneWriterWinsAnIdAndReadersSeeWholeFiles) {
  EXPECT_TRUE(create_window_request(dir_, request("time-7", 100)));
  EXPECT_FALSE(create_window_request(dir_, request("time-7", 105)));
  std::ofstream(control_dir(dir_) / "window-9.json") << "{\"id\":\"9\",";  // torn by hand
  std::ofstream(control_dir(dir_) / "window-8.json") << window_request_json(request("5", 1));  // name and id differ
  std::vector<std::string> skipped;
  auto all = read_window_requests(dir_, &skipped);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].start_iteration, 100u) << "the first writer's request";
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[0].find("window-8.json: its id does not match its name"), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[1].find("window-9.json: not a JSON object"), std::string::npos) << skipped[1];
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(control_dir(dir_))) files += e.is_regular_file();
  EXPECT_EQ(files, 3u) << "no temporary file left";
}

TEST_F(RunControl, AlignedStartLeadsTheFurthestProcessByTheLeadInIterations) {
  write_progress(dir_, Progress{"a", 1, 0, 1000, 50e6, 1});
  write_progress(dir_, Progress{"b", 2, 1, 1003, 100e6, 1});
  write_progress(dir_, Progress{"b", 2, 1, 1004, 100e6, 2});  // overwrites its own
  auto p = read_progress(dir_);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].iteration, 1004u);
  // 2 s at the fastest step (50 ms) is 40 iterations past 1004.
  EXPECT_EQ(aligned_start(p, 2.0, 2), 1044u);
  // Reports 1 s old: rank 0 has moved on 20 steps (to 1020), rank 1 10 (to 1014).
  EXPECT_EQ(aligned_start(p, 2.0, 1'000'000'001), 1060u);
  EXPECT_EQ(aligned_start({Progress{"a", 1, 0, 7, 0, 1}}, 2.0, 5'000'000'000), 9u) << "no step time yet: 2 iterations";
  EXPECT_EQ(aligned_start({Progress{"a", 1, 0, 7, 10e9, 1}}, 2.0, 1), 9u) << "slow steps: still 2";
}

// The watcher looks at most once a period, with one stat when nothing
// changed, and hands back each request once.
TEST_F(RunControl, WatcherLooksOncePerPeriodAndHandsEachRequestOnce) {
  ControlWatcher w(dir_, std::chrono::milliseconds(500));
  auto t = std::chrono::steady_clock::now();
  EXPECT_TRUE(w.poll(t).empty()) << "no control folder yet";
  ASSERT_TRUE(create_window_request(dir_, request("1", 10)));
  EXPECT_TRUE(w.poll(t + std::chrono::milliseconds(100)).empty()) << "within the period: no look";
  EXPECT_EQ(w.checks(), 1u);
  auto got = w.poll(t + std::chrono::milliseconds(600));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, "1");
  EXPECT_TRUE(w.poll(t + std::chrono::milliseconds(1200)).empty()) << "seen already";
  ASSERT_TRUE(create_window_request(dir_, request("2", 30)));
  got = w.poll(t + std::chrono::milliseconds(1800));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, "2");
  EXPECT_EQ(w.checks(), 4u);
}

TEST_F(RunControl, UnwritableRunDirectoryIsAnErrorNamingThePath) {
  // A run directory that is a file: no control/ folder can be made in it, root or not.
  const fs::path not_a_dir = dir_ / "run.ssrun";
  std::ofstream(not_a_dir) << "x";
  for (auto write : {+[](const fs::path& d) { create_window_request(d, request("1", 1)); },
                     +[](const fs::path& d) { write_progress(d, Progress{"a", 1, 0, 1, 0, 1}); }}) {
    try {
      write(not_a_dir);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(control_dir(not_a_dir).string()), std::string::npos) << e.what();
    }
  }
}

// Hang dumps: a dump request is seen once; a dump written whole reads back;
// a job is stalled only when every process's last iteration is old.
TEST_F(RunControl, DumpRequestsAreSeenOnceAndDumpsReadBack) {
  ControlWatcher w(dir_, std::chrono::milliseconds(0));
  auto t = std::chrono::steady_clock::now();
  ASSERT_TRUE(create_dump_request(dir_, "1", "test@here"));
  EXPECT_FALSE(create_dump_request(dir_, "1", "test@here")) << "one writer wins an id";
  w.look_now();
  w.poll(t);
  EXPECT_EQ(w.take_dump_requests(), std::vector<std::string>{"1"});
  w.look_now();
  w.poll(t + std::chrono::seconds(2));
  EXPECT_TRUE(w.take_dump_requests().empty()) << "seen once";

  trace::HangDump d;
  d.host = "node1";
  d.pid = 42;
  d.rank = 3;
  d.reason = "trigger";
  d.unix_ns = 1000;
  d.collectives_recorded = true;
  d.collectives.push_back({trace::NcclOp::kAllReduce, 0xC0FFEE, 18234, 4096, 900, 0});
  d.iterations.push_back({411, 800});
  d.python.push_back({42, {{"/usr/lib/python3/torch/cuda/__init__.py", 1162, "synchronize"}, {"train.py", 43, "main"}}});
  write_hang_dump(dir_, d);
  std::ifstream in(trace::hang_dump_dir(dir_) / "node1-42.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string error;
  auto back = trace::parse_hang_dump(text, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->rank, 3);
  ASSERT_EQ(back->collectives.size(), 1u);
  EXPECT_EQ(back->collectives[0].op, trace::NcclOp::kAllReduce);
  EXPECT_EQ(back->collectives[0].sequence, 18234u);
  EXPECT_EQ(back->collectives[0].leave_unix_ns, 0);
  EXPECT_EQ(back->iterations.at(0).index, 411u);
  EXPECT_FALSE(back->stalled);
  ASSERT_EQ(back->python.size(), 1u);
  EXPECT_EQ(back->python[0].tid, 42u);
  ASSERT_EQ(back->python[0].frames.size(), 2u);
  EXPECT_EQ(back->python[0].frames[0].function, "synchronize");
  EXPECT_EQ(back->python[0].frames[1].line, 43);
  EXPECT_TRUE(back->python_note.empty());
  EXPECT_FALSE(trace::parse_hang_dump(R"({"host":"h","pid":1,"rank":0,"reason":"trigger","unix_ns":1,"collectives":[],)"
                                      R"("iterations":[],"python":[{"tid":1,"frames":[{"file":"a.py"}]}]})",
                                      &error))
      << "a frame without its line";
  EXPECT_FALSE(hang_dumped(dir_)) << "a trigger's dump: the job may not have hung";
  d.stalled = true;
  d.reason = "sigterm";
  write_hang_dump(dir_, d);
  EXPECT_TRUE(hang_dumped(dir_)) << "killed after --hang-after found it stalled";
  EXPECT_FALSE(trace::parse_hang_dump("{\"host\": 1}", &error));
  EXPECT_FALSE(error.empty());
  // A time far beyond any clock is refused, not converted (undefined for a fraction).
  EXPECT_FALSE(trace::parse_hang_dump(R"({"host":"h","pid":1,"rank":0,"reason":"trigger","unix_ns":1.79658e+29,)"
                                      R"("collectives":[],"iterations":[]})",
                                      &error));
  EXPECT_NE(error.find("\"unix_ns\" is not an integer"), std::string::npos) << error;
}

TEST_F(RunControl, JobStalledWhenNoProcessBeganAnIterationForTheTimeGiven) {
  const int64_t s = 1'000'000'000;
  std::vector<Progress> p(2);
  p[0].iteration_unix_ns = 100 * s;
  p[1].iteration_unix_ns = 105 * s;
  EXPECT_FALSE(job_stalled(p, 10, 114 * s)) << "rank 1 began one 9 s ago";
  EXPECT_TRUE(job_stalled(p, 10, 115 * s));
  EXPECT_FALSE(job_stalled(p, 0, 1000 * s)) << "off";
  EXPECT_FALSE(job_stalled({}, 10, 1000 * s)) << "no progress: nothing to judge";
  Progress written{"h", 1, 0, 7, 1e6, 5 * s, 4 * s};
  std::string error;
  auto back = parse_progress(progress_json(written), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->iteration_unix_ns, 4 * s);
}

// The ring: sequences per communicator from 1, calls left or not, the last
// kCollectives calls kept in order.
TEST(CollectiveRingTest, CountsEachCommunicatorAndKeepsTheLastCalls) {
  CollectiveRing ring;  // a fresh one (the process's own is instance())
  const uint64_t a = ring.enter(trace::NcclOp::kAllReduce, 0xA, 100);
  ring.leave(a);
  ring.enter(trace::NcclOp::kBroadcast, 0xB, 8);
  const uint64_t open = ring.enter(trace::NcclOp::kAllReduce, 0xA, 100);
  ring.iteration(7);
  auto d = ring.snapshot();
  ASSERT_EQ(d.collectives.size(), 3u);
  EXPECT_EQ(d.collectives[0].sequence, 1u);
  EXPECT_NE(d.collectives[0].leave_unix_ns, 0);
  EXPECT_EQ(d.collectives[1].sequence, 1u) << "communicator 0xB counts on its own";
  EXPECT_EQ(d.collectives[2].sequence, 2u);
  EXPECT_EQ(d.collectives[2].leave_unix_ns, 0) << "still inside";
  EXPECT_EQ(d.iterations.at(0).index, 7u);
  ring.leave(open);
  for (int i = 0; i < 100; ++i) ring.leave(ring.enter(trace::NcclOp::kAllGather, 0xC, 1));
  d = ring.snapshot();
  ASSERT_EQ(d.collectives.size(), CollectiveRing::kCollectives);
  EXPECT_EQ(d.collectives.back().sequence, 100u);
  EXPECT_EQ(d.collectives.front().sequence, 100u - CollectiveRing::kCollectives + 1);
}

TEST(ExitStatus, HungOnlyWhenAHangDumpCameBeforeTheKill) {
  EXPECT_EQ(collect::exit_status(0, false, true), "ok");
  EXPECT_EQ(collect::exit_status(143, true, true), "hung");
  EXPECT_EQ(collect::exit_status(143, true, false), "crashed");
  EXPECT_EQ(collect::exit_status(1, false, false), "failed");
}
