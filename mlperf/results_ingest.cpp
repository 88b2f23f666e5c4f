// Ingest of a results tree: find the result folders, read the system
// descriptions once each, then parse every run log on a pool of threads (each
// with its own parser), reading files in fixed-size chunks so memory stays
// bounded whatever the file.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mlperf/mlperf.hpp"
#include "base/error.hpp"
#include "base/json_number.hpp"
#include "base/parallel_for.hpp"
#include "base/text_input.hpp"

namespace scalescope::mlperf {

namespace fs = std::filesystem;

namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr int kMaxDepth = 8;  // results trees are 4 levels deep; this bounds odd trees
constexpr uintmax_t kMaxJsonBytes = 1 << 20;

struct SystemInfo {
  bool found = false;
  std::string system_name, division, accelerator, framework;
  int nodes = 0, accelerators_per_node = 0;
  bool invalid = false;  // found, but a field is unusable: its runs are refused
  std::string problem;
};

struct FolderJob {
  size_t folder = 0;
  fs::path file;
  std::string relative;  // path shown in the table, relative to the directory given
};

struct FileResult {
  LogSummary summary;
  uint64_t bytes = 0;
  std::string error;
};

// "result_2" before "result_10": digit runs compare as numbers.
bool natural_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      std::string_view na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;  // equal up to leading zeros: a total order all the same
}

bool is_result_folder(const fs::path& p) {
  return p.has_parent_path() && p.parent_path().has_parent_path() &&
         p.parent_path().parent_path().filename() == "results";
}

void find_folders(const fs::path& dir, int depth, std::vector<fs::path>& out) {
  if (is_result_folder(dir)) {
    out.push_back(dir);
    return;
  }
  if (depth >= kMaxDepth) return;
  std::error_code ec;
  std::vector<fs::path> children;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec) && !it->is_symlink(type_ec)) children.push_back(it->path());
  }
  std::sort(children.begin(), children.end());
  for (const auto& c : children) find_folders(c, depth + 1, out);
}

// A count from a system description: 8, 8.0, "8" and "8 " give 8; anything
// else (a fraction, text, a negative number, or more than `max`) is nullopt,
// never a wrapped value (4294967297 nodes is not 1 node).
std::optional<int> json_count(const nlohmann::json& j, int64_t max) {
  std::optional<int64_t> v = json_integer<int64_t>(j);
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    try {
      size_t used = 0;
      const long long x = std::stoll(s, &used);
      while (used < s.size() && std::isspace(static_cast<unsigned char>(s[used]))) ++used;
      if (used == s.size()) v = x;
    } catch (const std::exception&) {}
  }
  if (!v || *v < 0 || *v > max) return std::nullopt;
  return static_cast<int>(*v);
}

std::string json_text(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return {};
}

SystemInfo read_system(const fs::path& file) {
  SystemInfo info;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    info.problem = fmt::format("no system description {}: accelerator fields left empty", file.string());
    return info;
  }
  try {
    const auto j = nlohmann::json::parse(trace::read_text_file(file, kMaxJsonBytes, "a description"));
    if (!j.is_object()) fail("{} is not a JSON object", file.string());
    info.found = true;
    info.system_name = json_text(j, "system_name");
    info.division = json_text(j, "division");
    info.accelerator = json_text(j, "accelerator_model_name");
    info.framework = json_text(j, "framework");
    // Validated here, once per system: every run of the system carries the refusal.
    constexpr int64_t kMaxNodes = 1'000'000, kMaxPerNode = 100'000;
    int nodes = -1, per_node = -1;  // -1: missing or unusable
    if (j.contains("number_of_nodes")) nodes = json_count(j["number_of_nodes"], kMaxNodes).value_or(-1);
    if (j.contains("accelerators_per_node"))
      per_node = json_count(j["accelerators_per_node"], kMaxPerNode).value_or(-1);
    if (nodes < 1 || per_node < 0) {  // a system has at least one node
      info.invalid = true;
      info.problem = fmt::format(
          "{}: number_of_nodes ({}) or accelerators_per_node ({}) is not a whole number in range (1-{} nodes, 0-{} "
          "per node); its runs are not scored",
          file.string(), j.contains("number_of_nodes") ? j["number_of_nodes"].dump() : "missing",
          j.contains("accelerators_per_node") ? j["accelerators_per_node"].dump() : "missing", kMaxNodes, kMaxPerNode);
    } else {
      info.nodes = nodes;
      info.accelerators_per_node = per_node;
    }
  } catch (const nlohmann::json::exception& e) {
    info.invalid = true;
    info.problem = fmt::format("{} is not valid JSON ({}): its runs are not scored", file.string(), e.what());
  } catch (const Error& e) {
    info.problem = e.what();
  }
  return info;
}

// scaling.json: {"scaling_factor": x}; a problem string when present but unusable.
void read_scaling(const fs::path& folder, ResultFolder& out) {
  const fs::path file = folder / "scaling.json";
  std::error_code ec;
  if (!fs::exists(file, ec)) return;
  try {
    const auto j = nlohmann::json::parse(trace::read_text_file(file, kMaxJsonBytes, "a description"));
    if (!j.is_object() || !j.contains("scaling_factor") || !j["scaling_factor"].is_number())
      fail("{} has no numeric scaling_factor", file.string());
    out.scaling_factor =
        trace::check_number(j["scaling_factor"].get<double>(), file.string() + ": scaling_factor", kScalingFactorRange);
  } catch (const nlohmann::json::exception& e) {
    out.problem = fmt::format("{} is not valid JSON ({})", file.string(), e.what());
  } catch (const Error& e) {
    out.problem = e.what();
  }
}

bool is_log_candidate(const fs::directory_entry& e) {
  std::error_code ec;
  if (!e.is_regular_file(ec)) return false;
  const std::string name = e.path().filename().string();
  if (name == "package_checker_params" || name.starts_with('.')) return false;
  const std::string ext = e.path().extension().string();
  return ext != ".json";
}

// What one worker keeps across its logs: the parser and the read buffer
// (not zero-filled: read() overwrites it; a fresh 1 MiB per log cost a
// sixth of the ingest in memset and first-touch page faults).
struct Worker {
  MllogParser parser;
  std::unique_ptr<char[]> buffer{new char[kChunkBytes]};
};

FileResult parse_file(const fs::path& path, Worker& worker) {
  MllogParser& parser = worker.parser;
  FileResult r;
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  const int fd = file.fd;
  if (fd < 0) {
    r.error = fmt::format("cannot open {}: {}", path.string(), std::strerror(errno));
    return r;
  }
  char* buffer = worker.buffer.get();
  while (true) {
    const ssize_t n = ::read(fd, buffer, kChunkBytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      r.error = fmt::format("cannot read {}: {}", path.string(), std::strerror(errno));
      break;
    }
    if (n == 0) break;
    r.bytes += static_cast<uint64_t>(n);
    parser.feed(std::string_view(buffer, static_cast<size_t>(n)));
  }
  r.summary = parser.finish();
  return r;
}

Run make_run(const ResultFolder& folder, const SystemInfo& sys, const LogSummary& s, std::string log_path) {
  Run run;
  run.submitter = folder.submitter;
  run.system = folder.system;
  run.system_name = sys.system_name;
  run.benchmark_folder = folder.benchmark_folder;
  run.benchmark = canonical_benchmark(folder.benchmark_folder);
  run.division = !sys.division.empty() ? sys.division : s.division;
  run.accelerator = sys.accelerator;
  run.nodes = sys.nodes;
  run.accelerators_per_node = sys.accelerators_per_node;
  run.accelerators = sys.nodes * sys.accelerators_per_node;
  run.framework = sys.framework;
  run.global_batch_size = s.global_batch_size;
  run.progress_at_stop = s.progress_at_stop;
  run.run_start_ms = s.run_start_ms;
  run.run_stop_ms = s.run_stop_ms;
  run.scaling_factor = folder.scaling_factor;
  run.log_path = std::move(log_path);
  run.malformed_lines = s.malformed_lines;
  // Refusals travel with each run (and into the runs CSV), so `scores` on the
  // CSV refuses what `ingest` refused.
  if (!folder.problem.empty()) run.problem = folder.problem;
  if (sys.invalid) run.problem += (run.problem.empty() ? "" : "; ") + sys.problem;
  if (!s.run_start_ms) {
    run.status = "missing run_start";
  } else if (!s.run_stop_ms) {
    run.status = "missing run_stop";
  } else {
    run.status = s.stop_status.empty() ? "no status" : s.stop_status;
    run.minutes = static_cast<double>(*s.run_stop_ms - *s.run_start_ms) / 60000.0;
    if (*run.minutes < 0) run.status = "run_stop before run_start";
  }
  run.converged = run.status == "success";
  return run;
}

// The result folders under the given directories, each once, with per folder
// the directory its log paths are shown from.
struct FoundFolders {
  std::vector<ResultFolder> folders;
  std::vector<fs::path> roots;
};

FoundFolders find_result_folders(const std::vector<fs::path>& dirs) {
  FoundFolders out;
  std::vector<ResultFolder>& folders = out.folders;
  std::vector<fs::path> seen;
  for (const auto& given : dirs) {
    std::error_code ec;
    if (!fs::is_directory(given, ec)) fail("{} is not a directory", given.string());
    const fs::path dir = fs::weakly_canonical(fs::absolute(given), ec);
    std::vector<fs::path> found;
    find_folders(dir, 0, found);
    if (found.empty())
      fail("{} holds no MLPerf result folder (<submitter>/results/<system>/<benchmark>/)", given.string());
    for (auto& f : found) {
      if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;  // a directory given twice
      seen.push_back(f);
      ResultFolder rf;
      rf.path = f;
      rf.benchmark_folder = f.filename().string();
      rf.system = f.parent_path().filename().string();
      rf.submitter = f.parent_path().parent_path().parent_path().filename().string();
      // Runs are grouped by (submitter, system, benchmark): two trees holding
      // the same triple (two rounds) would be scored as one folder.
      for (const auto& other : folders) {
        if (other.submitter == rf.submitter && other.system == rf.system &&
            other.benchmark_folder == rf.benchmark_folder)
          fail("{} and {} are the same result folder ({}/{}/{}) of two trees: ingest one round at a time",
               other.path.string(), f.string(), rf.submitter, rf.system, rf.benchmark_folder);
      }
      folders.push_back(std::move(rf));
      // Log paths start at the submitter folder, whichever directory was given.
      out.roots.push_back(f.parent_path().parent_path().parent_path().parent_path());
    }
  }
  return out;
}

struct FolderListing {
  std::vector<fs::path> files;
  std::string error;  // the folder could not be listed (whole or in part)
};

// Per folder: its system description (read once per submitter folder and
// system), its scaling.json and its list of logs. Read on the one pool
// (base/parallel_for.hpp), then gathered in folder order, so notes and
// jobs come out as a one-thread loop would give them.
struct FolderContents {
  std::vector<SystemInfo> systems;    // distinct descriptions, in first-use order
  std::vector<size_t> folder_system;  // per folder: its index into systems
  std::vector<FolderListing> listings;
};

FolderContents read_folder_contents(std::vector<ResultFolder>& folders, const IngestOptions& options) {
  FolderContents out;
  std::vector<fs::path> descs;
  out.folder_system.resize(folders.size());
  {
    std::map<fs::path, size_t> index;
    for (size_t i = 0; i < folders.size(); ++i) {
      const fs::path submitter_dir = folders[i].path.parent_path().parent_path().parent_path();
      const fs::path desc = submitter_dir / "systems" / (folders[i].system + ".json");
      auto [it, inserted] = index.try_emplace(desc, descs.size());
      if (inserted) descs.push_back(desc);
      out.folder_system[i] = it->second;
    }
  }
  std::vector<SystemInfo>& systems = out.systems;
  std::vector<FolderListing>& listings = out.listings;
  systems.resize(descs.size());
  listings.resize(folders.size());
  // Items [0, descs) read a description, the rest read a folder; neither
  // throws (problems become notes), so every item runs.
  const size_t prologue = descs.size() + folders.size();
  trace::parallel_for(prologue, trace::worker_count(options.threads, prologue), [&](size_t k, unsigned) {
    if (k < descs.size()) {
      systems[k] = read_system(descs[k]);
      return;
    }
    const size_t i = k - descs.size();
    read_scaling(folders[i].path, folders[i]);
    std::error_code ec;
    auto& files = listings[i].files;
    for (fs::directory_iterator it(folders[i].path, ec), end; !ec && it != end; it.increment(ec)) {
      if (is_log_candidate(*it)) files.push_back(it->path());
    }
    if (ec) listings[i].error = fmt::format("cannot list {}: {}", folders[i].path.string(), ec.message());
    std::sort(files.begin(), files.end(),
              [](const fs::path& a, const fs::path& b) { return natural_less(a.native(), b.native()); });
  });
  return out;
}

// Each description's problem once, each folder's problem, each listing's
// error, in folder order; and the logs to parse.
std::vector<FolderJob> note_problems_and_list_jobs(const FoundFolders& found, FolderContents& contents,
                                                   IngestResult& result) {
  const std::vector<ResultFolder>& folders = found.folders;
  std::vector<bool> noted(contents.systems.size(), false);
  for (size_t i = 0; i < folders.size(); ++i) {
    const size_t d = contents.folder_system[i];
    if (!noted[d]) {
      noted[d] = true;
      if (!contents.systems[d].problem.empty()) result.notes.push_back(contents.systems[d].problem);
    }
    if (!folders[i].problem.empty()) result.notes.push_back(folders[i].problem);
  }

  std::vector<FolderJob> jobs;
  for (size_t i = 0; i < folders.size(); ++i) {
    FolderListing& listing = contents.listings[i];
    if (!listing.error.empty()) result.notes.push_back(std::move(listing.error));
    for (auto& f : listing.files) jobs.push_back({i, f, f.lexically_relative(found.roots[i]).generic_string()});
  }
  return jobs;
}

std::vector<FileResult> parse_logs(const std::vector<FolderJob>& jobs, const IngestOptions& options) {
  std::vector<FileResult> parsed(jobs.size());
  std::atomic<uint64_t> done{0};
  const uint64_t total = jobs.size();
  const unsigned threads = trace::worker_count(options.threads, jobs.size());
  std::vector<std::unique_ptr<Worker>> workers(threads);  // one per worker, reused across its files
  for (auto& w : workers) w = std::make_unique<Worker>();
  // The one pool (base/parallel_for.hpp). A log that cannot be read is a
  // note, not an error: it is caught here, so the others go on.
  trace::parallel_for(jobs.size(), threads, [&](size_t i, unsigned worker) {
    Worker& w = *workers[worker];
    try {
      parsed[i] = parse_file(jobs[i].file, w);
    } catch (const std::exception& e) {
      parsed[i] = FileResult{};
      parsed[i].error = fmt::format("cannot parse {}: {}", jobs[i].file.string(), e.what());
      w.parser.finish();
    }
    const uint64_t d = ++done;
    if (options.progress) options.progress(d, total);
  });
  return parsed;
}

void add_runs(const std::vector<FolderJob>& jobs, const std::vector<FileResult>& parsed,
              std::vector<ResultFolder>& folders, const FolderContents& contents, IngestResult& result) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    const FileResult& r = parsed[i];
    ResultFolder& folder = folders[jobs[i].folder];
    result.bytes += r.bytes;
    if (!r.error.empty()) {
      result.notes.push_back(r.error);
      continue;
    }
    const LogSummary& s = r.summary;
    result.mllog_lines += s.mllog_lines;
    result.malformed_lines += s.malformed_lines;
    result.overlong_lines += s.overlong_lines;
    if (s.mllog_lines == 0 && s.malformed_lines == 0) {
      ++result.ignored_files;  // not a run log (no MLLOG line at all)
      continue;
    }
    ++result.logs;
    ++folder.runs;
    if (s.malformed_lines > 0)
      result.notes.push_back(
          fmt::format("{}: {} malformed MLLOG line(s) skipped", jobs[i].relative, s.malformed_lines));
    const SystemInfo& system = contents.systems[contents.folder_system[jobs[i].folder]];
    result.runs.push_back(make_run(folder, system, s, jobs[i].relative));
    if (!s.benchmark.empty() && canonical_benchmark(s.benchmark) != result.runs.back().benchmark)
      result.notes.push_back(fmt::format("{}: the log says submission_benchmark '{}' but lies in folder '{}'",
                                         jobs[i].relative, s.benchmark, folder.benchmark_folder));
  }
}

void sort_by_folder(std::vector<ResultFolder>& folders, IngestResult& result) {
  auto folder_key = [](const auto& x) { return std::tie(x.submitter, x.system, x.benchmark_folder); };
  std::stable_sort(result.runs.begin(), result.runs.end(), [&](const Run& a, const Run& b) {
    if (folder_key(a) != folder_key(b)) return folder_key(a) < folder_key(b);
    return natural_less(a.log_path, b.log_path);
  });
  std::stable_sort(folders.begin(), folders.end(),
                   [&](const ResultFolder& a, const ResultFolder& b) { return folder_key(a) < folder_key(b); });
}

}  // namespace

IngestResult ingest_results(const std::vector<fs::path>& dirs, const IngestOptions& options) {
  IngestResult result;
  if (dirs.empty()) fail("no results directory given");
  FoundFolders found = find_result_folders(dirs);
  FolderContents contents = read_folder_contents(found.folders, options);
  const std::vector<FolderJob> jobs = note_problems_and_list_jobs(found, contents, result);
  const std::vector<FileResult> parsed = parse_logs(jobs, options);
  add_runs(jobs, parsed, found.folders, contents, result);
  sort_by_folder(found.folders, result);
  result.folders = std::move(found.folders);
  return result;
}

}  // namespace scalescope::mlperf
