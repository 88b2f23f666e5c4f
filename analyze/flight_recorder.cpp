#include "analyze/flight_recorder.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/json_fields.hpp"
#include "base/json_number.hpp"

#include "analyze/hang_report.hpp"
#include "analyze/pickle_data.hpp"
#include "base/error.hpp"
#include "trace/model/hang_dump.hpp"

namespace scalescope::analyze {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A dump bigger than this is not one (2,000 entries with stacks are a few MB).
constexpr uintmax_t kMaxDumpBytes = uintmax_t{1} << 30;

// A file name without the extension a user may have given a dump saved by
// hand (PyTorch's own files have none).
std::string without_extension(std::string name) {
  for (const char* ext : {".json", ".pkl", ".pickle"})
    if (name.size() > std::string_view(ext).size() && name.ends_with(ext)) return name.substr(0, name.size() - std::string_view(ext).size());
  return name;
}

// The rank PyTorch appended to the prefix: the digits the file name ends with.
std::optional<int32_t> rank_of(std::string name) {
  name = without_extension(std::move(name));
  size_t i = name.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1]))) --i;
  if (i == name.size() || name.size() - i > 9) return std::nullopt;
  return static_cast<int32_t>(std::stol(name.substr(i)));
}

// An int field: an integer, or the decimal text of one (the JSON dump writes
// pg_status as strings); null and absent give `absent`.
int64_t int_field(const json& o, const char* key, const std::string& where, std::optional<int64_t> absent) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) {
    if (absent) return *absent;
    fail("{}: {} is missing", where, key);
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_unsigned() && it->get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(it->get<uint64_t>());
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (!s.empty() && s.size() < 19 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::stoll(s);
  }
  fail("{}: {} is not an integer", where, key);
}

std::string string_field(const json& o, const char* key, const std::string& where, bool required) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) {
    if (required) fail("{}: {} is missing", where, key);
    return "";
  }
  if (!it->is_string()) fail("{}: {} is not a string", where, key);
  return it->get<std::string>();
}

// pg_config's "ranks": "[0, 1, 2, 3]" (PyTorch writes the list as text).
std::vector<int32_t> parse_ranks(const json& v, const std::string& where) {
  std::vector<int32_t> out;
  if (v.is_array()) {
    for (const auto& r : v) {
      const auto rank = json_integer<int32_t>(r);
      if (!rank) fail("{}: ranks holds a non-integer", where);
      out.push_back(*rank);
    }
    return out;
  }
  if (!v.is_string()) fail("{}: ranks is neither a list nor its text", where);
  const std::string& s = v.get_ref<const std::string&>();
  for (size_t i = 0; i < s.size();) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) && j - i < 9) ++j;
      out.push_back(static_cast<int32_t>(std::stol(s.substr(i, j - i))));
      i = j;
    } else if (s[i] == '[' || s[i] == ']' || s[i] == ',' || s[i] == ' ') {
      ++i;
    } else {
      fail("{}: ranks \"{}\" is not a list of ranks", where, s.size() > 40 ? s.substr(0, 40) + "..." : s);
    }
  }
  return out;
}

FlightRecorderEntry parse_entry(const json& e, const std::string& where) {
  if (!e.is_object()) fail("{}: not a dict", where);
  FlightRecorderEntry out;
  out.record_id = int_field(e, "record_id", where, 0);
  out.collective_seq_id = int_field(e, "collective_seq_id", where, std::nullopt);
  out.p2p_seq_id = int_field(e, "p2p_seq_id", where, 0);
  out.time_created_ns = int_field(e, "time_created_ns", where, 0);
  out.profiling_name = string_field(e, "profiling_name", where, true);
  out.state = string_field(e, "state", where, true);
  if (out.state != "scheduled" && out.state != "started" && out.state != "completed")
    fail("{}: state \"{}\" is none of scheduled, started, completed", where,
         out.state.size() > 40 ? out.state.substr(0, 40) + "..." : out.state);
  if (const auto it = e.find("is_p2p"); it != e.end() && !it->is_null()) {
    if (!it->is_boolean()) fail("{}: is_p2p is not a bool", where);
    out.is_p2p = it->get<bool>();
  }
  // process_group: (name, desc), a tuple in the pickle and a list in JSON.
  if (const auto it = e.find("process_group"); it != e.end() && !it->is_null()) {
    if (!it->is_array() || it->size() != 2 || !(*it)[0].is_string() || !(*it)[1].is_string())
      fail("{}: process_group is not a (name, description) pair", where);
    out.pg_name = (*it)[0].get<std::string>();
    out.pg_desc = (*it)[1].get<std::string>();
  } else {
    out.pg_name = std::to_string(int_field(e, "pg_id", where, std::nullopt));
  }
  return out;
}

bool is_json_text(std::string_view bytes) {
  for (char c : bytes) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return c == '{';
  }
  return false;
}

std::string shorten(std::string s) { return s.size() > 60 ? s.substr(0, 60) + "..." : s; }

std::string describe(const FlightRecorderEntry& e) {
  return fmt::format("{} #{} ({})", shorten(e.profiling_name), e.collective_seq_id, e.state);
}

}  // namespace

FlightRecorderDump parse_flight_recorder_dump(std::string_view bytes, const std::string& file, int32_t rank) {
  json root;
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80) {
    std::string why;
    auto v = read_pickle_data(bytes, &why);
    if (!v) fail("{}: not a flight recorder dump: {}", file, why);
    root = std::move(*v);
  } else if (is_json_text(bytes)) {
    root = json::parse(bytes.begin(), bytes.end(), nullptr, false);
    if (root.is_discarded()) fail("{}: not a flight recorder dump: the JSON does not parse", file);
  } else {
    fail("{}: not a flight recorder dump (neither a pickle nor JSON)", file);
  }
  if (!root.is_object()) fail("{}: not a flight recorder dump (not a dict)", file);
  FlightRecorderDump d;
  d.file = file;
  d.rank = rank;
  d.version = string_field(root, "version", file, true);
  if (const auto it = root.find("pg_config"); it != root.end() && !it->is_null()) {
    if (!it->is_object()) fail("{}: pg_config is not a dict", file);
    for (const auto& [name, group] : it->items()) {
      const std::string where = fmt::format("{}: pg_config {}", file, shorten(name));
      if (!group.is_object()) fail("{}: not a dict", where);
      const auto ranks = group.find("ranks");
      if (ranks == group.end()) fail("{}: ranks is missing", where);
      d.group_ranks.emplace_back(name, parse_ranks(*ranks, where));
    }
  }
  if (const auto it = root.find("entries"); it != root.end() && !it->is_null()) {  // absent when empty (JSON)
    if (!it->is_array()) fail("{}: entries is not a list", file);
    for (size_t i = 0; i < it->size(); ++i) d.entries.push_back(parse_entry((*it)[i], fmt::format("{}: entry {}", file, i)));
  }
  return d;
}

FlightRecorderDump read_flight_recorder_dump(const fs::path& file) {
  const auto rank = rank_of(file.filename().string());
  if (!rank) fail("{}: no rank at the end of the file name (PyTorch writes PREFIX<rank>)", file.string());
  std::error_code ec;
  const uintmax_t size = fs::file_size(file, ec);
  if (ec) fail("{}: cannot read: {}", file.string(), ec.message());
  if (size > kMaxDumpBytes) fail("{}: {} bytes, too big for a flight recorder dump", file.string(), size);
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("{}: cannot open", file.string());
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) fail("{}: cannot read", file.string());
  return parse_flight_recorder_dump(bytes, file.string(), *rank);
}

namespace {

// The files a place names: the file itself, a directory's files that end with
// a rank, or the files PREFIX<rank>.
std::vector<fs::path> dump_files(const fs::path& where) {
  std::error_code ec;
  if (fs::is_regular_file(where, ec)) return {where};
  std::vector<fs::path> out;
  const bool dir = fs::is_directory(where, ec);
  const fs::path folder = dir ? where : (where.has_parent_path() ? where.parent_path() : fs::path("."));
  const std::string prefix = dir ? "" : where.filename().string();
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_regular_file(ec) || name.starts_with(".") || !name.starts_with(prefix)) continue;
    const std::string rest = without_extension(name.substr(prefix.size()));
    if (!rank_of(name) || (!dir && (rest.empty() || !std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; }))))
      continue;
    out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void check_ranks_distinct(const std::vector<FlightRecorderDump>& dumps) {
  std::map<int32_t, const std::string*> seen;
  for (const auto& d : dumps)
    if (auto [it, fresh] = seen.emplace(d.rank, &d.file); !fresh)
      fail("{}: rank {} again (also {})", d.file, d.rank, *it->second);
}

}  // namespace

std::vector<FlightRecorderDump> read_flight_recorder_dumps(const fs::path& where) {
  const auto files = dump_files(where);
  if (files.empty())
    fail("{}: no flight recorder dumps (a dump file, a directory of them, or their prefix, as in "
         "TORCH_FR_DUMP_TEMP_FILE)",
         where.string());
  std::vector<FlightRecorderDump> out;
  for (const auto& f : files) out.push_back(read_flight_recorder_dump(f));
  check_ranks_distinct(out);
  return out;
}


std::vector<FlightRecorderDump> read_run_flight_recorder_dumps(const fs::path& run_dir, std::vector<std::string>* warnings) {
  std::vector<FlightRecorderDump> out;
  std::error_code ec;
  if (!fs::is_directory(trace::flight_recorder_dir(run_dir), ec)) return out;
  for (const auto& f : dump_files(trace::flight_recorder_dir(run_dir))) {
    try {
      out.push_back(read_flight_recorder_dump(f));
      check_ranks_distinct(out);
    } catch (const Error& e) {
      if (out.size() > 0 && out.back().file == f.string()) out.pop_back();  // a second dump of a rank: the first stays
      if (warnings) warnings->push_back(e.what());
    }
  }
  return out;
}

FlightRecorderHang find_flight_recorder_hang(const std::vector<FlightRecorderDump>& dumps) {
  FlightRecorderHang h;
  h.dumps = dumps.size();
  if (dumps.empty()) return h;
  std::set<int32_t> dumped;
  for (const auto& d : dumps) dumped.insert(d.rank);
  // Each group's ranks from pg_config (every dump names every group it knows).
  std::map<std::string, std::set<int32_t>> members;
  for (const auto& d : dumps)
    for (const auto& [name, ranks] : d.group_ranks) members[name].insert(ranks.begin(), ranks.end());
  // How far each rank got in each group: its entry of the highest collective_seq_id.
  std::map<std::string, std::map<int32_t, const FlightRecorderEntry*>> furthest;
  for (const auto& d : dumps)
    for (const auto& e : d.entries) {
      if (e.is_p2p || e.collective_seq_id <= 0) continue;
      auto& f = furthest[e.pg_name][d.rank];
      if (!f || e.collective_seq_id >= f->collective_seq_id) f = &e;
    }
  auto expected = [&](const std::string& group) {
    const auto it = members.find(group);
    return it != members.end() && !it->second.empty() ? it->second : dumped;
  };
  auto reached = [&](const std::string& group, int32_t rank) -> int64_t {
    const auto& g = furthest[group];
    const auto it = g.find(rank);
    return it == g.end() ? 0 : it->second->collective_seq_id;
  };
  // Where the ranks of a group got to different counts, the highest is the
  // collective the others never reached; of several such groups, the one whose
  // collective was queued first (the later ones follow from it).
  const FlightRecorderEntry* stuck = nullptr;
  for (const auto& [group, by_rank] : furthest) {
    const FlightRecorderEntry* top = nullptr;
    for (const auto& [rank, e] : by_rank)
      if (!top || e->collective_seq_id > top->collective_seq_id ||
          (e->collective_seq_id == top->collective_seq_id && e->time_created_ns < top->time_created_ns))
        top = e;
    bool behind = false;
    for (int32_t r : expected(group)) behind |= dumped.count(r) && reached(group, r) < top->collective_seq_id;
    if (behind && (!stuck || top->time_created_ns < stuck->time_created_ns)) stuck = top;
  }
  const bool split = stuck != nullptr;
  // Where every rank agrees: the first collective some rank has not completed.
  if (!stuck)
    for (const auto& d : dumps)
      for (const auto& e : d.entries)
        if (!e.is_p2p && e.collective_seq_id > 0 && e.state != "completed" &&
            (!stuck || e.time_created_ns < stuck->time_created_ns))
          stuck = &e;
  std::set<int32_t> ranks = dumped;
  if (stuck) {
    const auto group = expected(stuck->pg_name);
    ranks.insert(group.begin(), group.end());
  }
  std::vector<int32_t> waiting, no_dump;
  std::vector<std::string> behind_text;
  for (int32_t r : ranks) {
    FlightRecorderRank p;
    p.rank = r;
    const auto d = std::find_if(dumps.begin(), dumps.end(), [&](const FlightRecorderDump& x) { return x.rank == r; });
    if (d == dumps.end()) {
      p.state = "no dump";
      no_dump.push_back(r);
      h.ranks.push_back(std::move(p));
      continue;
    }
    p.file = d->file;
    // Its latest entry started and not completed, else its oldest not completed.
    for (const auto& e : d->entries)
      if (e.state == "started") p.pending = e;
    if (!p.pending)
      for (const auto& e : d->entries)
        if (e.state == "scheduled") {
          p.pending = e;
          break;
        }
    if (!stuck) {
      p.state = d->entries.empty() ? "no collectives" : "not in a collective";
    } else if (const auto m = members.find(stuck->pg_name);
               m != members.end() && !m->second.empty() && !m->second.count(r)) {
      p.state = "not in the group";
    } else {
      p.furthest = reached(stuck->pg_name, r);
      p.state = p.furthest == stuck->collective_seq_id ? "waiting"
                : p.furthest < stuck->collective_seq_id ? "not reached"
                                                        : "past it";
      if (p.state == "waiting") waiting.push_back(r);
      if (p.state == "not reached") {
        h.never_reached.push_back(r);
        const auto& g = furthest[stuck->pg_name];
        const auto it = g.find(r);
        behind_text.push_back(fmt::format("{} never reached it (its last there: {})", rank_list({r}),
                                          it == g.end() ? "none recorded" : describe(*it->second)));
      }
    }
    h.ranks.push_back(std::move(p));
  }
  if (stuck) {
    h.in_collective = true;
    h.pg_name = stuck->pg_name;
    h.pg_desc = stuck->pg_desc;
    h.op = stuck->profiling_name;
    h.collective_seq_id = stuck->collective_seq_id;
    h.text = fmt::format("{} wait{} in {} #{} of process group {}{}", rank_list(waiting), waiting.size() == 1 ? "s" : "",
                         shorten(h.op), h.collective_seq_id, shorten(h.pg_name),
                         h.pg_desc.empty() ? "" : fmt::format(" ({})", shorten(h.pg_desc)));
    for (const auto& b : behind_text) h.text += "; " + b;
    if (!split) h.text += " (every rank with a dump reached it; it is not completed)";
  } else {
    h.text = "no collective left incomplete: every recorded collective completed";
  }
  if (!no_dump.empty()) h.text += fmt::format("; {} wrote no dump", rank_list(no_dump));
  return h;
}

void to_json(json& j, const FlightRecorderHang& v) {
  j = json_with(SCALESCOPE_JSON_FIELDS(v, dumps, in_collective, text), {{"source", "flight recorder"}});
  if (v.in_collective)
    j.update(json_with(SCALESCOPE_JSON_FIELDS(v, op, collective_seq_id, never_reached),
                       {{"process_group", v.pg_name}, {"process_group_desc", v.pg_desc}}));
  auto& ranks = j["ranks"] = json::array();
  for (const auto& r : v.ranks) {
    json o{{"rank", r.rank}, {"file", r.file}, {"state", r.state}, {"furthest_seq_id", r.furthest}};
    if (r.pending)
      o["pending"] = json_with(SCALESCOPE_JSON_FIELDS(*r.pending, collective_seq_id, state),
                               {{"process_group", r.pending->pg_name}, {"op", r.pending->profiling_name}});
    ranks.push_back(std::move(o));
  }
}

}  // namespace scalescope::analyze
