// Benchmark names of several rounds and the number of runs each needs.
// Source: mlcommons/training_policies training_rules.adoc, "Benchmark Results"
// (the v4.1 table, plus its deprecated-benchmark and later-round tables); see
// docs/mlperf.md.

#include <algorithm>
#include <array>
#include <cctype>

#include "mlperf/mlperf.hpp"
#include "base/text_input.hpp"

namespace scalescope::mlperf {

namespace {

using trace::trim;

constexpr std::array kRules = {
    // v4.1 benchmarks (folder names of v4.x first, canonical names of later rounds).
    BenchmarkRule{"bert", "", 10, 1},
    BenchmarkRule{"dlrm_dcnv2", "dlrmv2", 10, 1},
    BenchmarkRule{"gpt3", "", 3, 1},
    BenchmarkRule{"llama2_70b_lora", "", 10, 1},
    BenchmarkRule{"retinanet", "ssd", 5, 1},
    BenchmarkRule{"rgat", "gnn", 10, 1},
    BenchmarkRule{"stable_diffusion", "", 10, 1},
    // Deprecated before v4.1 (last in v4.0 or v3.1).
    BenchmarkRule{"resnet", "", 5, 1},
    BenchmarkRule{"unet3d", "", 40, 4},
    BenchmarkRule{"maskrcnn", "", 5, 1},
    BenchmarkRule{"rnnt", "", 10, 1},
    // Added after v4.1.
    BenchmarkRule{"llama31_8b", "", 10, 1},
    BenchmarkRule{"llama31_405b", "", 3, 1},
    BenchmarkRule{"flux1", "", 10, 1},
};

bool in_alias_list(std::string_view list, std::string_view name) {
  const auto aliases = trace::split(list, ',');
  return !list.empty() && std::find(aliases.begin(), aliases.end(), name) != aliases.end();
}

std::string_view drop_vendor(std::string_view s) {
  s = trim(s);
  for (std::string_view vendor : {"nvidia", "amd", "google", "intel"}) {
    if (s.size() > vendor.size() && trace::lowercase(s.substr(0, vendor.size())) == vendor &&
        (s[vendor.size()] == ' ' || s[vendor.size()] == '-' || s[vendor.size()] == '_')) {
      return trim(s.substr(vendor.size() + 1));
    }
  }
  return s;
}

}  // namespace

const BenchmarkRule* find_benchmark_rule(std::string_view name) {
  const std::string key = trace::lowercase(trim(name));
  for (const auto& rule : kRules) {
    if (rule.canonical == key || in_alias_list(rule.aliases, key)) return &rule;
  }
  return nullptr;
}

std::string canonical_benchmark(std::string_view name) {
  if (const BenchmarkRule* rule = find_benchmark_rule(name)) return std::string(rule->canonical);
  return trace::lowercase(trim(name));
}

std::string accelerator_key(std::string_view name) {
  std::string key;
  for (unsigned char c : drop_vendor(name)) {
    if (std::isalnum(c)) key.push_back(static_cast<char>(std::tolower(c)));
  }
  return key;
}

std::string accelerator_display(std::string_view name) { return std::string(drop_vendor(name)); }

}  // namespace scalescope::mlperf
