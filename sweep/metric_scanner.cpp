#include "sweep/metric_scanner.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <re2/re2.h>

#include "base/error.hpp"

namespace scalescope::sweep {

MetricRegex::MetricRegex(std::string_view pattern) {
  RE2::Options options;
  options.set_log_errors(false);  // the error goes into our one line, not to stderr
  re_ = std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re_->ok()) fail("the regular expression does not compile in RE2 syntax ({})", re_->error());
  if (re_->NumberOfCapturingGroups() < 1) fail("the regular expression needs a capture group for the number");
}

MetricRegex::~MetricRegex() = default;

std::optional<double> MetricRegex::value_in(std::string_view line) const {
  re2::StringPiece group;
  if (!RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *re_, &group) || group.data() == nullptr)
    return std::nullopt;
  const std::string text(group.data(), group.size());  // strtod needs a terminated string
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v)) return std::nullopt;
  return v;
}

MetricScanner::MetricScanner(const MetricSpec& metric) : metric_(metric) {
  if (metric.kind == MetricKind::kRegex) regex_.emplace(metric.pattern);
  if (metric.kind == MetricKind::kMlperf) mllog_.emplace();
}

MetricScanner::~MetricScanner() = default;

void MetricScanner::feed(std::string_view bytes) {
  // The MLLOG reader splits lines itself (and bounds them at its own limit).
  if (mllog_) mllog_->feed(bytes);
  if (!regex_) return;
  while (!bytes.empty()) {
    const auto* nl = static_cast<const char*>(std::memchr(bytes.data(), '\n', bytes.size()));
    const size_t n = nl ? static_cast<size_t>(nl - bytes.data()) : bytes.size();
    if (line_.size() < kMaxLogLineBytes) line_.append(bytes.data(), std::min(n, kMaxLogLineBytes - line_.size()));
    line_length_ += n;
    line_open_ = true;
    bytes.remove_prefix(n);
    if (nl) {
      bytes.remove_prefix(1);
      end_line();
    }
  }
}

void MetricScanner::end_line() {
  if (line_length_ > kMaxLogLineBytes) ++cut_lines_;
  if (auto v = regex_->value_in(line_)) value_ = v;
  line_.clear();
  line_length_ = 0;
  line_open_ = false;
}

void MetricScanner::finish(RunMetrics& m) {
  if (regex_ && line_open_) end_line();
  if (cut_lines_ > 0)
    m.notes.push_back(fmt::format("{} output line(s) longer than {} bytes were cut for metric extraction",
                                  cut_lines_, kMaxLogLineBytes));
  if (regex_) {
    if (value_) m.values[metric_.name()] = *value_;
    else
      m.notes.push_back(
          fmt::format("no output line matched the metric regex /{}/ with a number", metric_.pattern));
  }
  if (mllog_) {
    // The first run_start and run_stop count, as `mlperf ingest` and MLPerf's
    // reference summarizer time a run (mlperf/mllog_parser.hpp).
    const trace::LogSummary events = mllog_->finish();
    if (events.overlong_lines > 0)
      m.notes.push_back(fmt::format("{} output line(s) longer than {} bytes were read in part for MLLOG events",
                                    events.overlong_lines, trace::kMaxMllogLineBytes));
    const auto& start = events.run_start_ms;
    const auto& stop = events.run_stop_ms;
    if (start && stop && *stop >= *start) {
      m.values["mlperf_s"] = static_cast<double>(*stop - *start) / 1000.0;
      const bool success = events.stop_status.empty() || events.stop_status == "success";
      m.values["mlperf_success"] = success ? 1.0 : 0.0;
      if (!success) m.notes.push_back(fmt::format("MLLOG run_stop status is '{}'", events.stop_status));
    } else {
      m.notes.push_back(!start ? "no :::MLLOG run_start line in the output"
                               : (!stop ? "no :::MLLOG run_stop line in the output"
                                        : "MLLOG run_stop is before run_start"));
    }
  }
}

}  // namespace scalescope::sweep
