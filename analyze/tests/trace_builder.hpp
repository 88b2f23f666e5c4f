#pragma once
// Private test helper: builds small synthetic traces with known answers.
#include <string>

#include "trace/model/trace.hpp"

namespace scalescope::analyze::testing {

struct TraceBuilder {
  trace::Trace t;
  TraceBuilder() {
    t.meta.source = "synthetic";
    t.meta.rank = 0;
  }
  TraceBuilder& rank(int32_t r) {
    t.meta.rank = r;
    return *this;
  }
  TraceBuilder& kernel(const std::string& name, int64_t start, int64_t end, uint32_t stream = 7, uint32_t device = 0,
                       uint32_t correlation = 0) {
    trace::KernelRecord k;
    k.correlation = correlation;
    k.start = start;
    k.end = end;
    k.stream = stream;
    k.device = device;
    k.name = t.strings.intern(name);
    t.kernels.push(k);
    return *this;
  }
  TraceBuilder& copy(trace::MemcpyKind kind, trace::MemoryKind src, trace::MemoryKind dst, int64_t start, int64_t end,
                     uint64_t bytes, bool async = true, uint32_t stream = 9, uint32_t correlation = 0) {
    trace::MemcpyRecord m;
    m.correlation = correlation;
    m.start = start;
    m.end = end;
    m.kind = kind;
    m.src_kind = src;
    m.dst_kind = dst;
    m.bytes = bytes;
    m.is_async = async;
    m.stream = stream;
    t.memcpys.push(m);
    return *this;
  }
  TraceBuilder& memset(int64_t start, int64_t end, uint32_t stream = 9, uint32_t correlation = 0) {
    trace::MemsetRecord m;
    m.correlation = correlation;
    m.start = start;
    m.end = end;
    m.stream = stream;
    m.bytes = 64;
    t.memsets.push(m);
    return *this;
  }
  TraceBuilder& api(const std::string& name, int64_t start, int64_t end, uint32_t correlation = 0,
                    uint32_t thread = 0) {
    trace::ApiRecord a;
    a.thread = thread;
    a.correlation = correlation;
    a.start = start;
    a.end = end;
    a.name = t.strings.intern(name);
    t.api.push(a);
    return *this;
  }
  TraceBuilder& range(const std::string& text, int64_t start, int64_t end, int32_t device = -1,
                      const std::string& domain = "user_annotation", uint32_t thread = 0, uint32_t link = 0) {
    trace::NvtxRecord r;
    r.thread = thread;
    r.link = link;
    r.start = start;
    r.end = end;
    r.text = t.strings.intern(text);
    r.domain = t.strings.intern(domain);
    r.device = device;
    t.nvtx.push(r);
    return *this;
  }
  TraceBuilder& nccl(trace::NcclOp op, int64_t start, int64_t end, int64_t sequence = -1,
                     const std::string& comm = "pg0", uint32_t stream = 20) {
    trace::NcclRecord n;
    n.start = start;
    n.end = end;
    n.op = op;
    n.sequence = sequence;
    n.communicator = t.strings.intern(comm);
    n.stream = stream;
    n.bytes = 1 << 20;
    t.nccl.push(n);
    return *this;
  }
  TraceBuilder& sync(trace::SyncKind kind, int64_t start, int64_t end) {
    trace::SyncRecord s;
    s.start = start;
    s.end = end;
    s.kind = kind;
    t.syncs.push(s);
    return *this;
  }
  // The collector's host sampler tables (format 1.2).
  TraceBuilder& host_thread(uint32_t pid, uint32_t tid, const std::string& name,
                            trace::ProcessRole role = trace::ProcessRole::kTraced, uint32_t parent_pid = 1) {
    trace::HostThreadRecord r;
    r.pid = pid;
    r.tid = tid;
    r.parent_pid = parent_pid;
    r.name = t.strings.intern(name);
    r.is_main = pid == tid;
    r.role = role;
    t.host_threads.push(r);
    return *this;
  }
  TraceBuilder& host_sample(int64_t time, uint32_t pid, uint32_t tid, trace::ThreadState state, int32_t cpu,
                            uint64_t cpu_ns, uint64_t run_wait_ns = 0, uint32_t voluntary = 0,
                            uint32_t involuntary = 0) {
    t.host_samples.push({time, pid, tid, state, cpu, cpu_ns, run_wait_ns, voluntary, involuntary});
    return *this;
  }
};

// A rank traced with the host sampler (analyze and advise tests of the host
// analyses): 10 iterations of 100 ms (ProfilerStep#N), a `gpu_ms` kernel at
// the start of each (the GPU idles the rest), main thread pid 100; samples
// every 10 ms through each_sample.
namespace host_case {
inline constexpr int64_t kMs = 1000000;

inline TraceBuilder steps(int64_t gpu_ms = 40) {
  TraceBuilder b;
  b.t.meta.source = "collector";
  b.t.meta.pid = 100;
  b.t.meta.extra["host_sampling_method"] = "procfs+schedstat";
  b.t.meta.extra["host_hz"] = "100";
  for (int i = 0; i < 10; ++i) {
    b.range("ProfilerStep#" + std::to_string(i), i * 100 * kMs, (i + 1) * 100 * kMs);
    b.kernel("conv_kernel", i * 100 * kMs, i * 100 * kMs + gpu_ms * kMs);
  }
  b.kernel("tail_kernel", 1000 * kMs - 1000, 1000 * kMs);
  b.host_thread(100, 100, "python");
  return b;
}

template <typename F>
void each_sample(F&& f) {
  for (int64_t t = 10 * kMs; t <= 1000 * kMs; t += 10 * kMs) f(t);
}
}  // namespace host_case

}  // namespace scalescope::analyze::testing
