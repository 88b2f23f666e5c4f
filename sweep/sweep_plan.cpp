// The plan of a sweep: parsing options, validating the command template,
// the interleaved run order and the launch line of each run.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <random>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "sweep/metric_scanner.hpp"
#include "sweep/sweep.hpp"
#include "base/enum_names.hpp"
#include "base/error.hpp"
#include "base/number_check.hpp"
#include "base/text_input.hpp"

namespace scalescope::sweep {
namespace {

const std::vector<std::string>& builtin_placeholders() {
  static const std::vector<std::string> k = {"gpus", "nodes", "rep", "run_dir", "gpus_per_node"};
  return k;
}

bool valid_key(std::string_view k) {
  if (k.empty() || !(std::isalpha(static_cast<unsigned char>(k[0])) || k[0] == '_')) return false;
  return std::all_of(k.begin(), k.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Splits a token into literal text and placeholder names; `{{`/`}}` are
// literal braces. Throws on an unclosed or empty placeholder.
template <typename OnText, typename OnName>
void scan_token(std::string_view token, OnText on_text, OnName on_name) {
  size_t i = 0;
  while (i < token.size()) {
    const char c = token[i];
    if (c == '{' && i + 1 < token.size() && token[i + 1] == '{') {
      on_text("{");
      i += 2;
    } else if (c == '}' && i + 1 < token.size() && token[i + 1] == '}') {
      on_text("}");
      i += 2;
    } else if (c == '{') {
      const size_t end = token.find('}', i + 1);
      if (end == std::string_view::npos)
        fail("command template token '{}' has an unclosed '{{' (write '{{{{' for a literal brace)", token);
      const auto name = token.substr(i + 1, end - i - 1);
      if (!valid_key(name)) fail("command template token '{}' has an invalid placeholder '{{{}}}'", token, name);
      on_name(name);
      i = end + 1;
    } else {
      on_text(token.substr(i, 1));
      ++i;
    }
  }
}

int parse_int(std::string_view text, std::string_view what) {
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) fail("{} '{}' is not a whole number", what, text);
  return v;
}

std::string slug(std::string_view s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return out.substr(0, 40);
}

constexpr std::array<const char*, 4> kLauncherNames{"local", "torchrun", "srun", "mpirun"};
constexpr std::array<const char*, 2> kSchedulerNames{"none", "slurm"};
constexpr std::array<const char*, 6> kStatusNames{"running", "ok", "failed", "timeout", "crashed", "error"};

}  // namespace

std::optional<LauncherKind> parse_launcher(std::string_view name) {
  return value_by_name<LauncherKind>(kLauncherNames, name);
}

const char* launcher_name(LauncherKind kind) { return name_by_value<LauncherKind::kMpirun>(kLauncherNames, kind, "?"); }

std::optional<SchedulerKind> parse_scheduler(std::string_view name) {
  return value_by_name<SchedulerKind>(kSchedulerNames, name);
}

const char* scheduler_name(SchedulerKind kind) {
  return name_by_value<SchedulerKind::kSlurm>(kSchedulerNames, kind, "?");
}

int gpus_per_node(const SweepSpec& spec, const PlannedRun& run) { return spec.cpu_only ? 0 : run.gpus / run.nodes; }

MetricSpec MetricSpec::parse(std::string_view text) {
  MetricSpec m;
  if (text == "wall") {
    m.kind = MetricKind::kWall;
  } else if (text == "mlperf") {
    m.kind = MetricKind::kMlperf;
  } else if (text == "trace") {
    m.kind = MetricKind::kTrace;
  } else if (text.starts_with("regex:")) {
    m.kind = MetricKind::kRegex;
    m.pattern = std::string(text.substr(6));
    try {
      MetricRegex check(m.pattern);
    } catch (const Error& e) {
      fail("--metric '{}': {}", text, e.what());
    }
  } else {
    fail("--metric '{}' is not one of wall, mlperf, trace, regex:PATTERN", text);
  }
  return m;
}

std::string MetricSpec::name() const {
  switch (kind) {
    case MetricKind::kWall: return "wall_s";
    case MetricKind::kRegex: {
      // Named after what it captures: the identifier just before the first
      // group ("epoch_time_s=([0-9.]+)" -> "epoch_time_s", so the unit the log
      // gives travels with it); "regex" when the pattern has none.
      const size_t group = pattern.find('(');
      std::string_view before = std::string_view(pattern).substr(0, group == std::string::npos ? 0 : group);
      auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
      while (!before.empty() && !ident(before.back())) before.remove_suffix(1);
      size_t start = before.size();
      while (start > 0 && ident(before[start - 1])) --start;
      std::string name(before.substr(start));
      // A letter first (not "\\d" or a count), and not a name of the built-in metrics.
      if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0])) || name == "wall_s" ||
          name == "mlperf_s" || name == "iteration_s" || name == "energy_j")
        return "regex";
      if (start >= 1 && before[start - 1] == '\\') return "regex";  // an escape such as \\s, not a word
      return name;
    }
    case MetricKind::kMlperf: return "mlperf_s";
    case MetricKind::kTrace: return "iteration_s";
  }
  return "?";
}

Variable Variable::parse(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) fail("--vary '{}' is not KEY=V1,V2,...", text);
  Variable v;
  v.key = std::string(text.substr(0, eq));
  if (!valid_key(v.key)) fail("--vary '{}': '{}' is not a valid key (letters, digits, _)", text, v.key);
  for (const auto& b : builtin_placeholders())
    if (v.key == b) fail("--vary '{}': '{}' is a built-in placeholder, use --gpus/--nodes instead", text, v.key);
  for (std::string_view value : trace::split(text.substr(eq + 1), ',')) v.values.emplace_back(value);
  std::set<std::string> seen;
  for (const auto& value : v.values) {
    if (value.empty()) fail("--vary '{}' has an empty value", text);
    if (!seen.insert(value).second) fail("--vary '{}' lists '{}' twice", text, value);
  }
  return v;
}

std::vector<int> parse_gpu_list(std::string_view text) {
  std::vector<int> out;
  for (std::string_view part : trace::split(text, ',')) {
    const int n = parse_int(part, "GPU count");
    if (n < 1) fail("GPU count {} in '{}' is not positive", n, text);
    if (std::find(out.begin(), out.end(), n) != out.end()) fail("GPU count {} appears twice in '{}'", n, text);
    out.push_back(n);
  }
  return out;
}

std::string SweepSpec::to_json() const {
  nlohmann::ordered_json j;
  j["gpus"] = gpus;
  j["repeat"] = repeat;
  nlohmann::ordered_json vars = nlohmann::ordered_json::array();
  for (const auto& v : vary) vars.push_back({{"key", v.key}, {"values", v.values}});
  j["vary"] = vars;
  j["launcher"] = launcher_name(launcher);
  j["nodes"] = nodes;
  j["profile"] = profile;
  j["metric"] = metric.kind == MetricKind::kRegex ? "regex:" + metric.pattern : metric.name();
  j["higher_is_better"] = metric.higher_is_better;
  j["seed"] = seed;
  j["command"] = command;
  // Only when set: a sweep planned before these existed resumes as it was.
  if (scheduler != SchedulerKind::kNone) j["scheduler"] = scheduler_name(scheduler);
  if (cpu_only) j["cpu_only"] = true;
  return j.dump(-1, ' ', false,
                nlohmann::ordered_json::error_handler_t::replace);  // bytes that are not UTF-8 become U+FFFD
}

std::string PlannedRun::config_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : config) j[k] = v;
  return j.dump(-1, ' ', false,
                nlohmann::ordered_json::error_handler_t::replace);  // bytes that are not UTF-8 become U+FFFD
}

std::string PlannedRun::config_label() const {
  std::vector<std::string> parts;
  for (const auto& [k, v] : config) parts.push_back(k + "=" + v);
  return fmt::format("{}", fmt::join(parts, " "));
}

std::string PlannedRun::dir_name() const {
  std::string cfg;
  for (const auto& [k, v] : config) cfg += "-" + slug(k) + "_" + slug(v);
  return fmt::format("{:04d}-g{}{}-r{}", index, gpus, cfg, rep);
}

std::vector<PlannedRun> plan_runs(const SweepSpec& spec) {
  if (spec.command.empty()) fail("no command template: put the job's command after '--'");
  if (spec.gpus.empty()) fail("--gpus lists no GPU count");
  if (spec.repeat < 1) fail("--repeat {} is not a positive number", spec.repeat);
  if (spec.nodes < 1) fail("--nodes {} is not a positive number", spec.nodes);
  // Seconds added to a clock when a run is killed: never NaN or past what it holds.
  trace::check_number(spec.timeout_s, "--timeout (seconds)", {0, trace::kMaxDurationS});
  trace::check_number(spec.kill_grace_s, "--kill-grace (seconds)", {0, trace::kMaxDurationS});
  if (spec.metric.kind == MetricKind::kTrace && !spec.profile) fail("--metric trace needs --profile");
  std::set<std::string> keys;
  for (const auto& v : spec.vary)
    if (!keys.insert(v.key).second) fail("--vary {} is given twice", v.key);
  for (int g : spec.gpus) {
    if (g < 1) fail("GPU count {} is not positive", g);
    if (g % spec.nodes != 0)
      fail("--gpus {} cannot be spread evenly over --nodes {}: each node must run the same number of GPUs", g,
           spec.nodes);
  }
  // Placeholders: all known, and each varied key used somewhere.
  std::set<std::string> used;
  for (const auto& token : spec.command)
    scan_token(
        token, [](std::string_view) {}, [&](std::string_view name) { used.insert(std::string(name)); });
  for (const auto& name : used) {
    const bool builtin =
        std::find(builtin_placeholders().begin(), builtin_placeholders().end(), name) != builtin_placeholders().end();
    if (!builtin && !keys.count(name))
      fail("the command template uses {{{}}}, which is neither a built-in placeholder ({}) nor a --vary key", name,
           fmt::to_string(fmt::join(builtin_placeholders(), ", ")));
  }
  for (const auto& v : spec.vary)
    if (!used.count(v.key))
      fail("--vary {}: the command template has no {{{}}} placeholder, so its values would all run the same command",
           v.key, v.key);
  if (spec.launcher == LauncherKind::kLocal && spec.gpus.size() > 1 && !used.count("gpus") &&
      !used.count("gpus_per_node"))
    fail(
        "--launcher local with several GPU counts: the command template has no {{gpus}} placeholder, so every GPU "
        "count would run the same command");

  // Size first: the product of --vary lists can be huge.
  constexpr size_t kMaxRuns = 1'000'000;
  size_t total = spec.gpus.size() * static_cast<size_t>(spec.repeat);
  for (const auto& v : spec.vary) {
    if (total > kMaxRuns) break;
    total *= v.values.size();
  }
  if (total > kMaxRuns) fail("the sweep would plan more than a million runs");
  // Cartesian product of the varied values.
  std::vector<std::vector<std::pair<std::string, std::string>>> configs = {{}};
  for (const auto& v : spec.vary) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& c : configs)
      for (const auto& value : v.values) {
        auto d = c;
        d.emplace_back(v.key, value);
        next.push_back(std::move(d));
      }
    configs = std::move(next);
  }
  const size_t cells = configs.size() * spec.gpus.size();
  std::vector<PlannedRun> plan;
  for (int rep = 0; rep < spec.repeat; ++rep) {
    std::vector<size_t> order(cells);
    for (size_t i = 0; i < cells; ++i) order[i] = i;
    // Fisher-Yates with the standard mt19937_64 (portable, unlike std::shuffle).
    std::mt19937_64 rng(spec.seed + static_cast<uint64_t>(rep));
    for (size_t i = cells; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
    for (size_t cell : order) {
      PlannedRun r;
      r.index = static_cast<int>(plan.size());
      r.config = configs[cell / spec.gpus.size()];
      r.gpus = spec.gpus[cell % spec.gpus.size()];
      r.nodes = spec.nodes;
      r.rep = rep;
      plan.push_back(std::move(r));
    }
  }
  return plan;
}

std::vector<std::string> expand_template(const SweepSpec& spec, const PlannedRun& run, const std::string& run_dir) {
  std::map<std::string, std::string, std::less<>> values = {
      {"gpus", std::to_string(run.gpus)},
      {"nodes", std::to_string(run.nodes)},
      {"rep", std::to_string(run.rep)},
      {"run_dir", run_dir},
      {"gpus_per_node", std::to_string(run.gpus / run.nodes)},
  };
  for (const auto& [k, v] : run.config) values[k] = v;
  std::vector<std::string> out;
  for (const auto& token : spec.command) {
    std::string s;
    scan_token(
        token, [&](std::string_view t) { s += t; },
        [&](std::string_view name) {
          auto it = values.find(name);
          if (it == values.end()) fail("the command template uses {{{}}}, which has no value", name);
          s += it->second;
        });
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> launch_command(const SweepSpec& spec, const PlannedRun& run, const std::string& run_dir,
                                        const std::map<std::string, std::string>& env) {
  auto cmd = expand_template(spec, run, run_dir);
  const int per_node = run.gpus / run.nodes;
  std::vector<std::string> profiler;
  if (spec.profile) {
    const std::string exe = spec.scalescope_exe.empty() ? "scalescope" : spec.scalescope_exe;
    profiler = {exe, "profile", "-o", run_dir + "/trace.ssrun", "--"};
  }
  // The profiler wraps the launcher: its injection environment reaches every
  // rank (srun and mpirun pass the environment on), and one profile owns the
  // trace folder instead of one per rank.
  std::vector<std::string> out = profiler;
  auto append = [&](const std::vector<std::string>& v) { out.insert(out.end(), v.begin(), v.end()); };
  switch (spec.launcher) {
    case LauncherKind::kLocal: append(cmd); break;
    case LauncherKind::kTorchrun: {
      out.push_back("torchrun");
      if (run.nodes == 1) {
        out.push_back("--standalone");
        out.push_back("--nnodes=1");
      } else {
        auto addr = env.find("MASTER_ADDR");
        if (addr == env.end() || addr->second.empty())
          fail(
              "--launcher torchrun with --nodes {}: set MASTER_ADDR (and MASTER_PORT, default 29500) for the "
              "rendezvous",
              run.nodes);
        auto port = env.find("MASTER_PORT");
        const std::string p = port == env.end() || port->second.empty() ? "29500" : port->second;
        out.push_back(fmt::format("--nnodes={}", run.nodes));
        out.push_back("--rdzv_backend=c10d");
        out.push_back(fmt::format("--rdzv_endpoint={}:{}", addr->second, p));
        out.push_back(fmt::format("--rdzv_id=scalescope-{}", run.index));
      }
      out.push_back(fmt::format("--nproc_per_node={}", per_node));
      // torchrun runs a .py script with Python itself; anything else is executed as is.
      if (!cmd.front().ends_with(".py")) out.push_back("--no-python");
      append(cmd);
      break;
    }
    case LauncherKind::kSrun:
      append({"srun", fmt::format("--nodes={}", run.nodes), fmt::format("--ntasks-per-node={}", per_node)});
      if (const int g = gpus_per_node(spec, run); g > 0) out.push_back(fmt::format("--gpus-per-node={}", g));
      out.push_back("--kill-on-bad-exit=1");
      append(cmd);
      break;
    case LauncherKind::kMpirun:
      append({"mpirun", "-np", std::to_string(run.gpus)});
      if (run.nodes > 1) append({"--map-by", fmt::format("ppr:{}:node", per_node)});
      append(cmd);
      break;
  }
  return out;
}

const char* status_name(RunStatus status) { return name_by_value<RunStatus::kError>(kStatusNames, status, "?"); }

std::optional<RunStatus> parse_status(std::string_view name) { return value_by_name<RunStatus>(kStatusNames, name); }

}  // namespace scalescope::sweep
