#include "demo/gpu_demo.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/html_report.hpp"
#include "report/progress.hpp"
#include "report/sweep_progress.hpp"
#include "scaling/scaling.hpp"
#include "base/error.hpp"
#include "trace/model/trace.hpp"
#include "trace/model/trace_file.hpp"
#include "trace/import/run_loader.hpp"

namespace scalescope::demo {

using report::HtmlReport;
using report::Progress;
using report::ReportOptions;
using report::sweep_progress_printer;

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kWorkload = "workloads/image_ddp.py";
constexpr std::string_view kMetricPattern = "epoch_time_s=([0-9.eE+-]+)";

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// The last non-empty line of a log, for one-line errors.
std::string last_line(const fs::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  if (last.size() > 300) last = last.substr(0, 300) + "...";
  return last;
}

std::string read_text(const fs::path& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::string text(limit, '\0');
  in.read(text.data(), static_cast<std::streamsize>(limit));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

bool is_uint(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

GpuDemoHost GpuDemoHost::current() {
  GpuDemoHost h;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    h.cuda_visible_devices = v;
    h.cuda_visible_devices_set = true;
  }
  h.path_env = env_or_empty("PATH");
  std::error_code ec;
  h.self_exe = fs::read_symlink("/proc/self/exe", ec);
#ifdef SCALESCOPE_DEMO_SOURCE_DIR
  h.source_dir = SCALESCOPE_DEMO_SOURCE_DIR;
#endif
  h.cwd = fs::current_path(ec);
  return h;
}

int visible_gpus(const GpuDemoHost& host) {
  int nodes = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(host.dev_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("nvidia") && is_uint(std::string_view(name).substr(6))) ++nodes;
  }
  if (!host.cuda_visible_devices_set) return nodes;
  // CUDA takes the entries up to the first invalid one: an index out of range,
  // or something that is neither an index nor a GPU/MIG UUID.
  int n = 0;
  std::string_view rest = host.cuda_visible_devices;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (is_uint(item)) {
      if (item.size() > 4 || std::stoi(std::string(item)) >= nodes) break;
    } else if (!item.starts_with("GPU-") && !item.starts_with("MIG-")) {
      break;
    }
    ++n;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return std::min(n, nodes);
}

std::vector<int> demo_gpu_counts(int n) {
  std::vector<int> out;
  for (int g = 1; g <= n; g *= 2) out.push_back(g);
  if (n >= 1 && out.back() != n) out.push_back(n);
  return out;
}

fs::path find_on_path(const std::string& name, const std::string& path_env) {
  std::string_view rest = path_env;
  while (true) {
    const size_t colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    const fs::path candidate = fs::path(dir.empty() ? "." : std::string(dir)) / name;
    if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return candidate;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return {};
}

fs::path find_workload(const std::string& explicit_path, const GpuDemoHost& host) {
  std::error_code ec;
  if (!explicit_path.empty()) {
    if (!fs::is_regular_file(explicit_path, ec)) fail("demo --gpu: --workload {}: no such file", explicit_path);
    return fs::absolute(explicit_path, ec);
  }
  std::vector<fs::path> tried;
  auto consider = [&](const fs::path& root) {
    if (root.empty()) return false;
    tried.push_back(root / kWorkload);
    return fs::is_regular_file(tried.back(), ec);
  };
  if (consider(host.source_dir)) return tried.back();
  // A build folder inside a checkout: build/cli/scalescope -> the checkout.
  for (fs::path dir = host.self_exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
    if (consider(dir)) return tried.back();
  if (consider(host.cwd)) return tried.back();
  std::vector<std::string> names;
  for (const auto& t : tried) names.push_back(t.string());
  fail("demo --gpu: cannot find the reference workload {} (looked at {}); pass --workload PATH", kWorkload,
       fmt::to_string(fmt::join(names, ", ")));
}

std::vector<std::string> torch_check_command(const std::string& python) {
  return {python, "-c",
          "import torch, torchvision; print('scalescope_torch', torch.__version__, "
          "int(torch.cuda.is_available()), torch.cuda.device_count())"};
}

bool parse_torch_check(const std::string& output, TorchInfo& info) {
  std::istringstream in(output);
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string tag, version;
    int cuda = 0, devices = 0;
    if (!(fields >> tag >> version >> cuda >> devices) || tag != "scalescope_torch") continue;
    info = {version, cuda != 0, devices};
    found = true;
  }
  return found;
}

sweep::SweepSpec gpu_demo_spec(const GpuDemoOptions& o, int gpus, const fs::path& workload, const fs::path& self_exe) {
  if (gpus < 1) fail("demo --gpu: no GPU to run on");
  if (o.repeat < 1) fail("demo --gpu: --repeat {} is not a positive count", o.repeat);
  if (o.warmup_steps < 0 || o.steps <= o.warmup_steps)
    fail("demo --gpu: --steps {} must exceed --warmup-steps {}", o.steps, o.warmup_steps);
  if (o.image_size < 32 || o.image_size > 1024) fail("demo --gpu: --image-size {} is outside 32..1024", o.image_size);
  if (o.batch_size < 1) fail("demo --gpu: --batch-size {} is not a positive count", o.batch_size);
  sweep::SweepSpec spec;
  spec.gpus = demo_gpu_counts(gpus);
  spec.repeat = o.repeat;
  spec.launcher = sweep::LauncherKind::kTorchrun;
  spec.profile = true;
  spec.timeout_s = o.run_timeout_s;
  spec.kill_grace_s = 15;
  spec.metric = sweep::MetricSpec::parse(fmt::format("regex:{}", kMetricPattern));
  spec.scalescope_exe = self_exe.string();
  // The plain baseline configuration (fp32, pageable input, NCHW, CPU loader):
  // the advisor has something to say about it. Synthetic data: no download.
  spec.command = {workload.string(), "--synthetic",
                  "--image-size",    std::to_string(o.image_size),
                  "--batch-size",    std::to_string(o.batch_size),
                  "--steps",         std::to_string(o.steps),
                  "--warmup-steps",  std::to_string(o.warmup_steps),
                  "--log-every",     "0",
                  "--seed",          "{rep}"};
  return spec;
}

namespace {

[[noreturn]] void fail_without_gpu(const GpuDemoHost& host) {
  if (host.cuda_visible_devices_set)
    fail(
        "demo --gpu: no NVIDIA GPU visible (CUDA_VISIBLE_DEVICES='{}'; {} has no usable nvidiaN device); run "
        "`scalescope demo` without --gpu",
        host.cuda_visible_devices, host.dev_dir.string());
  fail("demo --gpu: no NVIDIA GPU on this machine (no {}/nvidia0); run `scalescope demo` without --gpu",
       host.dev_dir.string());
}

// Python with torch and CUDA, before any run is started.
TorchInfo check_torch(const GpuDemoOptions& o, const GpuDemoHost& host) {
  std::error_code ec;
  const fs::path check_log = o.out_dir / "torch-check.log";
  fs::remove(check_log, ec);
  const auto check = sweep::run_process(torch_check_command(o.python), check_log, 120, 5, {});
  TorchInfo torch;
  if (check.status != sweep::RunStatus::kOk) {
    if (!check.note.empty() && check.note.find("cannot execute") != std::string::npos)
      fail("demo --gpu: cannot run '{}' ({}); install Python 3 with PyTorch, or pass --python", o.python, check.note);
    fail("demo --gpu: '{}' cannot import torch and torchvision: {} (log: {})", o.python,
         last_line(check_log).empty() ? sweep::status_name(check.status) : last_line(check_log), check_log.string());
  }
  if (!parse_torch_check(read_text(check_log, 1 << 16), torch))
    fail("demo --gpu: '{}' printed no torch version (log: {})", o.python, check_log.string());
  if (!torch.cuda || torch.devices == 0)
    fail("demo --gpu: torch {} sees no CUDA device (torch.cuda.is_available() is false; a CPU-only build?)",
         torch.version);
  if (find_on_path("torchrun", host.path_env).empty())
    fail("demo --gpu: torchrun is not on PATH (it comes with PyTorch; add its folder to PATH)");
  return torch;
}

void run_sweep_resuming(const GpuDemoOptions& o, const sweep::SweepSpec& spec, const GpuDemoResult& result, int visible,
                        const TorchInfo& torch, const fs::path& workload) {
  std::error_code ec;
  sweep::SweepOptions so;
  so.resume = fs::exists(result.database, ec);
  fmt::print(stderr,
             "demo --gpu: {} GPU(s) visible to torch {}; sweeping GPU counts {} x {} repetitions of {} "
             "(synthetic, {} steps, {} px, batch {} per GPU), each run profiled{}\n",
             visible, torch.version, fmt::join(spec.gpus, ","), spec.repeat, workload.string(), o.steps, o.image_size,
             o.batch_size, so.resume ? "; continuing the sweep already in " + result.database.string() : "");
  sweep::SweepSummary summary;
  try {
    summary = sweep::run_sweep(spec, result.database, so, sweep_progress_printer(stderr, ::isatty(STDERR_FILENO) != 0));
  } catch (const Error& e) {
    if (!so.resume || std::string_view(e.what()).find("cannot resume") == std::string_view::npos) throw;
    fail(
        "demo --gpu: the earlier demo in {} ran with other options (GPU counts, --repeat, --steps, ...); pass "
        "another -o folder, or the options it ran with",
        o.out_dir.string());
  }
  if (summary.interrupted)
    fail("demo --gpu: interrupted; the finished runs are kept in {}; run the same command again to continue",
         result.database.string());
}

// The stored runs, split by whether they gave a usable metric.
struct SortedRuns {
  std::vector<const sweep::StoredRun*> good, bad;
};

SortedRuns sort_runs(const sweep::StoredSweep& stored) {
  SortedRuns runs;
  for (const auto& r : stored.runs) {
    const auto m = r.metrics.find(stored.metric);
    if (r.status == sweep::RunStatus::kOk && m != r.metrics.end() && std::isfinite(m->second) && m->second > 0)
      runs.good.push_back(&r);
    else runs.bad.push_back(&r);
  }
  return runs;
}

std::string describe_run(const sweep::StoredRun& r) {
  return fmt::format("run {} ({} GPU(s), repetition {}) {}{}{}; log: {}", r.plan_index, r.gpus, r.rep,
                     sweep::status_name(r.status), r.note.empty() ? "" : ": ", r.note, r.log_path);
}

// The report: the sweep, then the traces of repetition 0 at the smallest and
// largest GPU count measured (one rank's view and the multi-rank view).
// Returns the report's highlights.
std::vector<std::string> write_report(const sweep::SweepSpec& spec, int gpus, const SortedRuns& runs,
                                      const GpuDemoResult& result) {
  std::error_code ec;
  ReportOptions ro;
  ro.title = fmt::format("scalescope demo --gpu: MobileNetV2 DDP on 1..{} GPU(s)", gpus);
  ro.quiet = true;
  HtmlReport report(ro);
  report.add_sweep_database(result.database);
  std::vector<const sweep::StoredRun*> traced;
  for (int g : {spec.gpus.front(), spec.gpus.back()}) {
    for (const auto* r : runs.good)
      if (r->gpus == g && !r->trace_path.empty() && fs::exists(r->trace_path, ec) &&
          std::find(traced.begin(), traced.end(), r) == traced.end() &&
          std::none_of(traced.begin(), traced.end(), [&](const auto* t) { return t->gpus == g; }))
        traced.push_back(r);
  }
  {
    Progress progress("demo: traces", traced.size());
    for (const auto* r : traced) {
      progress.set_detail(fmt::format("{} GPU(s)", r->gpus));
      try {
        report.add_run(fmt::format("{} GPU(s), repetition {} (profiled run {})", r->gpus, r->rep, r->plan_index),
                       trace::load_run(r->trace_path));
      } catch (const Error& e) {
        progress.note(fmt::format("demo --gpu: trace of run {} left out: {}", r->plan_index, e.what()));
      }
      progress.advance();
    }
  }
  report.write(result.report);
  return report.highlights();
}

// Speedup and E' per GPU count.
std::vector<std::string> scaling_lines(const SortedRuns& runs, const std::string& metric) {
  std::map<int, scaling::ScalingPoint> points;
  for (const auto* r : runs.good) {
    auto& p = points[r->gpus];
    p.gpus = r->gpus;
    p.times.push_back(r->metrics.at(metric));
  }
  std::vector<scaling::ScalingPoint> pts;
  for (auto& entry : points) pts.push_back(entry.second);
  const auto table = scaling::scaling_table(pts, {});
  std::vector<std::string> lines;
  for (const auto& row : table.rows) {
    std::string line =
        fmt::format("{} GPU(s): {:.2f} s per 60k images (median of {})", row.gpus, row.time.median, row.time.n);
    if (row.gpus != table.ref_gpus) {
      line += fmt::format(", speedup {:.2f}", row.speedup);
      if (std::isfinite(row.speedup_low)) line += fmt::format(" (CI {:.2f}-{:.2f})", row.speedup_low, row.speedup_high);
      line += fmt::format(", E' {:.2f}", row.efficiency);
      if (std::isfinite(row.efficiency_low))
        line += fmt::format(" (CI {:.2f}-{:.2f})", row.efficiency_low, row.efficiency_high);
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace

GpuDemoResult run_gpu_demo(const GpuDemoOptions& o, const GpuDemoHost& host) {
  const int visible = visible_gpus(host);
  if (visible == 0) fail_without_gpu(host);
  if (o.max_gpus < 0) fail("demo --gpu: --max-gpus {} is negative", o.max_gpus);
  const fs::path workload = find_workload(o.workload, host);
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) fail("{}: cannot create the folder ({})", o.out_dir.string(), ec.message());
  const TorchInfo torch = check_torch(o, host);

  int n = std::min(visible, torch.devices);
  if (o.max_gpus > 0) n = std::min(n, o.max_gpus);
  const auto spec = gpu_demo_spec(o, n, workload, host.self_exe);
  GpuDemoResult result;
  result.database = o.out_dir / "gpu-sweep.db";
  result.report = o.out_dir / "report.html";
  run_sweep_resuming(o, spec, result, visible, torch, workload);

  const auto stored = sweep::read_sweep(result.database);
  const SortedRuns runs = sort_runs(stored);
  result.runs = static_cast<int>(stored.runs.size());
  result.ok = static_cast<int>(runs.good.size());
  if (runs.good.empty()) fail("demo --gpu: every run failed; first: {}", describe_run(*runs.bad.front()));

  const std::vector<std::string> highlights = write_report(spec, n, runs, result);
  // What it found: speedup and E' per GPU count, then the report's highlights.
  result.lines = scaling_lines(runs, stored.metric);
  for (const auto& h : highlights) result.lines.push_back(h);
  for (const auto* r : runs.bad) result.lines.push_back("not ok: " + describe_run(*r));
  return result;
}

nlohmann::json gpu_demo_json(const GpuDemoResult& result) {
  return {{"findings", result.lines},
          {"sweep", fs::absolute(result.database).string()},
          {"report", fs::absolute(result.report).string()},
          {"runs", result.runs},
          {"runs_ok", result.ok}};
}

}  // namespace scalescope::demo
