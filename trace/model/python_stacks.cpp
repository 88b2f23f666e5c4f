#include "trace/model/python_stacks.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_fields.hpp"

namespace scalescope::trace {
namespace {

using nlohmann::json;

const json& field(const json& j, const char* key, const std::string& file_name) {
  auto it = j.find(key);
  if (it == j.end()) fail("{}: no \"{}\"", file_name, key);
  return *it;
}

int64_t count(const json& j, const char* key, const std::string& file_name) {
  const json& v = field(j, key, file_name);
  if (!v.is_number_integer() || v.get<int64_t>() < 0) fail("{}: \"{}\" is not a count", file_name, key);
  return v.get<int64_t>();
}

uint32_t id(const json& v, const char* what, const std::string& file_name) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > std::numeric_limits<uint32_t>::max())
    fail("{}: {} is not a process or thread id", file_name, what);
  return static_cast<uint32_t>(v.get<int64_t>());
}

double number(const json& j, const char* key, const std::string& file_name) {
  const json& v = field(j, key, file_name);
  if (!v.is_number() || !(v.get<double>() >= 0)) fail("{}: \"{}\" is not a non-negative number", file_name, key);
  return v.get<double>();
}

std::string text(const json& v, const char* what, const std::string& file_name) {
  if (!v.is_string()) fail("{}: {} is not a string", file_name, what);
  return v.get<std::string>();
}

}  // namespace

PythonStacks parse_python_stacks(std::string_view text_in, const std::string& file_name) {
  const json j = json::parse(text_in, nullptr, false);
  if (j.is_discarded()) fail("{}: not valid JSON (a torn write?)", file_name);
  if (!j.is_object() || j.value("kind", json()) != "scalescope python stacks")
    fail("{}: not a Python stacks file (kind is not \"scalescope python stacks\")", file_name);
  const json& format = field(j, "format", file_name);
  if (format != 1) fail("{}: format {} is not known (1 is)", file_name, format.dump());
  PythonStacks p;
  p.file_name = file_name;
  p.pid = id(field(j, "pid", file_name), "\"pid\"", file_name);
  p.ppid = id(field(j, "ppid", file_name), "\"ppid\"", file_name);
  p.hostname = text(field(j, "hostname", file_name), "\"hostname\"", file_name);
  p.hz = number(j, "hz", file_name);
  p.state = text(field(j, "state", file_name), "\"state\"", file_name);
  p.samples = count(j, "samples", file_name);
  p.thread_samples = count(j, "thread_samples", file_name);
  p.dropped = count(j, "dropped", file_name);
  p.truncated = count(j, "truncated", file_name);
  p.window_seconds = number(j, "window_seconds", file_name);
  p.sampler_cpu_per_second = number(j, "sampler_cpu_per_second", file_name);
  const json& threads = field(j, "threads", file_name);
  if (!threads.is_array()) fail("{}: \"threads\" is not a list", file_name);
  for (const json& t : threads) {
    if (!t.is_object()) fail("{}: a thread is not an object", file_name);
    const json& is_main = field(t, "main", file_name);
    if (!is_main.is_boolean()) fail("{}: a thread's \"main\" is not true or false", file_name);
    p.threads.push_back({id(field(t, "id", file_name), "a thread's \"id\"", file_name),
                         text(field(t, "name", file_name), "a thread's \"name\"", file_name), is_main.get<bool>()});
  }
  const json& stacks = field(j, "stacks", file_name);
  if (!stacks.is_array()) fail("{}: \"stacks\" is not a list", file_name);
  p.stacks.reserve(stacks.size());
  for (const json& s : stacks) {
    if (!s.is_object()) fail("{}: a stack is not an object", file_name);
    PythonSampledStack st;
    st.thread = id(field(s, "thread", file_name), "a stack's \"thread\"", file_name);
    st.samples = count(s, "samples", file_name);
    const json& frames = field(s, "frames", file_name);
    if (!frames.is_array() || frames.empty()) fail("{}: a stack's \"frames\" is not a list of frames", file_name);
    for (const json& f : frames) {
      if (!f.is_array() || f.size() != 3 || !f[0].is_string() || !f[1].is_number_integer() || !f[2].is_string() ||
          f[1].get<int64_t>() < 0 || f[1].get<int64_t>() > std::numeric_limits<int32_t>::max())
        fail("{}: a frame is not [file, line, function]", file_name);
      st.frames.push_back({f[0].get<std::string>(), static_cast<int32_t>(f[1].get<int64_t>()), f[2].get<std::string>()});
    }
    p.stacks.push_back(std::move(st));
  }
  return p;
}

std::string python_stacks_json(const PythonStacks& p) {
  json threads = json::array(), stacks = json::array();
  for (const auto& t : p.threads) threads.push_back({{"id", t.id}, {"name", t.name}, {"main", t.is_main}});
  for (const auto& s : p.stacks) {
    json frames = json::array();
    for (const auto& f : s.frames) frames.push_back(json::array({f.file, f.line, f.function}));
    stacks.push_back({{"thread", s.thread}, {"samples", s.samples}, {"frames", std::move(frames)}});
  }
  const json j = json_with(SCALESCOPE_JSON_FIELDS(p, pid, ppid, hostname, hz, state, window_seconds, samples,
                                                  thread_samples, dropped, truncated, sampler_cpu_per_second),
                           {{"kind", "scalescope python stacks"},
                            {"format", 1},
                            {"threads", std::move(threads)},
                            {"stacks", std::move(stacks)}});
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<PythonStacks> read_python_stacks(const std::filesystem::path& run_dir, std::vector<std::string>* problems) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(run_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(kPythonStacksPrefix) && e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<PythonStacks> out;
  for (const auto& path : files) {
    const std::string name = path.filename().string();
    try {
      std::ifstream in(path, std::ios::binary);
      if (!in) fail("{}: cannot be read", name);
      std::ostringstream s;
      s << in.rdbuf();
      out.push_back(parse_python_stacks(s.str(), name));
    } catch (const Error& e) {
      if (problems) problems->push_back(e.what());
    }
  }
  return out;
}

}  // namespace scalescope::trace
