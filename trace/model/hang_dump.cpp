#include "trace/model/hang_dump.hpp"

#include <nlohmann/json.hpp>

#include "base/json_fields.hpp"
#include "base/json_number.hpp"

namespace scalescope::trace {

namespace {
constexpr size_t kMaxEntries = 1 << 16;  // far above any ring: a bigger list is not a dump
}

std::string hang_dump_json(const HangDump& d) {
  nlohmann::json j = SCALESCOPE_JSON_FIELDS(d, host, pid, rank, reason, unix_ns, stalled, collectives_recorded);
  auto& cs = j["collectives"] = nlohmann::json::array();
  for (const auto& c : d.collectives)
    cs.push_back(json_with(SCALESCOPE_JSON_FIELDS(c, communicator, sequence, bytes, enter_unix_ns, leave_unix_ns),
                           {{"op", to_string(c.op)}}));
  auto& is = j["iterations"] = nlohmann::json::array();
  for (const auto& i : d.iterations) is.push_back(SCALESCOPE_JSON_FIELDS(i, index, begin_unix_ns));
  auto& py = j["python"] = nlohmann::json::array();
  for (const auto& t : d.python) {
    nlohmann::json frames = nlohmann::json::array();
    for (const auto& f : t.frames) frames.push_back(SCALESCOPE_JSON_FIELDS(f, file, line, function));
    py.push_back({{"tid", t.tid}, {"frames", std::move(frames)}});
  }
  if (!d.python_note.empty()) j["python_note"] = d.python_note;
  return j.dump(1) + "\n";
}

std::optional<HangDump> parse_hang_dump(std::string_view text, std::string* error) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  auto bad = [&](std::string why) -> std::optional<HangDump> {
    if (error) *error = std::move(why);
    return std::nullopt;
  };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  HangDump d;
  try {
    d.host = j.at("host").get<std::string>();
    d.pid = json_integer_field<uint32_t>(j, "pid", "");
    d.rank = json_integer_field<int32_t>(j, "rank", "");
    d.reason = j.at("reason").get<std::string>();
    d.unix_ns = json_integer_field<int64_t>(j, "unix_ns", "");
    d.collectives_recorded = j.value("collectives_recorded", false);
    d.stalled = j.value("stalled", false);
    const auto& cs = j.at("collectives");
    const auto& is = j.at("iterations");
    if (!cs.is_array() || !is.is_array()) return bad("\"collectives\" and \"iterations\" must be arrays");
    if (cs.size() > kMaxEntries || is.size() > kMaxEntries) return bad("more than 65,536 entries");
    for (const auto& c : cs) {
      HangCollective h;
      h.op = nccl_op_from_name(c.at("op").get<std::string>());
      h.communicator = json_integer_field<uint64_t>(c, "communicator", "");
      h.sequence = json_integer_field<uint64_t>(c, "sequence", "");
      h.bytes = json_integer_field<uint64_t>(c, "bytes", "");
      h.enter_unix_ns = json_integer_field<int64_t>(c, "enter_unix_ns", "");
      h.leave_unix_ns = json_integer_field<int64_t>(c, "leave_unix_ns", "");
      d.collectives.push_back(h);
    }
    for (const auto& i : is)
      d.iterations.push_back({json_integer_field<uint64_t>(i, "index", ""), json_integer_field<int64_t>(i, "begin_unix_ns", "")});
    if (j.contains("python")) {  // dumps of an older collector have no stacks
      const auto& py = j.at("python");
      if (!py.is_array()) return bad("\"python\" must be an array");
      if (py.size() > kMaxEntries) return bad("more than 65,536 Python threads");
      for (const auto& t : py) {
        HangPythonThread h;
        h.tid = json_integer_field<uint32_t>(t, "tid", "");
        const auto& frames = t.at("frames");
        if (!frames.is_array() || frames.size() > kMaxEntries) return bad("a Python thread's \"frames\" must be an array");
        for (const auto& f : frames)
          h.frames.push_back({f.at("file").get<std::string>(), json_integer_field<int32_t>(f, "line", ""),
                              f.at("function").get<std::string>()});
        d.python.push_back(std::move(h));
      }
    }
    d.python_note = j.value("python_note", std::string());
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("a field is missing or of the wrong type (") + e.what() + ")");
  } catch (const Error& e) {
    return bad(e.what());
  }
  return d;
}

std::filesystem::path hang_dump_dir(const std::filesystem::path& run_dir) { return run_dir / "control" / "hang"; }

std::string hang_dump_name(std::string_view host, uint32_t pid) {
  return std::string(host) + "-" + std::to_string(pid) + ".json";
}

std::filesystem::path flight_recorder_dir(const std::filesystem::path& run_dir) {
  return run_dir / "control" / "flight_recorder";
}
std::string flight_recorder_prefix(const std::filesystem::path& run_dir) { return (flight_recorder_dir(run_dir) / "rank_").string(); }

}  // namespace scalescope::trace
