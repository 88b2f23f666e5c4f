// libscalescope: the C ABI (capi/scalescope.h) over the libraries the CLI
// uses. Every entry point catches everything: an exception must never unwind
// into a C or Python caller (that would abort the interpreter), so each
// failure becomes a one-line message for ss_last_error() and a NULL / -1.
#include "capi/scalescope.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "advise/advise.hpp"
#include "analyze/analyze.hpp"
#include "mlperf/mlperf.hpp"
#include "report/html_report.hpp"
#include "report/import_tables.hpp"
#include "report/json_envelope.hpp"
#include "report/run_tables.hpp"
#include "report/stats_tables.hpp"
#include "report/table.hpp"
#include "scalescope_version.hpp"
#include "sweep/scaling_study.hpp"
#include "sweep/sweep.hpp"
#include "base/error.hpp"
#include "trace/model/kernel_short_name.hpp"
#include "trace/import/kineto_importer.hpp"
#include "trace/model/launcher.hpp"
#include "base/safe_output.hpp"
#include "trace/model/table_columns.hpp"
#include "trace/model/trace.hpp"
#include "trace/model/trace_format.hpp"
#include "trace/import/trace_source.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace scalescope;

namespace {

// What an analysis was asked for: the window and iteration range as given,
// and the kernel class rules' text (a file's content, not its name, so an
// edited file is read anew).
struct AnalysisRequest {
  std::string window, iteration_range, rules, rules_source;
  // What the run pipeline reads beside the traces (Python stacks and records,
  // hang and flight-recorder dumps) as names, sizes and times: a dump written
  // into the run directory after an analysis makes the next one new.
  std::string side_files;
  bool operator==(const AnalysisRequest&) const = default;
};

// One analysis of a run's traces with its findings, and what it was asked for.
struct RunAnalyzed {
  AnalysisRequest request;
  scalescope::analyze::RunAnalysis analysis;
  std::vector<scalescope::advise::Finding> findings;
};

}  // namespace

struct ss_run {
  std::string input;
  std::vector<std::string> files;   // file name of each rank, as analyze labels them
  std::vector<trace::Trace> ranks;  // in analyze's (file) order
  std::vector<trace::ImportReport> reports;
  // Per rank, beside its kernels table: each kernel's short name
  // (trace::distinct_short_names over the rank's kernel names) as an id past
  // the trace's own strings into `short_name_strings`, which ss_rank_strings
  // serves after them: a string column like `name`, while the trace itself
  // stays as loaded (analyses read its string table).
  std::vector<std::vector<trace::StringId>> kernel_short_names;
  std::vector<std::vector<std::string>> short_name_strings;
  // ss_rank_strings' packed copies, made on first use. The mutex: ctypes
  // drops the GIL, so two Python threads may ask for them at once.
  std::mutex strings_mutex;
  std::vector<std::optional<std::pair<std::string, std::vector<int64_t>>>> strings;
  // The last analysis asked for (ss_analyze_json, ss_analyze_tables_json,
  // ss_diff_json): a call with the same request takes it instead of
  // analysing the traces again. Guarded by analysis_mutex; computed outside it.
  std::mutex analysis_mutex;
  std::shared_ptr<const RunAnalyzed> analyzed;
};

namespace {

thread_local std::string last_error;

// Runs `body`; on any exception records the message and returns `failed`.
template <typename T, typename F>
T guarded(T failed, F&& body) noexcept {
  try {
    last_error.clear();
    return body();
  } catch (const Error& e) {
    last_error = e.what();
  } catch (const std::bad_alloc&) {
    last_error = "out of memory";
  } catch (const json::exception& e) {
    last_error = std::string("bad JSON argument: ") + e.what();
  } catch (const std::exception& e) {
    last_error = std::string("internal error: ") + e.what();
  } catch (...) {
    last_error = "internal error: unknown exception";
  }
  // A message is one line, like the CLI's.
  for (char& c : last_error)
    if (c == '\n' || c == '\r') c = ' ';
  return failed;
}

char* dup(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (!out) throw std::bad_alloc();
  std::memcpy(out, s.data(), s.size() + 1);
  return out;
}

// Every JSON handed out is in the CLI's envelope (report/json_envelope.hpp).
std::string dump(std::string_view command, json fields) {
  return report::json_text(report::json_envelope(command, std::move(fields)));
}

json parse_options(const char* text) {
  if (!text || !*text) return json::object();
  json j = json::parse(text);
  if (!j.is_object()) fail("options: expected a JSON object, got {}", std::string(text).substr(0, 80));
  return j;
}

template <typename T>
std::optional<T> opt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

// A path handed over in JSON ("\u0000" is valid there): the C library calls
// would cut it at the NUL and open or write another file.
std::string path_text(std::string s) {
  if (auto at = s.find('\0'); at != std::string::npos)
    fail("{}: a path may not hold a NUL character (byte {})", s.substr(0, at), at);
  return s;
}

std::optional<std::string> opt_path(const json& j, const char* key) {
  auto s = opt<std::string>(j, key);
  if (s) path_text(*s);
  return s;
}

trace::Trace& rank_of(ss_run* run, int rank) {
  if (!run) fail("no run (NULL handle)");
  if (rank < 0 || static_cast<size_t>(rank) >= run->ranks.size())
    fail("rank index {} out of range (the run has {})", rank, run->ranks.size());
  return run->ranks[static_cast<size_t>(rank)];
}

template <typename T>
constexpr int32_t dtype_of() {
  if constexpr (std::is_same_v<T, int64_t>) return SS_I64;
  else if constexpr (std::is_same_v<T, int32_t>) return SS_I32;
  else if constexpr (std::is_same_v<T, uint32_t>) return SS_U32;
  else if constexpr (std::is_same_v<T, uint64_t>) return SS_U64;
  else if constexpr (std::is_same_v<T, double>) return SS_F64;
  else {
    static_assert(sizeof(T) == 1, "enums and flags are one byte");
    return SS_U8;
  }
}

struct Columns {
  std::vector<ss_column> out;
  template <typename T>
  void add(const char* name, const std::vector<T>& v, int32_t kind = SS_PLAIN, const char* categories = nullptr) {
    out.push_back(
        {name, v.empty() ? nullptr : v.data(), static_cast<int64_t>(v.size()), dtype_of<T>(), kind, categories});
  }
};

// Enum names from the libraries' own to_string, so they match the CLI's.
template <typename E>
const char* enum_names() {
  static_assert(trace::kEnumCount<E> > 0, "an enum column needs its count in trace/model/table_columns.hpp");
  static const std::string names = [] {
    std::string s;
    for (int i = 0; i < trace::kEnumCount<E>; ++i)
      s += (i ? "\n" : "") + std::string(trace::to_string(static_cast<E>(i)));
    return s;
  }();
  return names.c_str();
}

// Every trace table's name, in export order, from the column lists.
const std::vector<std::string_view>& table_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> v;
    trace::for_each_table_type([&](auto table) { v.push_back(trace::TableColumns<typename decltype(table)::type>::name); });
    return v;
  }();
  return names;
}

// A table's columns from its column list (trace/model/table_columns.hpp).
template <typename Table>
void add_columns(Columns& c, const Table& t) {
  trace::for_each_column_of<Table>([&](const auto& col) {
    if (col.file_only) return;
    using V = typename std::remove_cvref_t<decltype(col)>::value_type;
    const std::vector<V>& values = t.*col.values;
    if constexpr (std::is_enum_v<V>) c.add(col.name.data(), values, SS_ENUM, enum_names<V>());
    else if (col.kind == trace::ColumnKind::kString) c.add(col.name.data(), values, SS_STRING);
    else if (col.kind == trace::ColumnKind::kBool) c.add(col.name.data(), values, SS_BOOL);
    else c.add(col.name.data(), values);
  });
}

// One table's columns; `kernel_short_names` is the kernels' short_name column,
// which the C ABI adds after `name`.
Columns table_columns(const trace::Trace& t, const std::vector<trace::StringId>& kernel_short_names,
                      std::string_view table) {
  if (std::find(table_names().begin(), table_names().end(), table) == table_names().end())
    fail("no table '{}' (tables: {})", table, fmt::to_string(fmt::join(table_names(), ", ")));
  Columns c;
  trace::for_each_trace_table(t, [&](const auto& columns) {
    using Table = std::remove_cvref_t<decltype(columns)>;
    if (trace::TableColumns<Table>::name != table) return;
    add_columns(c, columns);
    if constexpr (std::is_same_v<Table, trace::KernelTable>) {
      auto name = std::find_if(c.out.begin(), c.out.end(),
                               [](const ss_column& col) { return col.name == std::string_view("name"); });
      Columns short_name;
      short_name.add("short_name", kernel_short_names, SS_STRING);
      c.out.insert(name + 1, short_name.out.front());
    }
  });
  return c;
}

// Rows per table, by the tables' names.
json event_counts(const trace::Trace& t) {
  json counts = json::object();
  trace::for_each_trace_table(t, [&](const auto& table) {
    using Table = std::remove_cvref_t<decltype(table)>;
    counts[std::string(trace::TableColumns<Table>::name)] = table.size();
  });
  return counts;
}

json problems_json(const trace::ProblemCounts& p) {
  json a = json::array();
  for (int i = 0; i < trace::kProblemCount; ++i) {
    const auto problem = static_cast<trace::Problem>(i);
    a.push_back({{"problem", std::string(trace::to_string(problem))},
                 {"severity", std::string(trace::severity_name(trace::severity_of(problem)))},
                 {"count", p.counts[i]}});
  }
  return a;
}

std::string text_of(const char* s) { return s ? std::string(s) : std::string(); }

// The files of a run directory the run pipeline reads beside the traces
// (its top level and control/), each as name, size and modification time; ""
// for a file input.
std::string side_files_of(const std::string& input) {
  std::error_code ec;
  if (input.empty() || !fs::is_directory(input, ec)) return {};
  std::string out;
  const auto add = [&](const fs::directory_entry& e) {
    std::error_code fec;
    if (!e.is_regular_file(fec)) return;
    const auto size = e.file_size(fec);
    const auto time = e.last_write_time(fec).time_since_epoch().count();
    out += fmt::format("{}\t{}\t{}\n", e.path().string(), fec ? 0 : size, fec ? 0 : time);
  };
  for (const auto& e : fs::directory_iterator(input, ec)) add(e);
  const fs::path control = fs::path(input) / "control";
  if (fs::is_directory(control, ec))
    for (const auto& e : fs::recursive_directory_iterator(control, fs::directory_options::skip_permission_denied, ec))
      add(e);
  return out;
}

// The request of an analysis; the rules of a file are read once here (by the
// classifier's own reader, which refuses FIFOs and oversized files), checked,
// and kept as text.
AnalysisRequest analysis_request(const char* window, const char* iteration_range, const char* classes_path,
                                 const char* classes_text) {
  AnalysisRequest r{.window = text_of(window),
                    .iteration_range = text_of(iteration_range),
                    .rules = {},
                    .rules_source = "classes",
                    .side_files = {}};
  const std::string path = text_of(classes_path), text = text_of(classes_text);
  if (!path.empty() && !text.empty()) fail("kernel class rules: give a file or text, not both");
  if (!path.empty()) {
    r.rules = analyze::KernelClassifier::read_file(path);  // no such file, not a regular file, too large
    r.rules_source = path;
    analyze::KernelClassifier::parse(r.rules, path);  // bad lines, named by the file
  } else {
    r.rules = text;
  }
  return r;
}

analyze::Options analysis_options(const AnalysisRequest& r) {
  analyze::Options options;
  if (!r.window.empty()) options.window = analyze::WindowSpec::parse(r.window);
  options.iteration_range = r.iteration_range;
  if (!r.rules.empty()) options.classifier = analyze::KernelClassifier::parse(r.rules, r.rules_source);
  return options;
}

// The run's analysis and findings for `request`: the one it holds when it
// was asked for the same, else a new one (then held in its place).
std::shared_ptr<const RunAnalyzed> analyzed(ss_run* run, AnalysisRequest request) {
  request.side_files = side_files_of(run->input);
  {
    std::lock_guard lock(run->analysis_mutex);
    if (run->analyzed && run->analyzed->request == request) return run->analyzed;
  }
  // The run pipeline of `scalescope analyze`, on the ranks already loaded.
  analyze::RunAnalysis analysis =
      analyze::analyze_traces(run->ranks, run->files, analysis_options(request), run->input);
  std::vector<advise::Finding> findings = advise::advise(analysis);
  auto made = std::make_shared<const RunAnalyzed>(RunAnalyzed{request, std::move(analysis), std::move(findings)});
  std::lock_guard lock(run->analysis_mutex);
  run->analyzed = made;
  return made;
}

std::vector<mlperf::Run> load_mlperf_runs(const json& args) {
  const auto csv = opt_path(args, "runs_csv");
  if (!csv || csv->empty()) return mlperf::read_runs_csv(mlperf::default_runs_csv(), "the embedded MLPerf v4.1 table");
  return mlperf::read_runs_csv(fs::path(*csv));
}

}  // namespace

extern "C" {

int ss_abi_version(void) { return SS_ABI_VERSION; }

const char* ss_version(void) { return SCALESCOPE_VERSION " (" SCALESCOPE_GIT_DESCRIBE ")"; }

const char* ss_last_error(void) { return last_error.c_str(); }

void ss_free(char* text) { std::free(text); }

}  // extern "C": the helper below returns a C++ type

namespace {

// The kernels' short names as a column of ids numbered after the trace's
// strings; `strings` receives the short names, in id order.
std::vector<trace::StringId> short_name_column(const trace::Trace& t, std::vector<std::string>& strings) {
  std::vector<trace::StringId> ids(t.kernels.name.begin(), t.kernels.name.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::string_view> names;
  for (trace::StringId id : ids) names.push_back(t.strings.view(id));
  const std::vector<std::string> short_names = trace::distinct_short_names(names);
  std::unordered_map<std::string_view, trace::StringId> id_of;
  std::unordered_map<trace::StringId, trace::StringId> short_of;
  strings.reserve(short_names.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto [it, fresh] = id_of.try_emplace(short_names[i], static_cast<trace::StringId>(t.strings.size() + strings.size()));
    if (fresh) strings.push_back(short_names[i]);
    short_of[ids[i]] = it->second;
  }
  std::vector<trace::StringId> column;
  column.reserve(t.kernels.size());
  for (trace::StringId id : t.kernels.name) column.push_back(short_of[id]);
  return column;
}

}  // namespace

extern "C" {

ss_run* ss_open(const char* path) {
  return guarded<ss_run*>(nullptr, [&] {
    if (!path || !*path) fail("no input path given");
    auto run = std::make_unique<ss_run>();
    run->input = path;
    // The files in the order `scalescope analyze` reads them, each loaded by
    // the one loader every command uses (so new input kinds come for free).
    for (const fs::path& file : analyze::list_trace_inputs(path)) {
      std::vector<trace::Trace> traces = trace::load_traces(file, &run->reports);
      for (auto& t : traces) {
        run->files.push_back(file.filename().string());
        run->ranks.push_back(std::move(t));
      }
    }
    run->strings.resize(run->ranks.size());
    run->short_name_strings.resize(run->ranks.size());
    for (size_t i = 0; i < run->ranks.size(); ++i)
      run->kernel_short_names.push_back(short_name_column(run->ranks[i], run->short_name_strings[i]));
    return run.release();
  });
}

void ss_close(ss_run* run) { delete run; }

int ss_rank_count(const ss_run* run) { return run ? static_cast<int>(run->ranks.size()) : -1; }

char* ss_run_info_json(ss_run* run) {
  return guarded<char*>(nullptr, [&] {
    if (!run) fail("no run (NULL handle)");
    json ranks = json::array();
    for (size_t i = 0; i < run->ranks.size(); ++i) {
      const auto& t = run->ranks[i];
      const auto [first, last] = t.time_span();
      // The metadata as the trace file holds it.
      ranks.push_back({{"file", run->files[i]},
                       {"metadata", json::parse(trace::format::metadata_to_json(t.meta))},
                       {"problems", problems_json(t.problems)},
                       {"string_count", t.strings.size()},
                       {"time_span", {first, last}},
                       {"event_counts", event_counts(t)}});
    }
    json reports = json::array();
    for (const auto& r : run->reports) reports.push_back(report::import_report_json(r));  // as `import --format json`
    return dup(dump("run info",
                    {{"input", run->input}, {"files", run->files}, {"import_reports", reports}, {"ranks", ranks}}));
  });
}

const char* ss_table_names(void) {
  static const std::string names = fmt::format("{}", fmt::join(table_names(), "\n"));
  return names.c_str();
}

int ss_rank_table(ss_run* run, int rank, const char* table, ss_column* out, int capacity) {
  return guarded<int>(-1, [&] {
    const trace::Trace& t = rank_of(run, rank);
    if (!table) fail("no table name given");
    const Columns c = table_columns(t, run->kernel_short_names[static_cast<size_t>(rank)], table);
    for (size_t i = 0; i < c.out.size() && static_cast<int>(i) < capacity; ++i) out[i] = c.out[i];
    return static_cast<int>(c.out.size());
  });
}

int ss_rank_strings(ss_run* run, int rank, const char** blob, const int64_t** offsets, int64_t* count) {
  return guarded<int>(-1, [&] {
    const trace::Trace& t = rank_of(run, rank);
    std::lock_guard lock(run->strings_mutex);
    auto& cached = run->strings[static_cast<size_t>(rank)];
    if (!cached) {
      std::pair<std::string, std::vector<int64_t>> packed;
      packed.first.reserve(t.strings.byte_size());
      packed.second.reserve(t.strings.size() + 1);
      packed.second.push_back(0);
      for (size_t i = 0; i < t.strings.size(); ++i) {
        packed.first += t.strings.view(static_cast<trace::StringId>(i));
        packed.second.push_back(static_cast<int64_t>(packed.first.size()));
      }
      for (const std::string& s : run->short_name_strings[static_cast<size_t>(rank)]) {
        packed.first += s;
        packed.second.push_back(static_cast<int64_t>(packed.first.size()));
      }
      cached = std::move(packed);
    }
    *blob = cached->first.data();
    *offsets = cached->second.data();
    *count = static_cast<int64_t>(cached->second.size()) - 1;
    return 0;
  });
}

char* ss_analyze_json(ss_run* run, const char* window, const char* iteration_range, const char* classes_path,
                      const char* classes_text) {
  return guarded<char*>(nullptr, [&] {
    if (!run) fail("no run (NULL handle)");
    const auto a = analyzed(run, analysis_request(window, iteration_range, classes_path, classes_text));
    // The JSON tree is freed before the copy handed out: they never coexist.
    const std::string text =
        dump("analyze", {{"input", run->input}, {"analysis", a->analysis}, {"findings", a->findings}});
    return dup(text);
  });
}

char* ss_analyze_tables_json(ss_run* run, const char* options_json) {
  return guarded<char*>(nullptr, [&] {
    if (!run) fail("no run (NULL handle)");
    const json o = parse_options(options_json);
    const auto window = opt<std::string>(o, "window").value_or("");
    const auto range = opt<std::string>(o, "iteration_range").value_or("");
    const auto classes_path = opt_path(o, "classes_path").value_or("");
    const auto classes_text = opt<std::string>(o, "classes_text").value_or("");
    const int top = opt<int>(o, "top").value_or(10);
    if (top < 1 || top > 1000) fail("top {} is not in 1..1000", top);
    const auto a =
        analyzed(run, analysis_request(window.c_str(), range.c_str(), classes_path.c_str(), classes_text.c_str()));
    // As `scalescope analyze --format json`: every table with all its rows.
    const std::string text =
        report::json_text(report::tables_json("analyze", report::run_tables(a->analysis, a->findings, top, true)));
    return dup(text);
  });
}

char* ss_stats_json(ss_run* run, const char* options_json) {
  return guarded<char*>(nullptr, [&] {
    if (!run) fail("no run (NULL handle)");
    const json o = parse_options(options_json);
    const auto summaries = opt<std::vector<std::string>>(o, "reports").value_or(std::vector<std::string>{});
    std::vector<std::string> left_out;
    const std::vector<const trace::Trace*> ranks = trace::ranks_of(run->ranks, left_out);
    return dup(dump("stats", report::stats_json(run->input, ranks, opt<int>(o, "rank"),
                                                {summaries.begin(), summaries.end()}, left_out)));
  });
}

char* ss_diff_json(ss_run* a, ss_run* b, const char* options_json) {
  return guarded<char*>(nullptr, [&] {
    if (!a || !b) fail("no run (NULL handle)");
    const json o = parse_options(options_json);
    const auto window = opt<std::string>(o, "window").value_or("");
    const auto range = opt<std::string>(o, "iteration_range").value_or("");
    const auto classes = opt_path(o, "classes_path").value_or("");
    const int top = opt<int>(o, "top").value_or(15);
    if (top < 1 || top > 1000) fail("top {} is not in 1..1000", top);
    const AnalysisRequest request = analysis_request(window.c_str(), range.c_str(), classes.c_str(), nullptr);
    const analyze::RunDiff d = analyze::diff(analyzed(a, request)->analysis, analyzed(b, request)->analysis, top);
    return dup(dump("diff", {{"a", a->input}, {"b", b->input}, {"diff", d}}));
  });
}

char* ss_sweep_json(const char* db, const char* options_json) {
  return guarded<char*>(nullptr, [&] {
    if (!db || !*db) fail("no sweep database given");
    const json o = parse_options(options_json);
    const sweep::StoredSweep stored = sweep::read_sweep(db);
    json runs = stored;
    runs["path"] = db;
    json out = {{"sweep", std::move(runs)}};
    sweep::ScalingStudyOptions options;
    options.metric = opt<std::string>(o, "metric").value_or("");
    options.higher_is_better = opt<bool>(o, "higher_is_better");
    options.ref_gpus = opt<int>(o, "ref");
    options.threshold = opt<double>(o, "threshold").value_or(0.8);
    if (!(options.threshold > 0)) fail("threshold {} is not a positive number", options.threshold);
    options.price_per_gpu_hour = opt<double>(o, "price_per_gpu_hour");
    options.predict = opt<std::vector<int>>(o, "predict").value_or(std::vector<int>{});
    for (int n : options.predict)
      if (n < 1) fail("predict: {} is not a GPU count", n);
    if (auto c = opt<std::string>(o, "compare")) options.compare = sweep::Variable::parse(*c);
    options.weak = opt<bool>(o, "weak");
    options.samples_per_gpu_step = opt<double>(o, "samples_per_gpu_step");
    // A sweep without a measured metric still has its runs: the scaling
    // study's error goes beside them rather than hiding them.
    try {
      out["scaling"] = sweep::study_scaling(stored, options);  // as `scalescope scaling --format json`
    } catch (const Error& e) {
      out["scaling"] = nullptr;
      out["scaling_error"] = e.what();
    }
    return dup(dump("scaling", std::move(out)));
  });
}

char* ss_mlperf_json(const char* command, const char* args_json) {
  return guarded<char*>(nullptr, [&] {
    const std::string cmd = command ? command : "";
    const json a = parse_options(args_json);
    if (cmd == "ingest") {
      std::vector<fs::path> dirs;
      for (const auto& d : opt<std::vector<std::string>>(a, "dirs").value_or(std::vector<std::string>{}))
        dirs.emplace_back(path_text(d));
      if (dirs.empty()) fail("mlperf ingest: no results directory given");
      const auto output = opt_path(a, "output");
      // As `mlperf ingest -o`: the runs CSV is replaced, never a file of the input trees.
      if (output && !output->empty()) trace::check_output(*output, dirs, true);
      mlperf::IngestOptions options;
      options.threads = opt<unsigned>(a, "threads").value_or(0);
      const mlperf::IngestResult result = mlperf::ingest_results(dirs, options);
      if (output && !output->empty()) mlperf::write_runs_csv(result.runs, fs::path(*output));
      return dup(dump("mlperf ingest", json(result)));
    }
    if (cmd == "scores") return dup(dump("mlperf scores", {{"scores", mlperf::score_folders(load_mlperf_runs(a))}}));
    mlperf::AnalyzeOptions options;
    options.benchmark = opt<std::string>(a, "benchmark").value_or("");
    options.accelerator = opt<std::string>(a, "accelerator").value_or("");
    if (cmd == "analyze") {
      options.ref_system = opt<std::string>(a, "ref").value_or("");
      options.threshold = opt<double>(a, "threshold").value_or(options.threshold);
      return dup(dump("mlperf analyze", {{"scaling", mlperf::analyze(load_mlperf_runs(a), options)}}));
    }
    if (cmd == "predict") {  // as `mlperf analyze --predict`
      mlperf::PredictOptions p;
      p.predict = opt<std::vector<int>>(a, "predict").value_or(std::vector<int>{});
      p.fit_up_to = opt<int>(a, "fit_up_to");
      p.planned_batch = mlperf::parse_planned_batch(opt<std::string>(a, "planned_batch").value_or(""));
      p.level = opt<double>(a, "level").value_or(p.level);
      return dup(dump("mlperf analyze", {{"predictions", mlperf::predict(load_mlperf_runs(a), options, p)}}));
    }
    if (cmd == "validate") {  // as `mlperf validate` of one table with the embedded calibration
      mlperf::ValidateOptions v;
      v.level = opt<double>(a, "level").value_or(v.level);
      return dup(dump("mlperf validate", json(mlperf::validate({{"", load_mlperf_runs(a)}}, options, v))));
    }
    fail("mlperf: no command '{}' (ingest, scores, analyze, predict, validate)", cmd);
  });
}

char* ss_report(const char* inputs_json, const char* output, const char* options_json) {
  return guarded<char*>(nullptr, [&] {
    if (!output || !*output) fail("report: no output path given");
    const json inputs = json::parse(inputs_json ? inputs_json : "[]");
    if (!inputs.is_array() || inputs.empty()) fail("report: no inputs given");
    const json o = parse_options(options_json);
    report::ReportOptions options;
    options.quiet = true;
    options.title = opt<std::string>(o, "title").value_or(options.title);
    options.threshold = opt<double>(o, "threshold").value_or(options.threshold);
    if (!(options.threshold >= 0.01 && options.threshold <= 1.0))
      fail("report: threshold {} is not in 0.01..1", options.threshold);
    options.iteration_range = opt<std::string>(o, "iteration_range").value_or("");
    std::vector<fs::path> paths;
    for (const auto& in : inputs) paths.emplace_back(path_text(in.get<std::string>()));
    // As `scalescope report -o`: the page is replaced when it exists, an input never is.
    trace::check_output(output, paths, true);
    report::HtmlReport r(options);
    for (const auto& in : paths) r.add_input(in);
    r.write(output);
    return dup(dump("report", {{"highlights", r.highlights()}}));
  });
}

}  // extern "C"
