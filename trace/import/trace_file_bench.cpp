// Trace file throughput and size: write and read events/s and bytes per event
// on a synthetic 10 M-event DDP trace and on the real Kineto trace in
// ../shared (imported in memory, when the importer is built).
//
//   build/trace/trace_file_bench --benchmark_repetitions=5
//
// Counters: events (per iteration), bytes_per_event (whole file / events),
// bytes_per_kernel (a file holding only the kernels and their strings).

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <cmath>

#include "trace/model/synthetic_trace.hpp"
#include "trace/model/trace_file.hpp"

#if __has_include("trace/import/kineto_importer.hpp")
#include "trace/import/kineto_importer.hpp"
#define SCALESCOPE_HAVE_KINETO 1
#endif

namespace {

using namespace scalescope::trace;
namespace fs = std::filesystem;

fs::path scratch_file(const char* name) {
  return fs::temp_directory_path() / (std::string("sstrace-bench-") + std::to_string(::getpid()) + "-" + name);
}

const Trace& synthetic() {
  static const Trace t = make_synthetic_trace(10'000'000, 1);
  return t;
}

std::string gunzip(const fs::path& p) {
  gzFile f = gzopen(p.c_str(), "rb");
  if (!f) return {};
  std::string out;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

// The GPU events and CUDA API calls of the real trace, read with a plain JSON
// parser. Used only when the Kineto importer is not built or fails, so that
// the format's figures on real names and timings do not depend on it.
std::unique_ptr<Trace> real_events_fallback(const fs::path& p) {
  using nlohmann::json;
  const std::string text = gunzip(p);
  auto t = std::make_unique<Trace>();
  auto ns = [](const json& e, const char* key) { return std::llround(e.value(key, 0.0) * 1000.0); };
  auto keep = [&](int depth, json::parse_event_t event, json& e) {
    if (depth != 2 || event != json::parse_event_t::object_end) return true;
    const std::string cat = e.value("cat", "");
    const json& a = e.contains("args") ? e["args"] : json::object();
    const Timestamp start = ns(e, "ts"), end = start + ns(e, "dur");
    if (cat == "kernel") {
      KernelRecord k;
      k.start = start;
      k.end = end;
      k.device = a.value("device", 0u);
      k.stream = a.value("stream", 0u);
      k.name = t->strings.intern(e.value("name", ""));
      const auto grid = a.value("grid", std::vector<uint32_t>{0, 0, 0});
      const auto block = a.value("block", std::vector<uint32_t>{0, 0, 0});
      if (grid.size() == 3) k.grid_x = grid[0], k.grid_y = grid[1], k.grid_z = grid[2];
      if (block.size() == 3) k.block_x = block[0], k.block_y = block[1], k.block_z = block[2];
      k.registers_per_thread = a.value("registers per thread", 0u);
      k.shared_memory_bytes = a.value("shared memory", 0u);
      k.correlation = a.value("correlation", 0u);
      t->kernels.push(k);
    } else if (cat == "gpu_memcpy" || cat == "gpu_memset") {
      if (cat == "gpu_memcpy") {
        MemcpyRecord c;
        c.start = start;
        c.end = end;
        c.device = a.value("device", 0u);
        c.stream = a.value("stream", 0u);
        c.correlation = a.value("correlation", 0u);
        c.bytes = a.value("bytes", uint64_t{0});
        t->memcpys.push(c);
      } else {
        MemsetRecord m;
        m.start = start;
        m.end = end;
        m.device = a.value("device", 0u);
        m.stream = a.value("stream", 0u);
        m.correlation = a.value("correlation", 0u);
        m.bytes = a.value("bytes", uint64_t{0});
        t->memsets.push(m);
      }
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      ApiRecord r;
      r.start = start;
      r.end = end;
      r.thread = e.value("tid", 0u);
      r.domain = cat == "cuda_runtime" ? ApiDomain::kRuntime : ApiDomain::kDriver;
      r.callback_id = a.value("cbid", 0u);
      r.name = t->strings.intern(e.value("name", ""));
      r.correlation = a.value("correlation", 0u);
      t->api.push(r);
    }
    return false;  // keep nothing in the DOM: memory stays small
  };
  try {
    const json rest = json::parse(text, keep);  // the filtered-out skeleton
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_file_bench: cannot parse the real trace: %s\n", e.what());
    return nullptr;
  }
  std::fprintf(stderr, "trace_file_bench: real trace read without the importer (kernels, copies, sets, API calls)\n");
  return t;
}

const Trace* real() {
  static const std::unique_ptr<Trace> t = []() -> std::unique_ptr<Trace> {
    const fs::path p = fs::path(SCALESCOPE_SHARED_DIR) / "data/traces/kineto-mobilenetv2-ddp-2xh200-rank0.json.gz";
    if (!fs::exists(p)) return nullptr;
#ifdef SCALESCOPE_HAVE_KINETO
    try {
      return std::make_unique<Trace>(import_kineto_file(p));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trace_file_bench: cannot import the real trace: %s\n", e.what());
    }
#endif
    return real_events_fallback(p);
  }();
  return t.get();
}

Trace kernels_only(const Trace& t) {
  Trace k;
  k.meta = t.meta;
  k.kernels = t.kernels;
  // Only the strings the kernels use, so bytes_per_kernel counts their names once.
  for (auto& id : k.kernels.name) id = k.strings.intern(t.strings.view(id));
  return k;
}

void write_bench(benchmark::State& state, const Trace* t, const char* name) {
  if (!t) {
    state.SkipWithError("trace not available (importer not built or shared data missing)");
    return;
  }
  const fs::path p = scratch_file(name);
  for (auto _ : state) write_trace(p, *t);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * t->event_count()));
  state.counters["events"] = static_cast<double>(t->event_count());
  state.counters["bytes_per_event"] = static_cast<double>(fs::file_size(p)) / static_cast<double>(t->event_count());
  const fs::path pk = scratch_file("kernels");
  write_trace(pk, kernels_only(*t));
  state.counters["kernels"] = static_cast<double>(t->kernels.size());
  state.counters["bytes_per_kernel"] = static_cast<double>(fs::file_size(pk)) / static_cast<double>(t->kernels.size());
  fs::remove(p);
  fs::remove(pk);
}

void read_bench(benchmark::State& state, const Trace* t, const char* name) {
  if (!t) {
    state.SkipWithError("trace not available (importer not built or shared data missing)");
    return;
  }
  const fs::path p = scratch_file(name);
  write_trace(p, *t);
  size_t events = 0;
  for (auto _ : state) {
    Trace back = read_trace(p);
    events = back.event_count();
    benchmark::DoNotOptimize(back.kernels.start.data());
  }
  if (events != t->event_count()) state.SkipWithError("read back a different number of events");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * fs::file_size(p)));
  fs::remove(p);
}

void BM_WriteSynthetic10M(benchmark::State& s) { write_bench(s, &synthetic(), "w-syn"); }
void BM_ReadSynthetic10M(benchmark::State& s) { read_bench(s, &synthetic(), "r-syn"); }
void BM_WriteRealTrace(benchmark::State& s) { write_bench(s, real(), "w-real"); }
void BM_ReadRealTrace(benchmark::State& s) { read_bench(s, real(), "r-real"); }

BENCHMARK(BM_WriteSynthetic10M)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_ReadSynthetic10M)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_WriteRealTrace)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ReadRealTrace)->Unit(benchmark::kMillisecond)->Iterations(10);

}  // namespace

BENCHMARK_MAIN();
