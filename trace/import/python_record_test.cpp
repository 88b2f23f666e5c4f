#include "trace/model/python_record.hpp"

#include <fstream>

#include <gtest/gtest.h>

#include "trace/model/synthetic_trace.hpp"
#include "trace/model/tests/test_support.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/run_loader.hpp"

namespace scalescope::trace {
namespace {

using testing::TempDir;

constexpr const char* kRecord = R"({"kind": "scalescope python bootstrap", "pid": 4242, "hostname": "gpu7",
  "torch": "2.11.0", "hooks": {"optimizer_steps": "on", "module_ranges": "failed: RuntimeError"},
  "distributed": {"source": "torch.distributed", "rank": 3, "world_size": 4, "local_rank": 3, "backend": "nccl",
    "process_groups": [{"name": "0", "description": "default_pg", "ranks": [0, 1, 2, 3], "backend": "nccl"},
                       {"name": "1", "ranks": [3, 2], "backend": "nccl"},
                       {"name": "", "ranks": [0]},
                       {"name": "9", "ranks": [-1]},
                       "junk"]}})";

TEST(PythonRecord, ReadsIdentityGroupsAndProblems) {
  const auto r = parse_python_record(kRecord);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pid, 4242u);
  EXPECT_EQ(r->hostname, "gpu7");
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->local_rank, 3);
  ASSERT_EQ(r->process_groups.size(), 2u);  // no name, a negative rank, not an object: left out
  EXPECT_EQ(r->process_groups[0], (ProcessGroup{"0", "default_pg", "nccl", {0, 1, 2, 3}}));
  EXPECT_EQ(r->process_groups[1].ranks, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(r->problems, (std::vector<std::string>{"module_ranges failed: RuntimeError"}));
}

TEST(PythonRecord, OtherJsonIsNotARecord) {
  for (const char* text : {"", "{", "[]", R"({"kind": "something else", "pid": 1})",
                           R"({"kind": "scalescope python bootstrap", "pid": "not a number"})",
                           R"({"kind": "scalescope python bootstrap", "distributed": {"rank": "x"}})"})
    EXPECT_FALSE(parse_python_record(text)) << text;
}

TEST(PythonRecord, TheRunLoaderGivesEachProcessItsRankAndGroups) {
  TempDir dir("python-record");
  const std::filesystem::path run = dir / "r.ssrun";
  std::filesystem::create_directories(run);
  Trace a = make_synthetic_trace(200, 1), b = make_synthetic_trace(200, 2);
  a.meta.hostname = b.meta.hostname = "gpu7";
  a.meta.pid = 4242;
  b.meta.pid = 4243;
  b.meta.rank = 2;
  a.meta.rank = -1;  // the launcher's environment said nothing: torch's rank 3 is taken
  write_trace(run / "gpu7-4242.sstrace", a);
  write_trace(run / "gpu7-4243.sstrace", b);
  std::ofstream(run / "python-gpu7-4242.json") << kRecord;
  std::ofstream(run / "python-gpu7-4243.json") << "{ torn";
  std::ofstream(run / "python-gpu8-4243.json") << kRecord;  // the same pid on another host is not this process
  const auto records = read_python_records(run);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(read_python_records(run, "gpu8").size(), 1u);
  const std::vector<Trace> traces = load_run(run);
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_TRUE(traces[0].meta.process_groups.empty());  // rank 2, pid 4243: its record is torn
  EXPECT_EQ(traces[1].meta.rank, 3);
  ASSERT_EQ(traces[1].meta.process_groups.size(), 2u);
  EXPECT_EQ(traces[1].meta.process_groups[0].description, "default_pg");
}

}  // namespace
}  // namespace scalescope::trace
