// libFuzzer target: any bytes into the Kineto importer must give a Trace or a
// scalescope::Error, never a crash, a hang or unbounded memory. And the
// import in pieces (KinetoImportOptions::piece_bytes, tiny here so that every
// input is cut) must give what the one-pass import gives: the same error, or
// the same events.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.hpp"
#include "trace/import/kineto_importer.hpp"

namespace {

using namespace scalescope::trace;

struct Outcome {
  std::optional<Trace> trace;
  ImportReport report;
  std::string error;
};

Outcome import(std::string_view json, size_t piece_bytes) {
  KinetoImportOptions options;
  options.max_string_bytes = 4096;
  options.piece_bytes = piece_bytes;
  Outcome out;
  try {
    out.trace = import_kineto_json(json, "fuzz.json", &out.report, options);
  } catch (const scalescope::Error& e) {
    out.error = e.what();
  }
  return out;
}

template <typename Table>
bool same_times(const Table& a, const Table& b) {
  return a.start == b.start && a.end == b.end;
}

bool same(const Outcome& a, const Outcome& b) {
  if (a.error != b.error || a.trace.has_value() != b.trace.has_value()) return false;
  if (!a.trace) return true;
  const Trace &x = *a.trace, &y = *b.trace;
  return x.event_count() == y.event_count() && same_times(x.kernels, y.kernels) && x.kernels.name == y.kernels.name &&
         same_times(x.memcpys, y.memcpys) && same_times(x.memsets, y.memsets) && same_times(x.api, y.api) &&
         same_times(x.syncs, y.syncs) && same_times(x.nvtx, y.nvtx) && same_times(x.nccl, y.nccl) &&
         x.strings.size() == y.strings.size() && x.meta.extra == y.meta.extra && x.meta.rank == y.meta.rank &&
         a.report.events == b.report.events && a.report.malformed == b.report.malformed &&
         a.report.unknown == b.report.unknown && a.report.ignored == b.report.ignored &&
         a.report.flows == b.report.flows && a.report.categories.size() == b.report.categories.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  const Outcome whole = import(json, 0);
  if (whole.trace) (void)whole.trace->event_count();
  if (!same(whole, import(json, 8))) std::abort();  // the pieces changed the result
  return 0;
}
