// collect_python_outside --pid PID [--hz 100] --out DIR: reads the Python
// stacks of PID and its descendants from outside until PID exits, then
// writes python-stacks-<host>-<pid>.json per Python process into DIR and
// prints the reader's notes. bench/python_stacks/outside_ab.py drives it.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "collect/python_outside.hpp"

int main(int argc, char** argv) {
  uint32_t pid = 0;
  double hz = 100;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--pid") pid = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    else if (a == "--hz") hz = std::strtod(argv[i + 1], nullptr);
    else if (a == "--out") out = argv[i + 1];
  }
  if (pid == 0 || out.empty() || !(hz > 0 && hz <= 1000)) {
    std::fprintf(stderr, "usage: collect_python_outside --pid PID [--hz 1..1000] --out DIR\n");
    return 2;
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  scalescope::collect::OutsidePythonSampler sampler({.root_pid = pid, .hz = hz, .hostname = host});
  sampler.start();
  while (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // A zombie child of someone else still answers kill: its stat says Z.
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (!stat || (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z')) break;
  }
  sampler.stop();
  for (const auto& note : sampler.notes()) std::printf("%s\n", note.c_str());
  for (const auto& p : sampler.results()) {
    const std::filesystem::path path = std::filesystem::path(out) / p.file_name;
    std::ofstream f(path);
    f << scalescope::trace::python_stacks_json(p) << '\n';
    if (!f) {
      std::fprintf(stderr, "collect_python_outside: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
