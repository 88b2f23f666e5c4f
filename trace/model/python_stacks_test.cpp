// The Python bootstrap's stacks files: read whole, every malformed file a
// one-line problem naming it, never a crash.
#include "trace/model/python_stacks.hpp"

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

#include "base/error.hpp"

namespace scalescope::trace {
namespace {

const char* const kGood = R"({"kind":"scalescope python stacks","format":1,"pid":120,"ppid":100,"hostname":"h",
 "hz":100.0,"state":"on in windows","windows":1,"window_seconds":2.5,"samples":250,"thread_samples":260,
 "dropped":3,"truncated":1,"max_stacks":2000,"max_depth":64,"sampler_cpu_ns":5000000,
 "sampler_cpu_per_second":0.002,
 "threads":[{"id":120,"name":"MainThread","main":true},{"id":121,"name":"reader","main":false}],
 "stacks":[{"thread":120,"samples":200,"frames":[["/job/dataset.py",41,"__getitem__"],["/job/train.py",9,"loop"]]},
           {"thread":121,"samples":57,"frames":[["/usr/lib/python3.12/threading.py",320,"wait"]]}],
 "errors":[],"errors_total":0})";

TEST(PythonStacks, ParsesTheBootstrapsFile) {
  const PythonStacks p = parse_python_stacks(kGood, "python-stacks-h-120.json");
  EXPECT_EQ(p.pid, 120u);
  EXPECT_EQ(p.ppid, 100u);
  EXPECT_EQ(p.hostname, "h");
  EXPECT_DOUBLE_EQ(p.hz, 100);
  EXPECT_EQ(p.thread_samples, 260);
  EXPECT_EQ(p.dropped, 3);
  EXPECT_DOUBLE_EQ(p.sampler_cpu_per_second, 0.002);
  ASSERT_EQ(p.threads.size(), 2u);
  EXPECT_TRUE(p.threads[0].is_main);
  EXPECT_EQ(p.threads[1].name, "reader");
  ASSERT_EQ(p.stacks.size(), 2u);
  EXPECT_EQ(p.stacks[0].samples, 200);
  ASSERT_EQ(p.stacks[0].frames.size(), 2u);
  EXPECT_EQ(p.stacks[0].frames[0].file, "/job/dataset.py");
  EXPECT_EQ(p.stacks[0].frames[0].line, 41);
  EXPECT_EQ(p.stacks[0].frames[0].function, "__getitem__");
}

TEST(PythonStacks, WrittenTextReadsBackTheSame) {
  const PythonStacks p = parse_python_stacks(kGood, "python-stacks-h-120.json");
  const PythonStacks back = parse_python_stacks(python_stacks_json(p), "python-stacks-h-120.json");
  EXPECT_EQ(back.pid, p.pid);
  EXPECT_EQ(back.ppid, p.ppid);
  EXPECT_EQ(back.hostname, p.hostname);
  EXPECT_EQ(back.state, p.state);
  EXPECT_DOUBLE_EQ(back.window_seconds, p.window_seconds);
  EXPECT_EQ(back.truncated, p.truncated);
  ASSERT_EQ(back.threads.size(), 2u);
  EXPECT_EQ(back.threads[1].name, "reader");
  EXPECT_FALSE(back.threads[1].is_main);
  ASSERT_EQ(back.stacks.size(), 2u);
  EXPECT_EQ(back.stacks[0].samples, 200);
  EXPECT_EQ(back.stacks[0].frames[1].file, "/job/train.py");
  EXPECT_EQ(back.stacks[0].frames[1].line, 9);
  EXPECT_EQ(back.stacks[1].frames[0].function, "wait");
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(PythonStacks, MalformedFilesAreOneLineProblemsNamingTheFile) {
  const std::string good = kGood;
  const std::pair<std::string, std::string> cases[] = {
      {"{torn", "not valid JSON"},
      {"[1,2]", "not a Python stacks file"},
      {R"({"kind":"scalescope python bootstrap","pid":1})", "not a Python stacks file"},
      {replaced(good, "\"format\":1", "\"format\":7"), "format 7 is not known"},
      {replaced(good, "\"pid\":120,", ""), "no \"pid\""},
      {replaced(good, "\"pid\":120", "\"pid\":-4"), "\"pid\" is not a process or thread id"},
      {replaced(good, "\"samples\":250", "\"samples\":\"many\""), "\"samples\" is not a count"},
      {replaced(good, "\"hz\":100.0", "\"hz\":-1"), "\"hz\" is not a non-negative number"},
      {replaced(good, "[\"/job/train.py\",9,\"loop\"]", "[\"/job/train.py\",\"nine\",\"loop\"]"),
       "a frame is not [file, line, function]"},
      {replaced(good, "\"frames\":[[\"/usr", "\"frames\":[], \"x\":[[\"/usr"), "\"frames\" is not a list of frames"},
      {replaced(good, "\"main\":true", "\"main\":1"), "\"main\" is not true or false"},
      {replaced(good, "\"stacks\":[", "\"stacks\":{\"a\":1},\"no\":["), "\"stacks\" is not a list"},
  };
  for (const auto& [text, problem] : cases) {
    try {
      parse_python_stacks(text, "python-stacks-h-120.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("python-stacks-h-120.json: ", 0), 0u) << what;
      EXPECT_NE(what.find(problem), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

TEST(PythonStacks, ADirectoryIsReadFileByFileWithProblemsKept) {
  const auto dir = std::filesystem::temp_directory_path() / ("python_stacks_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "python-stacks-h-120.json") << kGood;
  std::ofstream(dir / "python-stacks-h-130.json") << "{torn";
  std::ofstream(dir / "python-h-100.json") << R"({"kind":"scalescope python bootstrap","pid":100})";
  std::ofstream(dir / "python-stacks-h-140.json.tmp") << "{half";
  std::vector<std::string> problems;
  const auto got = read_python_stacks(dir, &problems);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].file_name, "python-stacks-h-120.json");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "python-stacks-h-130.json: not valid JSON (a torn write?)");
}

}  // namespace
}  // namespace scalescope::trace
