#pragma once
// Every floating-point and duration option of every command is checked by the
// one number check (base/number_check.hpp) through these validators: CLI11's
// own Range and NonNegativeNumber let NaN and infinities through.
//
//   cmd->add_option("--threshold", threshold, "...")->check(number_in(kEfficiencyRange));

#include <CLI/CLI.hpp>

#include "base/error.hpp"
#include "base/number_check.hpp"

namespace scalescope::cli {

// An E' threshold: a useful configuration's efficiency lies in (0, 1].
inline constexpr trace::NumberRange kEfficiencyRange{0, 1, true, false};
// A prediction interval's level.
inline constexpr trace::NumberRange kLevelRange{0, 1, true, true};
// Samples (images, tokens) per GPU per step.
inline constexpr trace::NumberRange kSamplesPerStepRange{0, 1e12, true, false};
// Seconds an option may wait or run: up to trace::kMaxDurationS.
inline constexpr trace::NumberRange kSecondsRange{0, trace::kMaxDurationS, false, false};
// A sampling rate in Hz.
inline constexpr trace::NumberRange kSamplingHzRange{0, 1000, false, false};

inline CLI::Validator number_in(const trace::NumberRange& range) {
  return CLI::Validator(
      [range](std::string& text) -> std::string {
        try {
          trace::parse_number(text, "", range);
        } catch (const Error& e) {
          return e.what();
        }
        return {};
      },
      range.text());
}

// A duration ("30m", "90s", "2h", "45" seconds), checked as trace::parse_duration reads it.
inline CLI::Validator duration_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          trace::parse_duration(text, "");
        } catch (const Error& e) {
          return e.what();
        }
        return {};
      },
      "DURATION");
}

}  // namespace scalescope::cli
