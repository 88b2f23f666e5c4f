#include "trace/import/input_detector.hpp"

#include <sqlite3.h>
#include <zlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "trace/model/synthetic_trace.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/trace_source.hpp"

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
  SyntheticOptions o;
  o.events = 20;
  o.rank = 2;
  write_trace(d.path / "run.ssrun" / "h-2.sstrace", make_synthetic_trace(o));
  o.rank = 1;
  write_trace(d.path / "run.ssrun" / "h-1.sstrace", make_synthetic_trace(o));
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

std::string gzip_of(std::string_view text) {
  const fs::path tmp = fs::temp_directory_path() / ("scalescope-detect-gz-" + std::to_string(::getpid()));
  gzFile gz = gzopen(tmp.c_str(), "wb");
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
  std::ifstream in(tmp, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(tmp);
  return bytes;
}

constexpr const char* kKinetoRank0 = R"({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": []})";
constexpr const char* kKinetoRank1 = R"({"schemaVersion": 1, "distributedInfo": {"rank": 1}, "traceEvents": []})";

// .sstrace files beside Kineto traces or nsys exports: reading one kind only
// left the others' ranks out without a word (after `import rank0.json.gz`
// wrote rank0.sstrace beside the Kineto traces, analyze showed one rank).
TEST(InputDetector, FolderMixingKindsIsRefusedNamingBoth) {
  TempDir d;
  d.write("mixed/rank0.json.gz", gzip_of(kKinetoRank0));
  d.write("mixed/rank1.json", kKinetoRank1);
  write_trace(d.path / "mixed" / "rank0.sstrace", make_synthetic_trace(size_t{20}));
  const std::string e = error_of(d.path / "mixed");
  EXPECT_NE(e.find("holds scalescope traces (rank0.sstrace) and PyTorch-profiler traces (rank0.json.gz, rank1.json)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("move one kind to its own folder"), std::string::npos) << e;
  fs::remove(d.path / "mixed" / "rank0.sstrace");
  d.sqlite("mixed/rank2.sqlite", kNsysTables);
  EXPECT_NE(error_of(d.path / "mixed").find("PyTorch-profiler traces (rank0.json.gz, rank1.json) and Nsight Systems "
                                            "exports (rank2.sqlite)"),
            std::string::npos)
      << error_of(d.path / "mixed");
  // A run directory's own JSON files (run.json, manifests, per-process facts) are no mix.
  fs::create_directories(d.path / "run.ssrun");
  write_trace(d.path / "run.ssrun" / "h-1.sstrace", make_synthetic_trace(size_t{20}));
  d.write("run.ssrun/h-1.json", R"({"pid": 1, "rank": 0})");
  d.write("run.ssrun/manifest-h.json", R"({"scalescope_manifest": 1, "files": []})");
  const DetectedInput run = detect_input(d.path / "run.ssrun");
  EXPECT_EQ(run.kind, InputKind::kRunDirectory);
  EXPECT_TRUE(run.skipped.empty());
}

// A file named like a trace that is not one (an HTML report written over
// rank0.json.gz, a config.json, an empty file) is left out and named, where a
// corrupt trace stops the reading naming its file (the importer's error).
TEST(InputDetector, FilesNamedLikeTracesThatAreNotAreListedAsSkipped) {
  TempDir d;
  d.write("gpt2/rank0.json.gz", "<!DOCTYPE html><html><body>report</body></html>");
  d.write("gpt2/rank1.json.gz", gzip_of(kKinetoRank1));
  d.write("gpt2/config.json", R"({"model": "gpt2", "layers": 12})");
  d.write("gpt2/meta.json.gz", gzip_of(R"({"model": "gpt2"})"));
  d.write("gpt2/empty.json", "");
  d.sqlite("gpt2/other.sqlite", "CREATE TABLE t (x);");
  d.write("gpt2/README.md", "not named like a trace: not listed");
  const DetectedInput in = detect_input(d.path / "gpt2");
  EXPECT_EQ(in.kind, InputKind::kKinetoDirectory);
  ASSERT_EQ(in.files.size(), 1u);
  EXPECT_EQ(in.files[0].filename(), "rank1.json.gz");
  ASSERT_EQ(in.skipped.size(), 5u);
  EXPECT_EQ(skipped_list(in.skipped),
            "config.json (a JSON file that is not a profiler trace (no traceEvents)), empty.json (an empty file), "
            "meta.json.gz (a JSON file that is not a profiler trace (no traceEvents)), "
            "other.sqlite (an SQLite database that is neither an Nsight Systems export nor a sweep database), "
            "rank0.json.gz (an HTML or XML document)");
  // A gzip member cut short is a trace (its head says so) that the importer
  // then refuses naming the file: never dropped.
  const std::string whole = gzip_of(std::string(kKinetoRank0) + std::string(20000, ' '));
  d.write("gpt2/rank0.json.gz", whole.substr(0, whole.size() / 2));
  const DetectedInput cut = detect_input(d.path / "gpt2");
  ASSERT_EQ(cut.files.size(), 2u);
  EXPECT_EQ(cut.files[0].filename(), "rank0.json.gz");
  try {
    load_traces(d.path / "gpt2");
    FAIL() << "expected an error for the truncated rank";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank0.json.gz"), std::string::npos) << e.what();
  }
  // A folder with only files that are not traces says what they are.
  fs::remove_all(d.path / "gpt2");
  d.write("gpt2/config.json", R"({"model": "gpt2"})");
  EXPECT_EQ(detect_input(d.path / "gpt2").what,
            "a directory without traces (config.json (a JSON file that is not a profiler trace (no traceEvents)))");
}

// Two copies of one trace in a folder were read as two ranks ("2 of 2 ranks"):
// the same bytes, or the same rank claimed twice, are refused naming both.
TEST(InputDetector, CopiesOfOneTraceAndTwoTracesOfOneRankAreRefused) {
  TempDir d;
  d.write("k/a.json", kKinetoRank0);
  d.write("k/b.json", kKinetoRank0);
  d.write("k/c.json", kKinetoRank1);
  EXPECT_EQ(error_of(d.path / "k"), (d.path / "k").string() +
                                        ": a.json and b.json are copies of one trace (the same bytes); a folder "
                                        "holds one trace per rank: remove one");
  fs::create_directories(d.path / "run.ssrun");
  write_trace(d.path / "run.ssrun" / "h-1.sstrace", make_synthetic_trace(size_t{20}));
  fs::copy_file(d.path / "run.ssrun" / "h-1.sstrace", d.path / "run.ssrun" / "h-1-copy.sstrace");
  EXPECT_NE(error_of(d.path / "run.ssrun").find("h-1-copy.sstrace and h-1.sstrace are copies of one trace"),
            std::string::npos)
      << error_of(d.path / "run.ssrun");
  // Same rank, different bytes (a copy edited, two runs): refused when read.
  d.write("k/b.json", R"({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": [ ]})");
  try {
    load_traces(d.path / "k");
    FAIL() << "expected an error for two traces of rank 0";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), (d.path / "k").string() +
                                         ": a.json and b.json both hold rank 0; a run holds one trace per rank "
                                         "(two runs, or a copy, in one folder?)");
  }
  // Rank unknown (-1) may repeat: such traces are numbered in file order.
  d.write("k/a.json", R"({"schemaVersion": 1, "traceEvents": []})");
  d.write("k/b.json", R"({"schemaVersion": 1, "traceEvents": [ ]})");
  EXPECT_EQ(load_traces(d.path / "k").size(), 3u);
}

// A trace and its gzipped copy (`gzip -k trace.json`) without a rank of their
// own were read as two ranks: a .json.gz is compared by what it inflates to.
TEST(InputDetector, AGzippedCopyBesideItsTraceIsACopy) {
  TempDir d;
  const std::string trace = R"({"schemaVersion": 1, "traceEvents": []})";
  d.write("k/trace.json", trace);
  d.write("k/trace.json.gz", gzip_of(trace));
  EXPECT_EQ(error_of(d.path / "k"), (d.path / "k").string() +
                                        ": trace.json and trace.json.gz are copies of one trace (the same bytes once "
                                        "inflated); a folder holds one trace per rank: remove one");
  // Two gzip files of one trace.
  fs::remove(d.path / "k" / "trace.json");
  d.write("k/again.json.gz", gzip_of(trace));
  EXPECT_NE(error_of(d.path / "k").find("again.json.gz and trace.json.gz are copies of one trace"), std::string::npos)
      << error_of(d.path / "k");
  // Other content of the same size is not a copy.
  fs::remove(d.path / "k" / "again.json.gz");
  d.write("k/other.json", R"({"schemaVersion": 7, "traceEvents": []})");
  EXPECT_EQ(load_traces(d.path / "k").size(), 2u);
}

}  // namespace
}  // namespace scalescope::trace
