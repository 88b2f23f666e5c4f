#include "trace/input_detector.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "trace/error.hpp"
#include "trace/synthetic_trace.hpp"
#include "trace/trace_file.hpp"
#include "trace/trace_source.hpp"

namespace scalescope::trace {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("scalescope-detect-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path write(const std::string& name, const std::string& bytes) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name, std::ios::binary) << bytes;
    return path / name;
  }
  fs::path sqlite(const std::string& name, const char* sql) const {
    const fs::path p = path / name;
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    return p;
  }
};

std::string error_of(const fs::path& p) {
  try {
    detect_input(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

constexpr const char* kNsysTables =
    "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
    "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER);";

TEST(InputDetector, FilesByContentNotName) {
  TempDir d;
  const fs::path trace = d.path / "saved-as.json";  // a trace under a Kineto name is still a trace
  write_trace(trace, make_synthetic_trace(size_t{50}));
  EXPECT_EQ(detect_input(trace).kind, InputKind::kTraceFile);
  EXPECT_EQ(detect_input(d.write("x.trace", " \n{\"traceEvents\": []}")).kind, InputKind::kKinetoJson);
  EXPECT_EQ(detect_input(d.write("x.bin", "\x1f\x8b\x08\x00rest")).kind, InputKind::kKinetoJson);
  EXPECT_EQ(detect_input(d.sqlite("rank0.sqlite", kNsysTables)).kind, InputKind::kNsysSqlite);
  EXPECT_EQ(detect_input(d.sqlite("study.db", "CREATE TABLE sweeps (id); CREATE TABLE runs (id);")).kind,
            InputKind::kSweepDatabase);
  EXPECT_EQ(detect_input(d.sqlite("other.db", "CREATE TABLE t (x);")).kind, InputKind::kSqliteDatabase);
  // SQLite's magic followed by garbage: named as damaged, never opened for writing.
  const fs::path broken = d.write("broken.db", std::string("SQLite format 3\0", 16) + std::string(200, 'x'));
  const DetectedInput b = detect_input(broken);
  EXPECT_EQ(b.kind, InputKind::kSqliteDatabase);
  EXPECT_NE(b.what.find("damaged"), std::string::npos);
  EXPECT_EQ(fs::file_size(broken), 216u);
  EXPECT_EQ(detect_input(d.write("runs.csv", "submitter,system,benchmark\nA,B,bert\n")).kind,
            InputKind::kMlperfRunsCsv);
  EXPECT_EQ(detect_input(d.write("capture.nsys-rep", "\x01\x02binary")).kind, InputKind::kNsysReport);
  const DetectedInput png = detect_input(d.write("plot.json", "\x89PNG\r\n\x1a\nrest"));
  EXPECT_EQ(png.kind, InputKind::kOther);
  EXPECT_EQ(png.what, "a PNG image");
  EXPECT_EQ(detect_input(d.write("empty.json", "")).what, "an empty file");
  EXPECT_EQ(detect_input(d.write("notes.txt", "hello")).what, "a file of unrecognised content");
}

TEST(InputDetector, DirectoriesByTheirMembers) {
  TempDir d;
  fs::create_directories(d.path / "run.ssrun");
  write_trace(d.path / "run.ssrun" / "h-2.sstrace", make_synthetic_trace(size_t{20}));
  write_trace(d.path / "run.ssrun" / "h-1.sstrace", make_synthetic_trace(size_t{20}));
  d.write("run.ssrun/run.json", "{\"command\": []}");
  d.write("run.ssrun/h-3.sstrace.tmp", "SSTRACE");  // a writer's temporary is never a rank
  const DetectedInput run = detect_input(d.path / "run.ssrun");
  EXPECT_EQ(run.kind, InputKind::kRunDirectory);
  ASSERT_EQ(run.files.size(), 2u);
  EXPECT_EQ(run.files[0].filename(), "h-1.sstrace");

  d.write("kineto/rank1.json.gz", "\x1f\x8b\x08\x00");
  d.write("kineto/rank0.json", "{\"traceEvents\": []}");
  d.write("kineto/run.json", "{}");
  d.write("kineto/README", "text");
  const DetectedInput k = detect_input(d.path / "kineto");
  EXPECT_EQ(k.kind, InputKind::kKinetoDirectory);
  ASSERT_EQ(k.files.size(), 2u);
  EXPECT_EQ(list_kineto_files(d.path / "kineto"), k.files);

  fs::create_directories(d.path / "nsys");
  d.sqlite("nsys/rank0.sqlite", kNsysTables);
  EXPECT_EQ(detect_input(d.path / "nsys").kind, InputKind::kNsysDirectory);

  fs::create_directories(d.path / "empty");
  EXPECT_EQ(detect_input(d.path / "empty").what, "a directory without traces");
}

// A member named .sstrace that is not a trace would be a rank missing without
// a word (it was skipped before): an error naming it.
TEST(InputDetector, RunDirectoryMemberNamedSstraceThatIsNotOneIsAnError) {
  TempDir d;
  fs::create_directories(d.path / "run.ssrun");
  write_trace(d.path / "run.ssrun" / "h-1.sstrace", make_synthetic_trace(size_t{20}));
  const fs::path bad = d.write("run.ssrun/h-2.sstrace", "not a trace at all");
  EXPECT_EQ(error_of(d.path / "run.ssrun"), bad.string() +
                                                ": not a scalescope trace (a file of unrecognised content), "
                                                "in the run directory " +
                                                (d.path / "run.ssrun").string());
}

TEST(InputDetector, PathsThatCannotBeInputsAreOneLineErrors) {
  TempDir d;
  EXPECT_EQ(error_of(d.path / "missing"), (d.path / "missing").string() + ": no such file or directory");
  fs::create_symlink("loop-b", d.path / "loop-a");
  fs::create_symlink("loop-a", d.path / "loop-b");
  EXPECT_EQ(error_of(d.path / "loop-a"),
            (d.path / "loop-a").string() + ": too many levels of symbolic links (a symlink loop)");
  fs::create_symlink("nowhere", d.path / "dangling");
  EXPECT_EQ(error_of(d.path / "dangling"), (d.path / "dangling").string() + ": a symbolic link to a missing file");
  // A FIFO would block a reader forever: refused without opening it.
  ASSERT_EQ(::mkfifo((d.path / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(error_of(d.path / "fifo"),
            (d.path / "fifo").string() + ": a FIFO (named pipe), not a file scalescope can read");
  EXPECT_EQ(error_of("/dev/null"), "/dev/null: a character device, not a file scalescope can read");
}

TEST(InputDetector, TraceCommandsNameWhatTheyGotAndWhatToUse) {
  TempDir d;
  const fs::path db = d.sqlite("study.db", "CREATE TABLE sweeps (id); CREATE TABLE runs (id);");
  try {
    load_traces(db);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), db.string() +
                                         ": a scalescope sweep database; use scalescope scaling (or "
                                         "scalescope report) for a sweep database");
  }
  const fs::path png = d.write("x.json", "\x89PNG\r\n\x1a\n");
  try {
    load_traces(png);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), png.string() + ": a PNG image; " + std::string(kTraceInputsAccepted));
  }
}

}  // namespace
}  // namespace scalescope::trace
