// PyTorch's NCCL flight recorder dumps: the pickle reader against Python's
// own pickle module, the dump reader on pickle and JSON dumps in the shapes
// PyTorch writes (built here by /usr/bin/python3), and the hang they show.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyze/flight_recorder.hpp"
#include "analyze/hang_report.hpp"
#include "analyze/pickle_data.hpp"
#include "base/error.hpp"
#include "trace/model/hang_dump.hpp"

namespace scalescope::analyze {
namespace {

namespace fs = std::filesystem;

class FlightRecorder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("ss_flight_recorder_{}_{}", getpid(),
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs a Python program with the dump builder below in scope, in dir_.
  void python(const std::string& body) {
    const fs::path script = dir_ / "make.py";
    std::ofstream(script) << kBuilder << body;
    const std::string cmd = fmt::format("cd '{}' && /usr/bin/python3 '{}'", dir_.string(), script.string());
    ASSERT_EQ(std::system(cmd.c_str()), 0) << body;
  }
  std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  // A rank's dump in the dict shape FlightRecorder::dump_dict and dump_json
  // give it (torch/csrc/distributed/c10d/FlightRecorderDetail.hpp, version
  // 2.x): `seqs` its collectives on the default group, each ("completed" |
  // "started" | "scheduled"). JSON differs as PyTorch's does: process_group a
  // list, pg_status values strings, an absent time 0.
  static constexpr const char* kBuilder = R"PY(
import json, pickle, sys
def dump(rank, seqs, world=4, as_json=False):
    entries = []
    for i, (seq, state) in enumerate(seqs):
        t0 = 1724779239936775119 + seq * 1000000
        e = {
            "frames": [{"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py", "line": 2696}],
            "record_id": i, "pg_id": 0, "process_group": ("0", "default_pg"),
            "thread_name": "pt_main_thread", "thread_id": "140000",
            "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
            "profiling_name": "nccl:all_reduce", "time_created_ns": t0,
            "input_sizes": [[3, 4]], "input_dtypes": ["Float"], "output_sizes": [[3, 4]], "output_dtypes": ["Float"],
            "state": state,
            "time_discovered_started_ns": t0 + 10 if state != "scheduled" else None,
            "time_discovered_completed_ns": t0 + 20 if state == "completed" else None,
            "retired": state == "completed", "timeout_ms": 600000, "is_p2p": False,
        }
        if state == "completed": e["duration_ms"] = 0.25
        entries.append(e)
    last = max([s for s, _ in seqs], default=0)
    d = {"version": "2.10", "comm_lib_version": "2.27.5",
         "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(world)))}},
         "pg_status": {"0": {"last_enqueued_collective": last, "last_started_collective": -1,
                             "last_completed_collective": max([s for s, st in seqs if st == "completed"], default=-1)}},
         "entries": entries}
    if as_json:
        for e in entries:
            e["process_group"] = list(e["process_group"])
            del e["frames"]
            for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
                if e[k] is None: e[k] = 0
        d["pg_status"] = {g: {k: str(v) for k, v in s.items()} for g, s in d["pg_status"].items()}
        if not entries: del d["entries"]
        return json.dumps(d).encode()
    return pickle.dumps(d)
def planted(prefix, as_json=False, protocol=None):
    # Ranks 0, 1 and 3 queued all_reduce #18 and wait in it; rank 2 stopped after #17.
    for rank in range(4):
        seqs = [(s, "completed") for s in range(1, 18)]
        if rank != 2: seqs.append((18, "started" if rank == 0 else "scheduled"))
        data = dump(rank, seqs, as_json=as_json)
        if protocol is not None: data = pickle.dumps(pickle.loads(data), protocol=protocol)
        open(f"{prefix}{rank}", "wb").write(data)
)PY";

  fs::path dir_;
};

void expect_planted_hang(const FlightRecorderHang& h) {
  ASSERT_TRUE(h.in_collective) << h.text;
  EXPECT_EQ(h.dumps, 4u);
  EXPECT_EQ(h.collective_seq_id, 18);
  EXPECT_EQ(h.pg_name, "0");
  EXPECT_EQ(h.pg_desc, "default_pg");
  EXPECT_EQ(h.op, "nccl:all_reduce");
  EXPECT_EQ(h.never_reached, std::vector<int32_t>{2});
  EXPECT_EQ(h.text,
            "ranks 0-1, 3 wait in nccl:all_reduce #18 of process group 0 (default_pg); rank 2 never reached it (its "
            "last there: nccl:all_reduce #17 (completed))");
  ASSERT_EQ(h.ranks.size(), 4u);
  EXPECT_EQ(h.ranks[2].state, "not reached");
  EXPECT_EQ(h.ranks[2].furthest, 17);
  EXPECT_FALSE(h.ranks[2].pending.has_value());
  EXPECT_EQ(h.ranks[0].state, "waiting");
  ASSERT_TRUE(h.ranks[0].pending.has_value());
  EXPECT_EQ(h.ranks[0].pending->collective_seq_id, 18);
  EXPECT_EQ(h.ranks[0].pending->state, "started");
  ASSERT_TRUE(h.ranks[3].pending.has_value());
  EXPECT_EQ(h.ranks[3].pending->state, "scheduled");
}

// The planted hang of the brief: four ranks, rank 2 never started collective
// 18 of the default group; read from pickles as PyTorch names them (PREFIX<rank>).
TEST_F(FlightRecorder, PlantedHangInPicklesNamesRankAndSequence) {
  python("planted('nccl_trace_rank_')\n");
  const auto dumps = read_flight_recorder_dumps(dir_ / "nccl_trace_rank_");
  ASSERT_EQ(dumps.size(), 4u);
  EXPECT_EQ(dumps[0].version, "2.10");
  EXPECT_EQ(dumps[3].rank, 3);
  ASSERT_EQ(dumps[1].entries.size(), 18u);
  EXPECT_EQ(dumps[1].entries.back().time_created_ns, 1724779239936775119 + 18 * 1000000);
  ASSERT_EQ(dumps[0].group_ranks.size(), 1u);
  EXPECT_EQ(dumps[0].group_ranks[0].second, (std::vector<int32_t>{0, 1, 2, 3}));
  expect_planted_hang(find_flight_recorder_hang(dumps));
  // Every pickle protocol Python writes plain data with (2 to 5) reads the same.
  for (int protocol = 2; protocol <= 5; ++protocol) {
    python(fmt::format("planted('p{}_', protocol={})\n", protocol, protocol));
    expect_planted_hang(find_flight_recorder_hang(read_flight_recorder_dumps(dir_ / fmt::format("p{}_", protocol))));
  }
}

TEST_F(FlightRecorder, PlantedHangInJsonDumps) {
  fs::create_directories(dir_ / "json");
  python("planted('json/rank_', as_json=True)\n");
  const auto dumps = read_flight_recorder_dumps(dir_ / "json");  // a directory of them
  ASSERT_EQ(dumps.size(), 4u);
  expect_planted_hang(find_flight_recorder_hang(dumps));
}

// A run directory: `profile` points PyTorch at RUN/control/flight_recorder/rank_.
TEST_F(FlightRecorder, RunDirectoryDumpsAndAHalfWrittenOne) {
  const fs::path run = dir_ / "run.ssrun";
  fs::create_directories(trace::flight_recorder_dir(run));
  EXPECT_EQ(trace::flight_recorder_prefix(run), (run / "control" / "flight_recorder" / "rank_").string());
  python(fmt::format("planted('{}')\n", trace::flight_recorder_prefix(run)));
  {  // a rank killed while writing its dump leaves it cut short
    const std::string whole = read(trace::flight_recorder_dir(run) / "rank_3");
    std::ofstream(trace::flight_recorder_dir(run) / "rank_3", std::ios::binary) << whole.substr(0, whole.size() / 2);
  }
  std::vector<std::string> warnings;
  const auto dumps = read_run_flight_recorder_dumps(run, &warnings);
  ASSERT_EQ(dumps.size(), 3u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].find((trace::flight_recorder_dir(run) / "rank_3").string() + ": "), 0u) << warnings[0];
  const FlightRecorderHang h = find_flight_recorder_hang(dumps);
  EXPECT_EQ(h.collective_seq_id, 18);
  EXPECT_EQ(h.never_reached, std::vector<int32_t>{2});
  EXPECT_EQ(h.ranks[3].state, "no dump");
  EXPECT_NE(h.text.find("; rank 3 wrote no dump"), std::string::npos) << h.text;
  // In the typed hang result and its JSON, each part names its source.
  HangReport report;
  report.flight_recorder = h;
  EXPECT_TRUE(report.any());
  nlohmann::json j;
  to_json(j, report.flight_recorder);
  EXPECT_EQ(j["source"], "flight recorder");
  EXPECT_EQ(j["collective_seq_id"], 18);
  EXPECT_EQ(j["never_reached"], nlohmann::json::array({2}));
  // A second dump of a rank (rank_0.json beside rank_0) is a warning too; the first stays.
  fs::copy_file(trace::flight_recorder_dir(run) / "rank_0", trace::flight_recorder_dir(run) / "rank_0.pkl");
  warnings.clear();
  EXPECT_EQ(read_run_flight_recorder_dumps(run, &warnings).size(), 3u);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("rank 0 again"), std::string::npos) << warnings[0];
  // No run directory dumps: nothing, and no warning.
  warnings.clear();
  EXPECT_TRUE(read_run_flight_recorder_dumps(dir_ / "elsewhere", &warnings).empty());
  EXPECT_TRUE(warnings.empty());
}

// Every rank reached #18 and none completed it: the collective is still named.
TEST_F(FlightRecorder, EveryRankInsideTheSameCollective) {
  python(R"PY(
for rank in range(2):
    open(f"r_{rank}", "wb").write(dump(rank, [(1, "completed"), (2, "started")], world=2))
)PY");
  const FlightRecorderHang h = find_flight_recorder_hang(read_flight_recorder_dumps(dir_ / "r_"));
  ASSERT_TRUE(h.in_collective);
  EXPECT_EQ(h.collective_seq_id, 2);
  EXPECT_TRUE(h.never_reached.empty());
  EXPECT_EQ(h.text,
            "ranks 0-1 wait in nccl:all_reduce #2 of process group 0 (default_pg) (every rank with a dump reached it; "
            "it is not completed)");
  python(R"PY(
for rank in range(2):
    open(f"done_{rank}", "wb").write(dump(rank, [(1, "completed"), (2, "completed")], world=2))
)PY");
  const FlightRecorderHang done = find_flight_recorder_hang(read_flight_recorder_dumps(dir_ / "done_"));
  EXPECT_FALSE(done.in_collective);
  EXPECT_EQ(done.text, "no collective left incomplete: every recorded collective completed");
}

// Each malformed dump gives one line that starts with the file's name.
TEST_F(FlightRecorder, MalformedDumpsGiveOneLineErrorsNamingTheFile) {
  python(R"PY(
import datetime, pickle
good = dump(0, [(1, "completed")])
cases = {
    "code_0": pickle.dumps({"version": "2.10", "when": datetime.date(2024, 1, 1)}),  # GLOBAL/REDUCE
    "set_0": pickle.dumps({"version": "2.10", "entries": {1, 2}}),
    "cut_0": good[: len(good) // 2],
    "proto1_0": pickle.dumps({"version": "2.10"}, protocol=1),
    "text_0": b"hello",
    "list_0": pickle.dumps([1, 2]),
    "noversion_0": pickle.dumps({"entries": []}),
    "badstate_0": pickle.dumps({"version": "2.10", "entries": [{"collective_seq_id": 1, "profiling_name": "x", "state": "lost", "pg_id": 0}]}),
    "noseq_0": pickle.dumps({"version": "2.10", "entries": [{"profiling_name": "x", "state": "completed", "pg_id": 0}]}),
    "badjson_0": b'{"version": "2.10", "entries": [',
    "jsonstr_0": json.dumps({"version": "2.10", "entries": "none"}).encode(),
    "bigint_0": pickle.dumps({"version": "2.10", "entries": [{"collective_seq_id": 2**70, "profiling_name": "x", "state": "completed", "pg_id": 0}]}),
    "badranks_0": pickle.dumps({"version": "2.10", "pg_config": {"0": {"ranks": "all of them"}}}),
    "norank": good,
}
for name, data in cases.items():
    open(name, "wb").write(data)
)PY");
  for (const char* name : {"code_0", "set_0", "cut_0", "proto1_0", "text_0", "list_0", "noversion_0", "badstate_0",
                           "noseq_0", "badjson_0", "jsonstr_0", "bigint_0", "badranks_0", "norank"}) {
    const std::string file = (dir_ / name).string();
    try {
      (void)read_flight_recorder_dumps(file);
      ADD_FAILURE() << name << " was read";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find(file + ": "), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  // The refusal says what was refused.
  try {
    (void)read_flight_recorder_dump(dir_ / "code_0");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GLOBAL"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)read_flight_recorder_dumps(dir_ / "nothing_here_"), Error);
}

// The pickle reader gives what Python's json module writes for the same value.
TEST_F(FlightRecorder, PickleReaderAgreesWithPythonForEveryProtocol) {
  python(R"PY(
shared = [1, "x"]
value = {"ints": [0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31, 2**63 - 1, -2**63], "floats": [0.5, -1e300, 3.0],
         "text": ["", "é", "日本", "a" * 300], "nested": ((1, (2, (3,))), [], {}, ()), "flags": [True, False, None],
         "shared": [shared, shared], "tuples": [(1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)], 7: "int key"}
for p in range(2, 6):
    open(f"v{p}.pkl", "wb").write(pickle.dumps(value, protocol=p))
open("v.json", "w").write(json.dumps(value))
open("bytes.pkl", "wb").write(pickle.dumps({"b": b"\x00\xff", "big": b"x" * 300}, protocol=3))
)PY");
  const nlohmann::json expected = nlohmann::json::parse(read(dir_ / "v.json"));
  for (int p = 2; p <= 5; ++p) {
    std::string why;
    const auto v = read_pickle_data(read(dir_ / fmt::format("v{}.pkl", p)), &why);
    ASSERT_TRUE(v.has_value()) << "protocol " << p << ": " << why;
    EXPECT_EQ(*v, expected) << "protocol " << p;
  }
  std::string why;
  const auto b = read_pickle_data(read(dir_ / "bytes.pkl"), &why);
  ASSERT_TRUE(b.has_value()) << why;
  // Compared as the byte vector: C++20's reversed operator== makes the
  // binary container's own comparison with a vector ambiguous for clang.
  const std::vector<uint8_t>& bytes = (*b)["b"].get_binary();
  EXPECT_EQ(bytes, (std::vector<uint8_t>{0x00, 0xff}));
  EXPECT_EQ((*b)["big"].get_binary().size(), 300u);
}

// Inputs built by hand that no dump holds: the reader stops within its bounds.
TEST(PickleData, RefusesUnboundedOrNonDataInput) {
  std::string why;
  // A list appended into itself: nests without end once written out.
  const std::string self = std::string("\x80\x02]q\x00h\x00" "a.", 9);
  EXPECT_FALSE(read_pickle_data(self, &why).has_value());
  EXPECT_NE(why.find("nested deeper"), std::string::npos) << why;
  // A list holding itself twice, 30 levels down: 2^30 values once expanded.
  std::string blowup("\x80\x02]q\x00", 5);
  for (int i = 0; i < 30; ++i) blowup += std::string("(h\x00h\x00" "tq\x00", 8);
  blowup += ".";
  EXPECT_FALSE(read_pickle_data(blowup, &why).has_value());
  EXPECT_NE(why.find("more than"), std::string::npos) << why;
  // STACK_GLOBAL + REDUCE: refused before anything runs.
  const std::string global("\x80\x04\x8c\x02os\x8c\x06system\x93.", 16);
  EXPECT_FALSE(read_pickle_data(global, &why).has_value());
  EXPECT_NE(why.find("STACK_GLOBAL"), std::string::npos) << why;
  // A length past the end, a memo get never put, an opcode on an empty stack.
  EXPECT_FALSE(read_pickle_data(std::string("\x80\x02X\xff\xff\xff\x7f" "ab.", 10), &why).has_value());
  EXPECT_FALSE(read_pickle_data(std::string("\x80\x02h\x05.", 5), &why).has_value());
  EXPECT_FALSE(read_pickle_data(std::string("\x80\x02" "a.", 4), &why).has_value());
  EXPECT_FALSE(read_pickle_data(std::string("\x80\x02X\x02\x00\x00\x00\xc3\x28.", 10), &why).has_value());
  EXPECT_NE(why.find("UTF-8"), std::string::npos) << why;
}

}  // namespace
}  // namespace scalescope::analyze
