// scalescope demo: the main job on embedded data, on any machine, in well
// under a minute (demo/demo_report.hpp). `demo --gpu` instead runs a short
// real profiled sweep on this machine's GPUs (demo/gpu_demo.hpp).
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/number_option.hpp"
#include "cli/usage_error.hpp"
#include "cli/output_format_option.hpp"
#include "demo/demo_report.hpp"
#include "demo/gpu_demo.hpp"
#include "report/json_envelope.hpp"
#include "report/terminal.hpp"
#include "report/table.hpp"
#include "base/error.hpp"

namespace scalescope::cli {

namespace {

namespace fs = std::filesystem;

struct DemoArgs {
  std::string dir = "scalescope-demo";
  std::string study;
  bool gpu = false;
  report::OutputFormat format = report::OutputFormat::kTable;
  demo::GpuDemoOptions gpu_options;
};

// --format csv|json: what was found on stdout, for scripts (CSV: one table;
// JSON: typed); progress stays on stderr. The terminal form is printed by the callers.
void print_found(report::OutputFormat format, const report::Table& found, const nlohmann::json& typed) {
  if (format == report::OutputFormat::kJson)
    std::cout << report::json_text(report::json_envelope("demo", typed), 2) << "\n";
  else report::print_tables(std::cout, "demo", {found}, format);
}

void run_gpu(const DemoArgs& args, report::OutputFormat format) {
  const auto t0 = std::chrono::steady_clock::now();
  demo::GpuDemoOptions o = args.gpu_options;
  o.out_dir = args.dir;
  const auto result = demo::run_gpu_demo(o, demo::GpuDemoHost::current());
  if (format != report::OutputFormat::kTable) {
    print_found(format,
                demo::found_table(result.lines, {{"sweep", fs::absolute(result.database).string()},
                                                 {"report", fs::absolute(result.report).string()}}),
                demo::gpu_demo_json(result));
  } else {
    fmt::print("What the GPU demo measured ({} of {} runs ok):\n", result.ok, result.runs);
    for (const auto& line : result.lines) fmt::print("  {}\n", line);
    fmt::print("Sweep: {} (try `scalescope scaling {}`)\n", fs::absolute(result.database).string(),
               result.database.string());
    fmt::print("Report: {} ({:.1f} MB, {:.0f} s in all). Open it in a browser; it needs no network.\n",
               fs::absolute(result.report).string(), static_cast<double>(fs::file_size(result.report)) / 1e6,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (result.ok < result.runs)
    fail("demo --gpu: {} of {} runs failed (listed above with their logs); the report shows the others",
         result.runs - result.ok, result.runs);
}

// The terminal form of what the embedded demo found.
void print_demo_report(const demo::DemoReport& found, std::chrono::steady_clock::time_point t0) {
  const size_t width = report::output_width(STDOUT_FILENO);
  auto say = [&](const std::string& text, std::string_view indent = {}) {
    fmt::print("{}\n", report::wrap(report::terminal_safe(text), width, indent));
  };
  say("What the demo found in the embedded data: a study of an image model and LLM fine-tuning on 1 and 2 "
      "H200s, a real PyTorch-profiler trace, a generated 4-rank run and the MLPerf Training v4.1 results.");
  say("Study configurations: arm=base (fp32, pageable, NCHW, DataLoader) or arm=tuned (fp16, pinned, "
      "channels-last, GPU-side loader); variant=ref is the arm as is, and fp64, precision, pin, layout, loader "
      "each change one of those settings. E' = (N_ref x T_ref) / (N x T_N) is the scaling efficiency: 1 is "
      "perfect, the break-even is the most GPUs with E' >= 0.8.");
  for (const auto& h : found.highlights) say("- " + h, "  ");
  say(fmt::format("Report: {} ({:.1f} MB, made in {:.1f} s). Open it in a browser; it needs no network.",
                  fs::absolute(found.report).string(), static_cast<double>(fs::file_size(found.report)) / 1e6,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  say("Now try your own: scalescope analyze YOUR_TRACE.json.gz (a PyTorch-profiler trace, a folder of them, or an "
      "Nsight Systems SQLite export), or scalescope profile -o run -- python3 train.py on a GPU machine.");
}

}  // namespace

void add_demo_command(CLI::App& app, int& /*exit_code*/) {
  auto args = std::make_shared<DemoArgs>();
  auto* cmd =
      app.add_subcommand("demo",
                         "Analyse the embedded data (H200 study, MLPerf v4.1, sample runs) and write the HTML report; "
                         "--gpu: a short real profiled sweep on this machine's GPUs");
  cmd->footer(
      "Examples:\n  scalescope demo -o /tmp/demo          # any machine, under a minute\n"
      "  scalescope demo --gpu -o /tmp/gpu-demo  # GPUs, Python with torch and torchvision, torchrun; ~2-3 min on 2 GPUs");
  cmd->add_option("-o,--output-dir", args->dir, "Folder for the report (and, with --gpu, the sweep)")
      ->capture_default_str();
  cmd->add_option("--study", args->study,
                  "A folder of study results laid out like examples/h200 (*.db, traces/*.ssrun) to use instead of "
                  "the embedded ones");
  cmd->add_flag("--gpu", args->gpu, "Run a short real sweep of the reference image workload on this machine's GPUs");
  auto& g = args->gpu_options;
  cmd->add_option("--max-gpus", g.max_gpus, "--gpu: use at most this many GPUs (0: all visible)")
      ->capture_default_str();
  cmd->add_option("--repeat", g.repeat, "--gpu: repetitions of each GPU count")
      ->capture_default_str()
      ->check(CLI::Range(1, 20));
  cmd->add_option("--steps", g.steps, "--gpu: training steps per run")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  cmd->add_option("--warmup-steps", g.warmup_steps, "--gpu: steps left out of the figures")->capture_default_str();
  cmd->add_option("--image-size", g.image_size, "--gpu: image side in pixels")->capture_default_str();
  cmd->add_option("--batch-size", g.batch_size, "--gpu: batch per GPU")->capture_default_str();
  cmd->add_option("--workload", g.workload, "--gpu: path of workloads/image_ddp.py (default: found from the build)");
  cmd->add_option("--python", g.python, "--gpu: the Python that must import torch")->capture_default_str();
  cmd->add_option("--run-timeout", g.run_timeout_s, "--gpu: seconds before a run is killed")
      ->capture_default_str()
      ->check(number_in({0, trace::kMaxDurationS, true}));
  add_output_format(cmd, args->format, "how to print what was found");
  cmd->callback([args] {
    const report::OutputFormat format = args->format;
    if (args->gpu) {
      run_gpu(*args, format);
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const demo::DemoReport found = demo::write_demo_report({.out_dir = args->dir, .study = args->study});
    if (format != report::OutputFormat::kTable)
      print_found(format, demo::found_table(found.highlights, {{"report", fs::absolute(found.report).string()}}),
                  demo::demo_json(found));
    else
      print_demo_report(found, t0);
  });
}

}  // namespace scalescope::cli
