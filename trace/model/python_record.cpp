#include "trace/model/python_record.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "base/json_number.hpp"

#include "trace/model/python_stacks.hpp"

namespace scalescope::trace {
namespace fs = std::filesystem;

namespace {

// "process_groups": [{"name": "0", "description": "default_pg", "ranks": [0, 1], "backend": "nccl"}].
// A group with no name or a rank out of range is left out, not guessed.
std::vector<ProcessGroup> process_groups(const nlohmann::json& d) {
  std::vector<ProcessGroup> out;
  auto it = d.find("process_groups");
  if (it == d.end() || !it->is_array()) return out;
  for (const auto& g : *it) {
    if (out.size() >= kMaxProcessGroups) break;
    if (!g.is_object()) continue;
    ProcessGroup pg;
    pg.name = g.value("name", "");
    pg.description = g.value("description", "");
    pg.backend = g.value("backend", "");
    bool ok = !pg.name.empty();
    if (auto r = g.find("ranks"); r != g.end() && r->is_array()) {
      for (const auto& x : *r) {
        const auto rank = json_integer<int32_t>(x);
        if (!rank || *rank < 0 || pg.ranks.size() >= kMaxProcessGroupRanks) {
          ok = false;
          break;
        }
        pg.ranks.push_back(*rank);
      }
    }
    if (!ok) continue;
    std::sort(pg.ranks.begin(), pg.ranks.end());
    pg.ranks.erase(std::unique(pg.ranks.begin(), pg.ranks.end()), pg.ranks.end());
    out.push_back(std::move(pg));
  }
  return out;
}

}  // namespace

std::optional<PythonRecord> parse_python_record(std::string_view text) {
  const auto j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  try {
    if (j.value("kind", "") != "scalescope python bootstrap") return std::nullopt;
    PythonRecord r;
    r.pid = json_integer_or<uint32_t>(j, "pid", 0, "");
    r.hostname = j.value("hostname", "");
    r.json = j.dump();
    if (auto d = j.find("distributed"); d != j.end() && d->is_object()) {
      r.rank = json_integer_or<int32_t>(*d, "rank", -1, "");
      r.local_rank = json_integer_or<int32_t>(*d, "local_rank", -1, "");
      r.process_groups = process_groups(*d);
    }
    const std::string torch = j.value("torch", "");
    if (torch.starts_with("import failed")) r.problems.push_back("torch " + torch);
    if (auto hooks = j.find("hooks"); hooks != j.end() && hooks->is_object())
      for (const auto& [name, state] : hooks->items())
        if (state.is_string() &&
            (state.get<std::string>().starts_with("missing") || state.get<std::string>().starts_with("failed")))
          r.problems.push_back(name + " " + state.get<std::string>());
    return r;
  } catch (const std::exception&) {  // nlohmann's type errors and Error
    return std::nullopt;  // a field of the wrong type: not one of the bootstrap's records
  }
}

std::vector<PythonRecord> read_python_records(const fs::path& run_dir, const std::string& only_host) {
  std::vector<PythonRecord> out;
  std::error_code ec;
  std::vector<fs::path> files;
  const std::string prefix = std::string(kPythonRecordPrefix) + only_host + (only_host.empty() ? "" : "-");
  for (const auto& e : fs::directory_iterator(run_dir, ec)) {
    const std::string name = e.path().filename().string();
    // python-stacks-*.json are the Python sampler's (trace/model/python_stacks.hpp).
    if (e.path().extension() == ".json" && name.starts_with(prefix) && !name.starts_with(kPythonStacksPrefix) &&
        e.is_regular_file(ec))
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    if (auto r = parse_python_record(text.str())) out.push_back(std::move(*r));
  }
  return out;
}

const PythonRecord* record_of_process(const std::vector<PythonRecord>& records, std::string_view hostname,
                                      uint32_t pid) {
  for (const PythonRecord& r : records)
    if (r.pid == pid && r.hostname == hostname) return &r;
  return nullptr;
}

bool take_python_record(const PythonRecord& record, int32_t& rank, std::vector<ProcessGroup>& groups) {
  bool gain = false;
  if (groups.empty() && !record.process_groups.empty()) {
    groups = record.process_groups;
    gain = true;
  }
  if (rank < 0 && record.rank >= 0) {
    rank = record.rank;
    gain = true;
  }
  return gain;
}

size_t attach_python_records(const std::vector<PythonRecord>& records, std::vector<Trace>& traces) {
  size_t gained = 0;
  for (Trace& t : traces)
    if (const PythonRecord* r = record_of_process(records, t.meta.hostname, t.meta.pid))
      gained += take_python_record(*r, t.meta.rank, t.meta.process_groups) ? 1 : 0;
  return gained;
}

}  // namespace scalescope::trace
