// Fuzzes what the stack sampler reads from outside: perf ring records (the
// kernel's, but parsed from bytes that a bug or a hostile co-tenant could
// shape) and /proc/<pid>/maps text. Neither may crash, hang or read past the
// input; samples parsed go through the callsite tree into a trace.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collect/perf_stacks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scalescope;
  static auto stacks = [] {
    collect::PerfStacksOptions o;
    o.proc_root = "/nonexistent-proc";  // no maps: every frame stays an address
    o.max_pending_samples = 1 << 16;
    return collect::PerfStacks::create_without_events(o);
  }();
  uint64_t lost = 0;
  collect::parse_perf_records(
      {data, size}, [](const collect::PerfSample& s) { stacks->ingest(s, 0); }, &lost);
  trace::Trace t;
  stacks->drain(t, t.strings);
  std::vector<collect::MapRange> maps;
  uint32_t next = 0;
  collect::parse_maps(std::string_view(reinterpret_cast<const char*>(data), size), maps,
                      [&](std::string_view) { return next++; });
  return 0;
}
