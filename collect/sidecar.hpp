// The collector's side outputs: the process's facts (trace metadata and
// problems), the node's facts file, the NVML and host thread samplers whose
// rows join the trace, and the <host>-<pid>.json sidecar that `scalescope
// profile` summarises in run.json. One piece of libscalescope-collector.so
// (collector.cpp composes it with the capture window and the encoder).
//
// Threads and locks: describe() before any thread starts; the samplers are
// started, drained and handed over on the encoder thread; the end facts and
// the sidecar are written at exit after the encoder thread stopped.
// facts_mutex_ guards the metadata the encoder thread adds while the job
// runs (sampler facts, NVML's device map).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "collect/capture_window.hpp"
#include "collect/collector_options.hpp"
#include "collect/host_sampler.hpp"
#include "collect/nvml_sampler.hpp"
#include "collect/trace_encoder.hpp"
#include "trace/model/trace.hpp"

namespace scalescope::collect {

class Sidecar {
 public:
  explicit Sidecar(const CollectorOptions& options) : options_(options) {}

  // The process's and the run's facts (host, node, rank, options); the
  // node's facts file once per node. Returns the trace file's path.
  std::filesystem::path describe();
  trace::Metadata& meta() { return meta_; }
  trace::ProblemCounts& problems() { return problems_; }

  // Encoder thread: start the samplers; their rows into each batch.
  void start_samplers();
  void add_rows(trace::Trace& batch, trace::StringTable& strings, bool stopping);
  // At exit, after the encoder thread: every thread's last row is sampled.
  void stop_samplers();
  bool has_samplers() const { return nvml_ || host_; }

  // At exit: clocks, page placement, the devices' bus ids and NUMA nodes
  // (after the encoder set the devices), and the samplers' costs.
  void add_end_facts(uint64_t encoder_cpu_ns);
  // What `scalescope profile` summarises in run.json without reading traces.
  void write(const std::string& status, const TraceEncoder& encoder, CaptureWindow& window, uint64_t encoder_cpu_ns);

 private:
  void start_nvml();
  void start_host_sampler();
  void hand_over_nvml();
  void map_nvml_devices(bool last_chance);
  uint64_t collector_cpu_ns(uint64_t encoder_cpu_ns) const;

  const CollectorOptions& options_;
  trace::Metadata meta_;  // extra: under facts_mutex_ while the encoder thread runs
  trace::ProblemCounts problems_;
  std::mutex facts_mutex_;
  std::filesystem::path trace_path_, sidecar_path_;
  std::unique_ptr<NvmlSampler> nvml_;  // assigned by the encoder thread
  std::unique_ptr<HostSampler> host_;  // assigned by the encoder thread
  std::chrono::steady_clock::time_point nvml_start_;
  std::filesystem::path nvml_owner_path_;  // <run dir>/nvml-<host>.rank: a ranked sampler runs on this node
  bool nvml_handed_over_ = false;
};

}  // namespace scalescope::collect
