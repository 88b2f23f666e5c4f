// The per-run table as CSV: written from the one list of a run's fields
// (run_fields(), defined here; numbers as fmt's "{}" gives them, the shortest
// text that reads back the same; empty when missing) and read back by a small
// RFC 4180 reader that names the line and column of anything wrong. The JSON
// and report/mlperf_tables.cpp's runs table are written from the same list.

#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

#include "mlperf/mlperf.hpp"
#include "mlperf/run_fields.hpp"
#include "base/error.hpp"
#include "base/text_input.hpp"
#include "base/text_output.hpp"
#include "base/safe_output.hpp"

namespace scalescope::mlperf {

namespace fs = std::filesystem;

namespace {

// A count as a field value; a count beyond int64 (never met) is held at its largest.
std::optional<int64_t> count_value(uint64_t n) {
  return static_cast<int64_t>(std::min<uint64_t>(n, std::numeric_limits<int64_t>::max()));
}

constexpr uintmax_t kMaxCsvBytes = uintmax_t{1} << 30;

// One CSV field of a number: fmt's "{}" (as the table's CSV form always
// wrote it; "nan", "inf", "-inf" when not finite), empty when missing.
template <typename T>
void append_number(std::string& out, const std::optional<T>& v) {
  if (!v) return;
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(*v)) {
      out += std::isnan(*v) ? "nan" : (*v > 0 ? "inf" : "-inf");
      return;
    }
  }
  out += fmt::format("{}", *v);
}

// One CSV record starting at `pos`; advances pos past its line end. Returns
// false at end of text. Throws on an unterminated quote.
bool next_record(std::string_view text, size_t& pos, size_t& line, std::vector<std::string>& fields,
                 std::string_view source) {
  fields.clear();
  if (pos >= text.size()) return false;
  std::string field;
  bool quoted = false;
  const size_t start_line = line;
  while (pos < text.size()) {
    const char c = text[pos];
    if (quoted) {
      if (c == '"') {
        if (pos + 1 < text.size() && text[pos + 1] == '"') {
          field.push_back('"');
          pos += 2;
          continue;
        }
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field.push_back(c);
      }
      ++pos;
      continue;
    }
    if (c == '"' && field.empty()) {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') ++pos;
      ++pos;
      ++line;
      fields.push_back(std::move(field));
      return true;
    } else {
      field.push_back(c);
    }
    ++pos;
  }
  if (quoted) fail("{}: line {}: a quoted field is not closed", source, start_line);
  fields.push_back(std::move(field));
  ++line;
  return true;
}

struct Reader {
  std::string_view source;
  size_t line = 0;
  const std::vector<std::string>* fields = nullptr;
  std::map<std::string, size_t> index;

  const std::string& text(const char* column) const { return (*fields)[index.at(column)]; }

  template <typename T>
  std::optional<T> number(const char* column) const {
    const std::string& s = text(column);
    if (s.empty()) return std::nullopt;
    T v{};
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
      fail("{}: line {}: column {}: '{}' is not a number", source, line, column, s);
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(v)) fail("{}: line {}: column {}: '{}' is not a finite number", source, line, column, s);
    }
    return v;
  }

  int count(const char* column) const {
    auto v = number<int64_t>(column);
    if (v && (*v < 0 || *v > 100'000'000)) fail("{}: line {}: column {}: {} is out of range", source, line, column, *v);
    return static_cast<int>(v.value_or(0));
  }
};

}  // namespace

const std::vector<RunField>& run_fields() {
  static const std::vector<RunField> fields = {
      {"submitter", [](const Run& r) -> RunValue { return std::string_view(r.submitter); }},
      {"system", [](const Run& r) -> RunValue { return std::string_view(r.system); }},
      {"system_name", [](const Run& r) -> RunValue { return std::string_view(r.system_name); }},
      {"benchmark", [](const Run& r) -> RunValue { return std::string_view(r.benchmark); }},
      {"benchmark_folder", [](const Run& r) -> RunValue { return std::string_view(r.benchmark_folder); }},
      {"division", [](const Run& r) -> RunValue { return std::string_view(r.division); }},
      {"accelerator", [](const Run& r) -> RunValue { return std::string_view(r.accelerator); }},
      {"nodes", [](const Run& r) -> RunValue { return std::optional<int64_t>(r.nodes); }},
      {"accelerators_per_node",
       [](const Run& r) -> RunValue { return std::optional<int64_t>(r.accelerators_per_node); }},
      {"accelerators", [](const Run& r) -> RunValue { return std::optional<int64_t>(r.accelerators); }},
      {"framework", [](const Run& r) -> RunValue { return std::string_view(r.framework); }},
      {"global_batch_size", [](const Run& r) -> RunValue { return r.global_batch_size; }},
      {"run_start_ms", [](const Run& r) -> RunValue { return r.run_start_ms; }},
      {"run_stop_ms", [](const Run& r) -> RunValue { return r.run_stop_ms; }},
      {"status", [](const Run& r) -> RunValue { return std::string_view(r.status); }},
      {"minutes", [](const Run& r) -> RunValue { return r.minutes; }},
      {"converged", [](const Run& r) -> RunValue { return r.converged; }},
      {"scaling_factor", [](const Run& r) -> RunValue { return r.scaling_factor; }},
      {"malformed_lines", [](const Run& r) -> RunValue { return count_value(r.malformed_lines); }},
      {"log_path", [](const Run& r) -> RunValue { return std::string_view(r.log_path); }},
      {"problem", [](const Run& r) -> RunValue { return std::string_view(r.problem); }},
      {"progress_at_stop", [](const Run& r) -> RunValue { return r.progress_at_stop; }},
  };
  return fields;
}

const std::vector<std::string>& runs_csv_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> out;
    for (const RunField& f : run_fields()) out.emplace_back(f.name);
    return out;
  }();
  return columns;
}

void write_runs_csv(const std::vector<Run>& runs, std::ostream& out) {
  using trace::detail::append_csv_field;
  std::string line;
  for (const RunField& f : run_fields()) {
    if (&f != &run_fields().front()) line += ',';
    append_csv_field(line, f.name);
  }
  line += '\n';
  out << line;
  for (const Run& r : runs) {
    line.clear();
    for (const RunField& f : run_fields()) {
      if (&f != &run_fields().front()) line += ',';
      std::visit(
          [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::string_view>) append_csv_field(line, v);
            else if constexpr (std::is_same_v<V, bool>) line += v ? "yes" : "no";
            else append_number(line, v);
          },
          f.value(r));
    }
    line += '\n';
    out << line;
  }
}

void write_runs_csv(const std::vector<Run>& runs, const fs::path& path) {
  trace::TempPath guard(trace::temp_path_for(path));  // per process; removed on a signal
  const fs::path& tmp = guard.path();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("cannot write {} (as {}): {}", path.string(), tmp.string(), std::strerror(errno));
    write_runs_csv(runs, out);
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      fail("cannot write {} (disk full?)", tmp.string());
    }
  }
  guard.commit_to(path);
}

std::vector<Run> read_runs_csv(std::string_view text, std::string_view source) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a byte-order mark from spreadsheets
  size_t pos = 0, line = 1;
  std::vector<std::string> fields;
  if (!next_record(text, pos, line, fields, source))
    fail("{} is empty: expected a header of MLPerf run columns", source);
  Reader r{source, 1, &fields, {}};
  for (size_t i = 0; i < fields.size(); ++i) r.index[fields[i]] = i;
  for (const auto& c : runs_csv_columns()) {
    // problem and progress_at_stop came later (NEWS): tables written before them are still read.
    if (c == "problem" || c == "progress_at_stop") continue;
    if (!r.index.count(c))
      fail("{}: the header has no column '{}' (is this a table from 'scalescope mlperf ingest'?)", source, c);
  }
  const size_t width = fields.size();
  std::vector<Run> runs;
  while (true) {
    const size_t record_line = line;
    if (!next_record(text, pos, line, fields, source)) break;
    if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
    r.line = record_line;
    if (fields.size() != width)
      fail("{}: line {}: {} fields, the header has {}", source, record_line, fields.size(), width);
    Run run;
    run.submitter = r.text("submitter");
    run.system = r.text("system");
    run.system_name = r.text("system_name");
    run.benchmark_folder = r.text("benchmark_folder");
    run.benchmark = canonical_benchmark(run.benchmark_folder.empty() ? r.text("benchmark") : run.benchmark_folder);
    run.division = r.text("division");
    run.accelerator = r.text("accelerator");
    run.nodes = r.count("nodes");
    run.accelerators_per_node = r.count("accelerators_per_node");
    run.accelerators = r.count("accelerators");
    run.framework = r.text("framework");
    run.global_batch_size = r.number<int64_t>("global_batch_size");
    run.run_start_ms = r.number<int64_t>("run_start_ms");
    run.run_stop_ms = r.number<int64_t>("run_stop_ms");
    run.status = r.text("status");
    run.minutes = r.number<double>("minutes");
    const std::string& conv = r.text("converged");
    if (conv != "yes" && conv != "no")
      fail("{}: line {}: column converged: '{}' is neither yes nor no", source, record_line, conv);
    run.converged = conv == "yes";
    if (run.converged && !run.minutes) fail("{}: line {}: a converged run without minutes", source, record_line);
    run.scaling_factor = r.number<double>("scaling_factor");
    if (run.scaling_factor)
      trace::check_number(*run.scaling_factor, fmt::format("{}: line {}: scaling_factor", source, record_line),
                          kScalingFactorRange);
    run.malformed_lines = static_cast<uint64_t>(r.count("malformed_lines"));
    run.log_path = r.text("log_path");
    if (r.index.count("problem")) run.problem = r.text("problem");
    if (r.index.count("progress_at_stop")) {
      run.progress_at_stop = r.number<double>("progress_at_stop");
      if (run.progress_at_stop && *run.progress_at_stop < 0)
        fail("{}: line {}: progress_at_stop {} is negative", source, record_line, *run.progress_at_stop);
    }
    if (run.submitter.empty() || run.system.empty() || run.benchmark.empty())
      fail("{}: line {}: submitter, system and benchmark must not be empty", source, record_line);
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<Run> read_runs_csv(const fs::path& path) {
  return read_runs_csv(trace::read_text_file(path, kMaxCsvBytes, "a runs table"), path.string());
}

}  // namespace scalescope::mlperf
