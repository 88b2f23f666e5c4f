#include "collect/sidecar.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/json_fields.hpp"
#include "collect/collector_common.hpp"
#include "collect/host_facts.hpp"
#include "collect/node_facts.hpp"
#include "scalescope_version.hpp"

namespace scalescope::collect {

std::filesystem::path Sidecar::describe() {
  meta_.source = "collector";
  meta_.producer_version = std::string(SCALESCOPE_VERSION) + " (" + SCALESCOPE_GIT_DESCRIBE + ")";
  Environment env = current_environment();
  fill_host_facts(meta_, env);
  const NodeInfo node = detect_node(env);
  add_node_facts(meta_, node);
  if (test_clock_offset_ns() != 0) meta_.extra["test_clock_offset_ns"] = std::to_string(test_clock_offset_ns());
  meta_.clock.push_back({cupti_now(), unix_now_ns()});
  meta_.extra["api"] = std::string(to_string(options_.api));
  if (options_.api == ApiMode::kDefault) meta_.extra["api_records"] = std::string(to_string(options_.api_records));
  meta_.extra["capture_range"] = format_capture_range(options_);
  meta_.extra["delay_s"] = std::to_string(options_.delay_s);
  meta_.extra["duration_s"] = std::to_string(options_.duration_s);
  meta_.extra["buffer_mb"] = std::to_string(options_.buffer_mb);
  if (options_.discard) meta_.extra["discard"] = "1";
  meta_.extra["activities"] = format_activities(options_.activities);
  meta_.extra["detach"] = options_.detach ? "1" : "0";

  std::string stem = meta_.hostname + "-" + std::to_string(meta_.pid);
  trace_path_ = std::filesystem::path(options_.run_dir) / (stem + std::string(trace::kTraceFileExtension));
  sidecar_path_ = std::filesystem::path(options_.run_dir) / (stem + ".json");
  nvml_owner_path_ = std::filesystem::path(options_.run_dir) / ("nvml-" + meta_.hostname + ".rank");
  // The node's facts once per node (local rank 0 writes them; a process
  // without a local rank only when no file is there yet).
  std::error_code node_ec;
  if (meta_.local_rank == 0 ||
      (meta_.local_rank < 0 &&
       !std::filesystem::exists(std::filesystem::path(options_.run_dir) / ("node-" + meta_.hostname + ".json"),
                                node_ec)))
    write_node_facts(options_.run_dir, node);
  return trace_path_;
}

void Sidecar::start_samplers() {
  start_nvml();
  start_host_sampler();
}

void Sidecar::stop_samplers() {
  if (nvml_) nvml_->stop();  // assigned by the encoder thread: stable only now
  if (host_) host_->stop();  // writes every live thread's last row
}

// The PCI bus id of every CUDA ordinal of this process (after
// CUDA_VISIBLE_DEVICES), from the driver the job already loaded; false while
// cuInit has not finished, or without a driver.
namespace {

constexpr auto kNvmlMapWait = std::chrono::seconds(30);

bool cuda_bus_ids(std::vector<std::string>& out) {
  out.clear();
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!cuda) return false;
  using CountFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using BusIdFn = int (*)(char*, int, int);
  auto count = reinterpret_cast<CountFn>(dlsym(cuda, "cuDeviceGetCount"));
  auto get = reinterpret_cast<GetFn>(dlsym(cuda, "cuDeviceGet"));
  auto bus_id = reinterpret_cast<BusIdFn>(dlsym(cuda, "cuDeviceGetPCIBusId"));
  int n = 0;
  bool ok = count && get && bus_id && count(&n) == 0 && n > 0;
  for (int i = 0; ok && i < n; ++i) {
    int device = 0;
    char bus[64] = {};
    ok = get(&device, i) == 0 && bus_id(bus, sizeof(bus), device) == 0;
    if (ok) out.emplace_back(bus);
  }
  dlclose(cuda);
  return ok;
}

}  // namespace

// Counters carry CUDA ordinals, like kernels: NVML's order (PCI order over
// the machine) is matched to this process's CUDA devices by bus id. Until the
// driver answers, samples wait in the sampler (bounded); after kNvmlMapWait,
// or at the end, NVML's order is kept and the metadata says so.
void Sidecar::map_nvml_devices(bool last_chance) {
  if (!nvml_ || nvml_->has_device_map()) return;
  std::vector<std::string> cuda;
  std::vector<int32_t> map;
  std::string text;
  if (cuda_bus_ids(cuda)) {
    map = map_nvml_to_cuda(nvml_->bus_ids(), cuda);
    text = fmt::format("{}", fmt::join(map, ","));
  } else if (last_chance || std::chrono::steady_clock::now() - nvml_start_ >= kNvmlMapWait) {
    for (size_t i = 0; i < nvml_->device_count(); ++i) map.push_back(static_cast<int32_t>(i));
    text = "unknown: NVML order kept";
  } else {
    return;
  }
  {
    std::lock_guard lock(facts_mutex_);
    meta_.extra["nvml_cuda_ordinals"] = text;  // per NVML index: the CUDA ordinal, -1 = not visible here
  }
  nvml_->set_device_map(std::move(map));
}

// One sampler per node: a process without a rank (the torchrun agent, which
// loads CUDA and so is traced, or a plain single-process job) samples from
// its start, and stops once a ranked local rank 0 on the same host says it
// samples. Measured without this: the agent's sampler cost 5.7 CPU-s in a
// 58 s job, and its counters are left out with the agent anyway.
void Sidecar::hand_over_nvml() {
  if (!nvml_ || nvml_handed_over_ || meta_.rank >= 0) return;
  std::error_code ec;
  if (!std::filesystem::exists(nvml_owner_path_, ec)) return;
  nvml_->stop();
  nvml_handed_over_ = true;
  std::lock_guard lock(facts_mutex_);
  meta_.extra["nvml_handed_over"] = "1";
}

void Sidecar::add_rows(trace::Trace& batch, trace::StringTable& strings, bool stopping) {
  hand_over_nvml();
  if (nvml_) {
    map_nvml_devices(stopping);
    if (nvml_->has_device_map()) {
      std::vector<trace::CounterRecord> counters;
      nvml_->drain(counters);
      for (const auto& c : counters) batch.counters.push(c);
    }
  }
  if (host_) host_->drain(batch, strings);
}

void Sidecar::start_nvml() {
  // One NVML sampler per node: local rank 0, or the only process. Started
  // here, not inside cuInit, so that NVML's own initialisation never runs
  // under the CUDA driver's init.
  if (options_.nvml_hz <= 0 || meta_.local_rank > 0) return;
  NvmlApi api;
  std::string nvml_error;
  if (api.load("libnvidia-ml.so.1", &nvml_error)) nvml_ = NvmlSampler::create(api, cupti_now, &nvml_error);
  std::lock_guard lock(facts_mutex_);
  if (nvml_) {
    nvml_start_ = std::chrono::steady_clock::now();
    nvml_->start(options_.nvml_hz);
    if (meta_.rank >= 0) std::ofstream(nvml_owner_path_) << meta_.pid << '\n';  // see hand_over_nvml()
    meta_.extra["nvml_hz"] = std::to_string(options_.nvml_hz);
    meta_.extra["nvml_devices"] = std::to_string(nvml_->device_count());
  } else {
    problems_.add(trace::Problem::kNvmlUnavailable);
    meta_.extra["nvml"] = nvml_error;
  }
}

// Every traced process samples its own threads and its descendants'
// (DataLoader workers), except descendants with their own collector (the
// ranks under a traced torchrun agent): those have a trace file in the run
// directory.
void Sidecar::start_host_sampler() {
  if (options_.host_hz <= 0) return;
  HostSamplerOptions o;
  o.pid = meta_.pid;
  o.stack_hz = options_.host_stacks ? options_.host_hz : 0;
  const std::filesystem::path dir = options_.run_dir;
  const std::string host = meta_.hostname;
  o.traced_elsewhere = [dir, host](uint32_t pid) {
    std::error_code ec;
    return std::filesystem::exists(dir / (host + "-" + std::to_string(pid) + std::string(trace::kTraceFileExtension)),
                                   ec);
  };
  std::string error;
  auto sampler = HostSampler::create(std::move(o), cupti_now, &error);
  std::lock_guard lock(facts_mutex_);
  if (!sampler) {
    meta_.extra["host_sampling"] = "off: " + error;
    return;
  }
  host_ = std::move(sampler);
  host_->start(options_.host_hz);
  meta_.extra["host_sampling_method"] = std::string(host_->method());
  meta_.extra["host_sampling_discovery"] = std::string(host_->discovery());
  meta_.extra["host_stack_sampling"] = options_.host_stacks ? host_->stack_method() : "off: SCALESCOPE_HOST_STACKS=0";
  meta_.extra["host_hz"] = fmt::format("{:g}", options_.host_hz);
}

uint64_t Sidecar::collector_cpu_ns(uint64_t encoder_cpu_ns) const {
  return encoder_cpu_ns + (nvml_ ? nvml_->thread_cpu_ns() : 0) + (host_ ? host_->thread_cpu_ns() : 0);
}

void Sidecar::add_end_facts(uint64_t encoder_cpu_ns) {
  meta_.clock.push_back({cupti_now(), unix_now_ns()});
  if (auto maps = read_text_file("/proc/self/numa_maps"))
    meta_.pages_at_end = parse_numa_maps(*maps, static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  // PCI bus ids come from the driver the job already loaded (no new CUDA init).
  if (void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
    using BusIdFn = int (*)(char*, int, int);
    if (auto fn = reinterpret_cast<BusIdFn>(dlsym(cuda, "cuDeviceGetPCIBusId")))
      for (auto& d : meta_.devices) {
        char bus[64] = {};
        if (fn(bus, sizeof(bus), static_cast<int>(d.id)) == 0) {
          d.pci_bus_id = normalize_pci_bus_id(bus);
          d.numa_node = read_pci_numa_node(d.pci_bus_id);
        }
      }
    dlclose(cuda);
  }
  meta_.extra["collector_cpu_ns"] = std::to_string(collector_cpu_ns(encoder_cpu_ns));
  if (host_) {
    meta_.extra["host_sampler_cpu_ns"] = std::to_string(host_->thread_cpu_ns());
    meta_.extra["host_samples_taken"] = std::to_string(host_->samples_taken());
    meta_.extra["host_threads_seen"] = std::to_string(host_->threads_seen());
    meta_.extra["host_processes_seen"] = std::to_string(host_->processes_seen());
    if (host_->samples_dropped() > 0) meta_.extra["host_samples_dropped"] = std::to_string(host_->samples_dropped());
    if (host_->stacks()) {
      meta_.extra["host_stack_samples"] = std::to_string(host_->stack_samples());
      meta_.extra["host_stack_samples_lost"] = std::to_string(host_->stack_samples_lost());
      meta_.extra["host_stack_threads_refused"] = std::to_string(host_->stack_threads_refused());
      meta_.extra["host_stack_walks_cut"] = std::to_string(host_->stack_walks_cut());
      meta_.extra["host_stack_modules_cpu_ns"] = std::to_string(host_->stack_modules_ns());
    }
  }
  if (nvml_) {
    meta_.extra["nvml_samples_unmapped"] = std::to_string(nvml_->unmapped_samples());
    meta_.extra["nvml_cpu_ns"] = std::to_string(nvml_->thread_cpu_ns());
    for (size_t q = 0; q < static_cast<size_t>(NvmlQuery::kCount); ++q)
      meta_.extra[std::string("nvml_cpu_ns_") + nvml_query_name(NvmlQuery(q))] =
          std::to_string(nvml_->query_cpu_ns(NvmlQuery(q)));
  }
}

void Sidecar::write(const std::string& status, const TraceEncoder& encoder, CaptureWindow& window,
                    uint64_t encoder_cpu_ns) {
  nlohmann::json j = SCALESCOPE_JSON_FIELDS(meta_, pid, hostname, rank, local_rank, world_size, launcher, command_line);
  j["status"] = status;
  // A Python interpreter (its C API is in the process): `profile` then
  // expects the Python bootstrap's record beside this summary and says so
  // when it is missing (python -I or -S, or a PYTHONPATH replaced).
  j["python_interpreter"] = dlsym(RTLD_DEFAULT, "Py_IsInitialized") != nullptr;
  const TraceSink* sink = encoder.sink();
  j["trace_file"] = sink ? trace_path_.filename().string() : "";
  j["events_written"] = sink ? sink->events_written() : 0;
  j["events_lost_on_write"] = sink ? sink->events_lost() : 0;
  j["cupti_dropped_records"] = encoder.cupti_dropped();
  j["cupti_incomplete_records"] = encoder.incomplete_records();
  j["buffer_pool_exhausted"] = encoder.pool_exhausted();
  j["buffers_discarded"] = encoder.buffers_discarded();
  j["bytes_written"] = sink ? sink->bytes_written() : 0;
  j["collector_cpu_ns"] = collector_cpu_ns(encoder_cpu_ns);
  j["host_sampler_cpu_ns"] = host_ ? host_->thread_cpu_ns() : 0;  // of collector_cpu_ns
  j["nvml"] = nvml_ != nullptr;
  j["nvml_cpu_ns"] = nvml_ ? nvml_->thread_cpu_ns() : 0;  // of collector_cpu_ns
  if (nvml_) {                                            // of nvml_cpu_ns, per query family: which counter costs what
    nlohmann::json by_query;
    for (size_t q = 0; q < static_cast<size_t>(NvmlQuery::kCount); ++q)
      by_query[nvml_query_name(NvmlQuery(q))] = nvml_->query_cpu_ns(NvmlQuery(q));
    j["nvml_query_cpu_ns"] = std::move(by_query);
  }
  j["devices"] = meta_.devices.size();
  j["activities"] = format_activities(options_.activities);
  j["windows_opened"] = window.windows_opened();
  j["cupti_detaches"] = window.detaches();
  j["sampling"] = window.sampling_json();
  std::error_code ec;
  auto tmp = sidecar_path_;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump(1) << '\n';
    if (!out) return;  // no space: the trace itself still has everything
  }
  std::filesystem::rename(tmp, sidecar_path_, ec);
}

}  // namespace scalescope::collect
