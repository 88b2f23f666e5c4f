#pragma once
// Reads a run's metric from the job's output as it arrives: the --metric regex
// (RE2 syntax; the number in the first capture group of the last matching
// line) and MLLOG events. The sweep feeds it the stream before log.txt's cap
// drops anything, so a metric line in the dropped middle of a long log still
// counts. Lines are matched up to kMaxLogLineBytes; the rest of a longer line
// is skipped and counted.
//
//   MetricScanner scan(spec.metric);
//   scan.feed(chunk);  ...  scan.finish(metrics);

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sweep/sweep.hpp"
#include "mlperf/mllog_parser.hpp"

namespace re2 {
class RE2;
}

namespace scalescope::sweep {

// A compiled --metric regex. RE2 matches in time linear in the line and without
// recursion, so no output line can overflow the stack or stall the sweep.
class MetricRegex {
 public:
  // Throws Error for a pattern RE2 does not compile or one without a capture group.
  explicit MetricRegex(std::string_view pattern);
  ~MetricRegex();
  MetricRegex(const MetricRegex&) = delete;
  MetricRegex& operator=(const MetricRegex&) = delete;

  // The number at the start of the first capture group, when `line` matches and
  // the group holds one ("12.5 s" gives 12.5; "", "abc", "nan", "inf" give none).
  std::optional<double> value_in(std::string_view line) const;

 private:
  std::unique_ptr<re2::RE2> re_;
};

class MetricScanner {
 public:
  explicit MetricScanner(const MetricSpec& metric);
  ~MetricScanner();
  MetricScanner(const MetricScanner&) = delete;
  MetricScanner& operator=(const MetricScanner&) = delete;

  // Bytes of output, in chunks of any size.
  void feed(std::string_view bytes);
  // Ends the last line and adds the regex or MLPerf values to `metrics`, with a
  // note for each one missing and for lines cut at kMaxLogLineBytes.
  void finish(RunMetrics& metrics);

 private:
  void end_line();

  MetricSpec metric_;
  std::optional<MetricRegex> regex_;
  std::optional<trace::MllogParser> mllog_;
  std::string line_;          // the current line, at most kMaxLogLineBytes of it
  uint64_t line_length_ = 0;  // its full length
  bool line_open_ = false;
  uint64_t cut_lines_ = 0;
  std::optional<double> value_;
};

}  // namespace scalescope::sweep
