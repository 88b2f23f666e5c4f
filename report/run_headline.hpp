#pragma once
// The few lines a person reads first about an analysed run: how many ranks,
// the steady step time, where the GPUs' time went, and the top findings with
// their savings. `scalescope analyze` prints them above its tables and alone
// with --summary.
//
//   for (const auto& line : report::run_headline(run, findings, "trace.json.gz")) std::cout << line << "\n";

#include <string>
#include <string_view>
#include <vector>

namespace scalescope::analyze {
struct RunAnalysis;
}
namespace scalescope::advise {
struct Finding;
}

namespace scalescope::report {

// At most `top_findings` findings are listed.
std::vector<std::string> run_headline(const analyze::RunAnalysis& run, const std::vector<advise::Finding>& findings,
                                      std::string_view input, size_t top_findings = 3);

}  // namespace scalescope::report
