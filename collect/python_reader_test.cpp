// The outside Python reader on live /usr/bin/python3 children whose stacks
// are known (nested calls, a second thread, forked workers), its location
// table decoder against the interpreter's own co_lines(), and its notes for
// a process of another version and for one that is not Python at all.
#include "collect/python_reader.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "collect/python_outside.hpp"

namespace scalescope::collect {
namespace {

namespace fs = std::filesystem;
// /usr/bin/python3 (3.11 on the development machine); SCALESCOPE_TEST_PYTHON
// names another (the GPU machine's 3.12).
std::string python() {
  const char* p = std::getenv("SCALESCOPE_TEST_PYTHON");
  return p && *p ? p : "/usr/bin/python3";
}

// A child with its stdin and stdout on pipes; killed when the test ends.
class Child {
 public:
  explicit Child(std::vector<std::string> argv) {
    int in[2], out[2];
    EXPECT_EQ(pipe(in), 0);
    EXPECT_EQ(pipe(out), 0);
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);  // its own group: the destructor ends it with every process it forked
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    stdout_ = fdopen(out[0], "r");
  }
  ~Child() {
    close(stdin_);
    // The group, not the process alone: forked workers left behind would
    // spin on (and hold the test's output open) until their own end.
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    fclose(stdout_);
  }
  uint32_t pid() const { return static_cast<uint32_t>(pid_); }
  std::string line() {
    char buf[4096];
    return fgets(buf, sizeof buf, stdout_) ? std::string(buf) : std::string();
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  FILE* stdout_ = nullptr;
};

fs::path write_script(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / (name + "-" + std::to_string(getpid()) + ".py");
  std::ofstream(p) << text;
  return p;
}

// Lines of the script below, counted from 1.
constexpr int kLeafLine = 6, kMiddleLine = 9, kMethodLine = 13, kWorkerLine = 16;
const char* const kNested = R"(import sys
import threading
import time

def leaf():
    time.sleep(600)

def middle():
    leaf()

class Outer:
    def method(self):
        middle()

def worker(started):
    started.set(); time.sleep(600)

started = threading.Event()
t = threading.Thread(target=worker, args=(started,), name="sleeper")
t.start()
started.wait()
print(threading.get_native_id(), t.native_id, sys.version_info.minor, flush=True)
Outer().method()
)";

TEST(PythonReader, NamesFunctionsFilesAndLinesOfALivePython) {
  const fs::path script = write_script("nested", kNested);
  Child child({python(), script.string()});
  std::istringstream ids(child.line());
  uint32_t main_id = 0, sleeper_id = 0, minor = 0;
  ids >> main_id >> sleeper_id >> minor;
  ASSERT_EQ(main_id, child.pid());
  ASSERT_NE(sleeper_id, 0u);

  std::string note;
  bool is_python = false;
  auto reader = PythonProcessReader::open(child.pid(), &note, &is_python);
  ASSERT_TRUE(reader) << note;
  EXPECT_TRUE(is_python);
  EXPECT_EQ(reader->version_minor(), minor);
  // The main thread may still be between print and sleep: sample until it sleeps.
  std::vector<PythonThreadStack> stacks;
  const PythonThreadStack* main_stack = nullptr;
  const PythonThreadStack* sleeper = nullptr;
  for (int i = 0; i < 200 && !(main_stack && main_stack->frames.size() >= 4 && sleeper); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(reader->sample(&stacks));
    main_stack = sleeper = nullptr;
    for (const auto& s : stacks) {
      if (s.native_id == main_id) main_stack = &s;
      if (s.native_id == sleeper_id) sleeper = &s;
    }
  }
  ASSERT_TRUE(main_stack);
  ASSERT_EQ(main_stack->frames.size(), 4u);  // leaf, middle, Outer.method, <module>
  const auto& f = main_stack->frames;
  EXPECT_EQ(f[0].function, "leaf");
  EXPECT_EQ(f[0].line, kLeafLine);
  EXPECT_EQ(f[0].file, script.string());
  EXPECT_EQ(f[1].function, "middle");
  EXPECT_EQ(f[1].line, kMiddleLine);
  EXPECT_EQ(f[2].function, "Outer.method");  // the qualified name
  EXPECT_EQ(f[2].line, kMethodLine);
  EXPECT_EQ(f[3].function, "<module>");
  EXPECT_EQ(f[3].line, 23);
  EXPECT_FALSE(main_stack->truncated);
  ASSERT_TRUE(sleeper);
  ASSERT_GE(sleeper->frames.size(), 2u);  // worker, then threading's run and bootstrap frames
  EXPECT_EQ(sleeper->frames[0].function, "worker");
  EXPECT_EQ(sleeper->frames[0].line, kWorkerLine);
  EXPECT_TRUE(sleeper->frames[1].file.ends_with("threading.py")) << sleeper->frames[1].file;
  EXPECT_EQ(reader->torn(), 0u);
  fs::remove(script);
}

TEST(PythonReader, DeepStacksKeepTheLeafAndSayTheyWereCut) {
  const fs::path script = write_script("deep", R"(import sys, time
def down(n):
    if n == 0:
        print("ready", flush=True); time.sleep(600)
    down(n - 1)
down(100)
)");
  Child child({python(), script.string()});
  ASSERT_EQ(child.line(), "ready\n");
  std::string note;
  auto reader = PythonProcessReader::open(child.pid(), &note);
  ASSERT_TRUE(reader) << note;
  std::vector<PythonThreadStack> stacks;
  for (int i = 0; i < 100 && (stacks.empty() || stacks[0].frames[0].line != 4); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(reader->sample(&stacks));
  }
  ASSERT_EQ(stacks.size(), 1u);
  EXPECT_EQ(stacks[0].frames.size(), kMaxPythonDepth);
  EXPECT_TRUE(stacks[0].truncated);
  EXPECT_EQ(stacks[0].frames[0].line, 4);
  EXPECT_EQ(stacks[0].frames[1].line, 5);
  fs::remove(script);
}

// Every instruction of real code objects: the decoder's line is the one
// the interpreter's own co_lines() gives (None as 0).
TEST(PythonReader, LocationTableLinesAreTheInterpretersOwn) {
  const fs::path script = write_script("lines", R"(import sys, types
def walk(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)
import json, threading
for mod in (json.decoder, threading):
    src = open(mod.__file__).read()
    for code in walk(compile(src, mod.__file__, "exec")):
        spans = " ".join("%d:%d:%d" % (s, e, l or 0) for s, e, l in code.co_lines())
        print(code.co_firstlineno, code.co_linetable.hex(), spans)
)");
  FILE* out = popen((python() + " " + script.string()).c_str(), "r");
  ASSERT_TRUE(out);
  char buf[1 << 16];
  int codes = 0, checked = 0;
  while (fgets(buf, sizeof buf, out)) {
    std::istringstream in(buf);
    int first = 0;
    std::string hex;
    in >> first >> hex;
    std::vector<uint8_t> table;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) table.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    ++codes;
    std::string span;
    while (in >> span) {
      int start = 0, end = 0, line = 0;
      ASSERT_EQ(std::sscanf(span.c_str(), "%d:%d:%d", &start, &end, &line), 3);
      for (int offset = start; offset < end; offset += 2, ++checked)
        ASSERT_EQ(line_for_offset(table, first, offset), line) << "first line " << first << " offset " << offset;
    }
  }
  pclose(out);
  EXPECT_GT(codes, 50);
  EXPECT_GT(checked, 5000);
  EXPECT_EQ(line_for_offset({}, 10, 0), 0);
  fs::remove(script);
}

TEST(PythonReader, AnotherVersionIsANoteNotARead) {
  Child child({SCALESCOPE_FAKE_PYTHON});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // exec'd by now
  std::string note;
  bool is_python = false;
  for (int i = 0; i < 100 && fs::read_symlink("/proc/" + std::to_string(child.pid()) + "/exe").filename() !=
                                 fs::path(SCALESCOPE_FAKE_PYTHON).filename();
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(PythonProcessReader::open(child.pid(), &note, &is_python));
  EXPECT_TRUE(is_python);
  EXPECT_EQ(note, "python stacks from outside: CPython 3.13 not supported");
  EXPECT_EQ(cpython_layout(0x030A0FF0), nullptr);
  EXPECT_EQ(cpython_layout(0x030D00F0), nullptr);
  EXPECT_EQ(cpython_layout(0x020700F0), nullptr);
  ASSERT_NE(cpython_layout(0x030C03F0), nullptr);
  EXPECT_EQ(cpython_layout(0x030C03F0)->minor, 12u);
}

TEST(PythonReader, NotPythonIsANote) {
  Child child({"/bin/sleep", "600"});
  // Until the exec is over: its memory map names sleep (a loaded machine,
  // or the sanitizers' fork, can take over a second).
  auto exec_done = [&] {
    std::ifstream maps("/proc/" + std::to_string(child.pid()) + "/maps");
    const std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    return text.find("/sleep") != std::string::npos;
  };
  for (int i = 0; i < 1000 && !exec_done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(exec_done()) << "sleep did not start within 10 s";
  std::string note;
  bool is_python = true;
  EXPECT_FALSE(PythonProcessReader::open(child.pid(), &note, &is_python));
  EXPECT_FALSE(is_python);
  EXPECT_NE(note.find("not a Python process"), std::string::npos) << note;
  EXPECT_FALSE(PythonProcessReader::open(0x7ffffff0, &note));  // no such process
}

// The process tree: a parent and two forked workers, each spinning in a
// known function; every process is read, workers with their parent's pid.
TEST(OutsidePythonSampler, ReadsEveryPythonProcessOfTheTree) {
  const fs::path script = write_script("tree", R"(import multiprocessing as mp, os, sys, time
def spin(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass
def work(_):
    spin(600)
if __name__ == "__main__":
    mp.set_start_method("fork")
    ps = [mp.Process(target=work, args=(i,)) for i in range(2)]
    for p in ps: p.start()
    print(" ".join(str(p.pid) for p in ps), flush=True)
    spin(600)
)");
  Child child({python(), script.string()});
  std::istringstream ids(child.line());
  uint32_t w1 = 0, w2 = 0;
  ids >> w1 >> w2;
  OutsidePythonSampler sampler({.root_pid = child.pid(), .hz = 200, .hostname = "h"});
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  sampler.stop();
  const auto results = sampler.results();
  ASSERT_EQ(results.size(), 3u);
  for (const trace::PythonStacks& p : results) {
    SCOPED_TRACE(p.pid);
    EXPECT_TRUE(p.pid == child.pid() || p.pid == w1 || p.pid == w2);
    EXPECT_EQ(p.ppid, p.pid == child.pid() ? static_cast<uint32_t>(getpid()) : child.pid());
    EXPECT_EQ(p.file_name, "python-stacks-h-" + std::to_string(p.pid) + ".json");
    EXPECT_GT(p.samples, 20);
    ASSERT_FALSE(p.stacks.empty());
    // The hottest stack's leaf is spin's loop (lines 4 and 5).
    const auto& leaf = p.stacks[0].frames[0];
    EXPECT_EQ(leaf.function, "spin");
    EXPECT_TRUE(leaf.line == 4 || leaf.line == 5) << leaf.line;
    EXPECT_EQ(p.stacks[0].thread, p.pid);
    ASSERT_EQ(p.threads.size(), 1u);
    EXPECT_TRUE(p.threads[0].is_main);
    // What profile writes reads back with the bootstrap's parser.
    const auto back = trace::parse_python_stacks(trace::python_stacks_json(p), p.file_name);
    EXPECT_EQ(back.stacks[0].frames[0].function, "spin");
  }
  EXPECT_TRUE(sampler.notes().empty());
  fs::remove(script);
}

}  // namespace
}  // namespace scalescope::collect
