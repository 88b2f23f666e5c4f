// scalescope demo: the main job on embedded data, on any machine, in well
// under a minute: the MLPerf Training v4.1 table embedded in the binary and a
// generated sample run, analysed and written as one HTML report.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "report/html_report.hpp"
#include "report/progress.hpp"
#include "trace/error.hpp"
#include "trace/kineto_importer.hpp"
#include "trace/synthetic_trace.hpp"
#ifdef SCALESCOPE_REPORT_MLPERF
#include "mlperf/mlperf.hpp"
#endif

namespace scalescope::cli {

namespace {

namespace fs = std::filesystem;

struct DemoArgs {
  std::string dir = "scalescope-demo";
  bool gpu = false;
};

// NVIDIA GPUs visible to this process: the driver's device nodes.
int visible_gpus() {
  int n = 0;
  for (int i = 0; i < 64; ++i)
    if (::access(fmt::format("/dev/nvidia{}", i).c_str(), F_OK) == 0) ++n;
  return n;
}

// A sample 4-rank DDP run from the synthetic generator (trace/synthetic_trace.hpp):
// realistic kernel names, NCCL all-reduces, copies and counters, deterministic.
std::vector<trace::Trace> sample_run() {
  std::vector<trace::Trace> run;
  for (int r = 0; r < 4; ++r) {
    trace::SyntheticOptions o;
    o.events = 60'000;
    o.seed = 11 + static_cast<uint64_t>(r);
    o.rank = r;
    o.world_size = 4;
    o.device = static_cast<uint32_t>(r);
    run.push_back(trace::make_synthetic_trace(o));
  }
  return run;
}

}  // namespace

void add_demo_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<DemoArgs>();
  auto* cmd = app.add_subcommand("demo", "Analyse the embedded data (MLPerf v4.1, a sample run) and write the HTML report");
  cmd->add_option("-o,--output-dir", args->dir, "Folder for the report")->capture_default_str();
  cmd->add_flag("--gpu", args->gpu, "Run a short real sweep of the reference image workload on this machine's GPUs");
  cmd->callback([args, &exit_code] {
    if (args->gpu) {
      if (visible_gpus() == 0)
        fail("demo --gpu: no NVIDIA GPU on this machine (no /dev/nvidia0); run `scalescope demo` without --gpu");
      fail("demo --gpu: the GPU sweep demo is not built yet; use `scalescope sweep --profile` and `scalescope report`");
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::error_code ec;
    fs::create_directories(args->dir, ec);
    if (ec) fail("{}: cannot create the folder ({})", args->dir, ec.message());
    report::HtmlReport r({.title = "scalescope demo"});
    {
      report::Progress progress("demo", 3);
      progress.set_detail("sample trace");
      const std::string_view sample = report::embedded_sample_trace();
      if (!sample.empty()) {
        // The importer reads files (it detects gzip); the sample goes through a temporary one.
        const fs::path tmp = fs::temp_directory_path() / fmt::format("scalescope-demo-sample-{}.json.gz", ::getpid());
        {
          std::FILE* f = std::fopen(tmp.c_str(), "wb");
          if (f == nullptr || std::fwrite(sample.data(), 1, sample.size(), f) != sample.size() || std::fclose(f) != 0)
            fail("{}: cannot write the sample trace", tmp.string());
        }
        std::vector<trace::Trace> ranks;
        try {
          ranks.push_back(trace::import_kineto_file(tmp));
        } catch (...) {
          fs::remove(tmp, ec);
          throw;
        }
        fs::remove(tmp, ec);
        r.add_run("sample: MobileNetV2 DDP on 2xH200, rank 0 (real PyTorch-profiler trace, cut)", ranks);
      } else {
        progress.note("demo: this build has no bundled sample trace (examples/sample/kineto-sample.json.gz)");
      }
      progress.advance();
      progress.set_detail("synthetic run");
      r.add_run("synthetic 4-rank run (generated)", sample_run());
      progress.advance();
#ifdef SCALESCOPE_REPORT_MLPERF
      progress.set_detail("MLPerf Training v4.1");
      r.add_mlperf_runs("v4.1 (embedded)", mlperf::read_runs_csv(mlperf::default_runs_csv(), "embedded MLPerf v4.1 table"));
#endif
      progress.advance();
      progress.set_detail("");
    }
    const fs::path out = fs::path(args->dir) / "report.html";
    r.write(out);
    fmt::print("What the demo found:\n");
    for (const auto& h : r.highlights()) fmt::print("  {}\n", h);
    fmt::print("Report: {} ({:.1f} MB, made in {:.1f} s). Open it in a browser; it needs no network.\n",
               fs::absolute(out).string(), static_cast<double>(fs::file_size(out)) / 1e6,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    exit_code = 0;
  });
}

}  // namespace scalescope::cli
