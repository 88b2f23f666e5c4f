// The collector's measure of its own perturbation, read from the trace's metadata.
#include "analyze/perturbation.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace scalescope::analyze {

// The collector's sampling facts (collect/iteration_sampler.hpp), strings in
// the trace's metadata; a value that does not parse is left out, not guessed.
ProfilerPerturbation detail::read_perturbation(const std::unordered_map<std::string, std::string>& extra) {
  ProfilerPerturbation p;
  auto get = [&](const char* key) -> const std::string* {
    auto it = extra.find(key);
    return it == extra.end() ? nullptr : &it->second;
  };
  auto number = [&](const char* key, double* out) {
    const std::string* v = get(key);
    if (!v) return false;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), *out);
    return ec == std::errc() && end == v->data() + v->size() && std::isfinite(*out);
  };
  if (const auto* v = get("sampling")) p.sampling = *v;
  if (p.sampling.empty()) return p;
  double seen = 0, inside = 0, outside = 0;
  if (number("iterations_seen", &seen)) p.seen = static_cast<int64_t>(seen);
  if (const auto* v = get("perturbation_text")) p.text = *v;
  if (const auto* v = get("sampling_note")) p.text = *v;
  const auto* measured = get("perturbation_measured");
  p.measured = measured && *measured == "true" && number("perturbation_pct", &p.percent) &&
               number("perturbation_ci_low_pct", &p.ci_low) && number("perturbation_ci_high_pct", &p.ci_high);
  if (p.measured && number("iterations_inside", &inside) && number("iterations_outside", &outside)) {
    p.inside = static_cast<int64_t>(inside);
    p.outside = static_cast<int64_t>(outside);
  }
  p.matters = p.measured && p.ci_low > kPerturbationMatters;
  // Repeated windows: the steady iterations run from the first traced one to
  // the last, across the detached stretches between windows, whose kernels
  // were not recorded; their GPU time counts as idle there.
  double every = 0;
  if (p.sampling == "sampled" && p.seen > 0 && number("repeat_every", &every) && every > 0)
    p.text += fmt::format(
        "; windows repeat every {:.0f} iterations: the steady analysis spans the detached "
        "iterations between them too, counted as GPU idle (analyze --window itA:itB takes one window)",
        every);
  return p;
}

}  // namespace scalescope::analyze
