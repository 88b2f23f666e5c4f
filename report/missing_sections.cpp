// Sections whose library is not part of this build (a part folder without a
// CMakeLists.txt): asking for them is a clear error, not an empty report.

#include "report/report_document.hpp"
#include "base/error.hpp"

namespace scalescope::report::detail {

#ifndef SCALESCOPE_REPORT_RUNS
void add_run_sections(Document&, const std::string& label, const std::vector<trace::Trace>&,
                      const trace::ClockAlignment*) {
  fail("{}: this scalescope was built without analyze/ and advise/, so it cannot report on traces", label);
}
void add_run_path_sections(Document&, const std::string& label, const std::filesystem::path&) {
  fail("{}: this scalescope was built without analyze/ and advise/, so it cannot report on traces", label);
}
#endif

#ifndef SCALESCOPE_REPORT_SWEEPS
void add_sweep_sections(Document&, const std::filesystem::path& path) {
  fail("{}: this scalescope was built without sweep/, so it cannot report on sweep databases", path.string());
}
#endif

#ifndef SCALESCOPE_REPORT_MLPERF
void add_mlperf_sections(Document&, const std::string& label, const std::vector<mlperf::Run>&) {
  fail("{}: this scalescope was built without mlperf/, so it cannot report on MLPerf results", label);
}
void add_mlperf_csv_sections(Document&, const std::string& label, const std::filesystem::path&) {
  fail("{}: this scalescope was built without mlperf/, so it cannot report on MLPerf results", label);
}
#endif

}  // namespace scalescope::report::detail
