// What the host's threads did in a window: the collector's host sampler
// tables (trace.host_threads, trace.host_samples) summarised per thread, per
// iteration and over the window. A sample's deltas cover the time since the
// thread's previous sample, so a sample counts for the iteration its time
// falls in (at 100 Hz, +-10 ms at each iteration edge).
#include "analyze/host_threads.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "analyze/detail.hpp"
#include "trace/model/frame_namer.hpp"

namespace scalescope::analyze::detail {
namespace {

using trace::ThreadState;
using trace::Timestamp;

double extra_double(const trace::Metadata& meta, const char* key) {
  auto it = meta.extra.find(key);
  if (it == meta.extra.end()) return 0;
  double v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return ec == std::errc() ? v : 0;
}

// Accumulates one span of time (an iteration or the window).
struct Acc {
  Timestamp start = 0, end = 0;
  int64_t main_cpu = 0, main_wait = 0, main_samples = 0, main_sleep_samples = 0, main_io_samples = 0,
          main_run_samples = 0;
  int64_t other_cpu = 0, worker_cpu = 0;
  int64_t runnable_sum = 0, instants = 0;
  int32_t max_runnable = 0;

  HostShares shares(bool has_run_wait) const {
    HostShares s;
    s.wall_ns = std::max<int64_t>(0, end - start);
    if (s.wall_ns == 0) return s;
    const double wall = static_cast<double>(s.wall_ns);
    s.main_busy = std::min(1.0, static_cast<double>(main_cpu) / wall);
    s.main_run_wait = std::min(1.0 - s.main_busy, static_cast<double>(main_wait) / wall);
    // The rest of the main thread's time was spent off the run queue: split
    // by the states its samples saw (S or D) when not running.
    const double off = std::max(0.0, 1.0 - s.main_busy - (has_run_wait ? s.main_run_wait : 0.0));
    const int64_t blocked = main_sleep_samples + main_io_samples;
    if (blocked > 0) {
      s.main_sleep = off * static_cast<double>(main_sleep_samples) / static_cast<double>(blocked);
      s.main_io = off * static_cast<double>(main_io_samples) / static_cast<double>(blocked);
    } else if (main_samples > 0 && main_run_samples == main_samples) {
      s.main_sleep = 0;  // never seen asleep
    } else {
      s.main_sleep = off;
    }
    s.main_other_threads_cores = static_cast<double>(other_cpu) / wall;
    s.worker_cores = static_cast<double>(worker_cpu) / wall;
    s.mean_runnable = instants > 0 ? static_cast<double>(runnable_sum) / static_cast<double>(instants) : 0;
    s.max_runnable = max_runnable;
    s.main_samples = main_samples;
    return s;
  }
};

uint64_t thread_key(uint32_t pid, uint32_t tid) { return (uint64_t{pid} << 32) | tid; }

// Native call stacks (format 1.3) of the threads kept in h.threads: the
// functions their samples ended in (self time) and their most frequent whole
// stacks ("outer;...;leaf", at most the 12 innermost frames).
void add_stacks(const trace::Trace& t, Timestamp ws, Timestamp we, HostStats& h) {
  if (auto it = t.meta.extra.find("host_stack_sampling"); it != t.meta.extra.end()) h.stack_method = it->second;
  if (auto it = t.meta.extra.find("host_stack_naming"); it != t.meta.extra.end()) h.stack_naming = it->second;
  const auto& ss = t.host_stack_samples;
  if (ss.size() == 0) return;
  std::unordered_map<uint32_t, size_t> row_of;
  // The last row of an id wins: the collector writes a callsite unnamed first, named at the end.
  for (size_t i = 0; i < t.host_callsites.size(); ++i) row_of[t.host_callsites.id[i]] = i;
  std::unordered_map<uint64_t, std::unordered_map<uint32_t, int64_t>> per_thread;
  for (size_t i = 0; i < ss.size(); ++i) {
    if (ss.time[i] <= ws || ss.time[i] > we) continue;
    ++per_thread[thread_key(ss.pid[i], ss.tid[i])][ss.callsite[i]];
    ++h.stack_samples;
  }
  auto leaf_name = [&](uint32_t id) {
    auto it = row_of.find(id);
    return it == row_of.end() ? std::string(id == 0 ? "[no user frame]" : "[lost frame]")
                              : trace::frame_label(t, it->second);
  };
  auto stack_text = [&](uint32_t id) {
    std::vector<std::string> frames;
    for (size_t guard = 0; id != 0 && guard < 4096; ++guard) {  // a corrupt file may hold a cycle
      auto it = row_of.find(id);
      if (it == row_of.end()) {
        frames.push_back("[lost frame]");
        break;
      }
      frames.push_back(trace::frame_label(t, it->second));
      id = t.host_callsites.parent[it->second];
    }
    if (frames.empty()) return std::string("[no user frame]");
    constexpr size_t kShown = 12;
    std::string out = frames.size() > kShown ? "...;" : "";
    for (size_t i = std::min(frames.size(), kShown); i-- > 0;) out += frames[i] + (i ? ";" : "");
    return out;
  };
  auto top = [](std::vector<HostThreadSummary::Share> v, size_t n, int64_t total) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.samples != b.samples ? a.samples > b.samples : a.what < b.what;
    });
    if (v.size() > n) v.resize(n);
    for (auto& s : v) s.share = static_cast<double>(s.samples) / static_cast<double>(total);
    return v;
  };
  for (HostThreadSummary& s : h.threads) {
    auto it = per_thread.find(thread_key(s.pid, s.tid));
    if (it == per_thread.end()) continue;
    std::map<std::string, int64_t> functions;
    std::vector<HostThreadSummary::Share> stacks;
    for (const auto& [id, n] : it->second) {
      s.stack_samples += n;
      functions[leaf_name(id)] += n;
      stacks.push_back({std::to_string(id), n, 0});
    }
    std::vector<HostThreadSummary::Share> fv;
    for (auto& [name, n] : functions) fv.push_back({name, n, 0});
    s.top_functions = top(std::move(fv), 5, s.stack_samples);
    // Rank stacks by id first (cheap), then render only the kept ones.
    std::sort(stacks.begin(), stacks.end(), [](const auto& a, const auto& b) { return a.samples > b.samples; });
    if (stacks.size() > 3) stacks.resize(3);
    for (auto& st : stacks) st.what = stack_text(static_cast<uint32_t>(std::stoul(st.what)));
    s.top_stacks = top(std::move(stacks), 3, s.stack_samples);
  }
}

void read_sampler_settings(const trace::Trace& t, HostStats& h) {
  if (auto it = t.meta.extra.find("host_sampling_method"); it != t.meta.extra.end()) h.method = it->second;
  h.hz = extra_double(t.meta, "host_hz");
  h.has_run_wait = h.method.find("schedstat") != std::string::npos;
  h.main_tid = t.meta.pid;
  h.cores = static_cast<int32_t>(t.meta.cpu_affinity.size());
}

// Thread facts: the last row of each (pid, tid) wins (rows repeat as the
// writer learns a later name or last sighting).
struct Facts {
  std::string name;
  bool is_main = false;
  trace::ProcessRole role = trace::ProcessRole::kTraced;
};

struct ThreadFacts {
  std::unordered_map<uint64_t, Facts> by_thread;
  uint32_t main_pid = 0;

  trace::ProcessRole role_of(uint32_t pid, uint32_t tid) const {
    auto it = by_thread.find(thread_key(pid, tid));
    if (it != by_thread.end()) return it->second.role;
    return pid == main_pid ? trace::ProcessRole::kTraced : trace::ProcessRole::kDescendant;
  }
};

ThreadFacts read_thread_facts(const trace::Trace& t, HostStats& h) {
  ThreadFacts facts;
  for (size_t i = 0; i < t.host_threads.size(); ++i) {
    Facts& f = facts.by_thread[thread_key(t.host_threads.pid[i], t.host_threads.tid[i])];
    f.name = std::string(t.strings.view(t.host_threads.name[i]));
    f.is_main = t.host_threads.is_main[i] != 0;
    f.role = t.host_threads.role[i];
  }
  // The main thread of the traced process; from the samples when the
  // metadata has no pid (a hand-made trace).
  if (h.main_tid == 0)
    for (size_t i = 0; i < t.host_threads.size(); ++i)
      if (t.host_threads.is_main[i] && t.host_threads.role[i] == trace::ProcessRole::kTraced)
        h.main_tid = t.host_threads.tid[i];
  facts.main_pid = h.main_tid;
  return facts;
}

// What the samples of the window add up to: per span, per thread, and where
// the threads ran.
struct SampleTally {
  Acc window;
  std::vector<Acc> its;
  std::map<uint64_t, HostThreadSummary> threads;
  std::set<int32_t> main_cpus, cpus;
  std::set<uint32_t> workers;
  int64_t cpu_known_node = 0, cpu_on_node = 0, main_known_node = 0, main_on_node = 0, all_wait = 0;
  int32_t gpu_node = -1;
  // Samples come in instants (one time for all threads of one sample); the
  // rows of an instant are adjacent in the collector's output, but a merged
  // or hand-made trace may interleave them, so instants are keyed by time.
  std::map<Timestamp, int32_t> runnable_at;
  size_t it_pos = 0;

  // Iterations are in time order; samples mostly are too. Find by binary search.
  Acc* iteration_of(Timestamp time) {
    if (its.empty()) return nullptr;
    if (it_pos < its.size() && time > its[it_pos].start && time <= its[it_pos].end) return &its[it_pos];
    auto at = std::lower_bound(its.begin(), its.end(), time, [](const Acc& a, Timestamp v) { return a.end < v; });
    if (at == its.end() || time <= at->start) return nullptr;
    it_pos = static_cast<size_t>(at - its.begin());
    return &*at;
  }
};

int32_t numa_node_of(const trace::Trace& t, int32_t cpu) {
  return cpu >= 0 && static_cast<size_t>(cpu) < t.meta.cpu_numa_node.size() ? t.meta.cpu_numa_node[size_t(cpu)] : -1;
}

SampleTally empty_tally(const trace::Trace& t, Timestamp ws, Timestamp we, const std::vector<Iteration>& iterations) {
  SampleTally tally;
  tally.window.start = ws;
  tally.window.end = we;
  tally.its.resize(iterations.size());
  for (size_t i = 0; i < iterations.size(); ++i) {
    tally.its[i].start = iterations[i].start;
    tally.its[i].end = iterations[i].end;
  }
  for (const auto& d : t.meta.devices)
    if (d.numa_node >= 0) {
      tally.gpu_node = d.numa_node;
      break;
    }
  return tally;
}

void tally_samples(const trace::Trace& t, Timestamp ws, Timestamp we, const ThreadFacts& facts, SampleTally& tally,
                   HostStats& h) {
  const auto& hs = t.host_samples;
  const uint32_t main_pid = facts.main_pid;
  const int32_t gpu_node = tally.gpu_node;
  for (size_t i = 0; i < hs.size(); ++i) {
    const Timestamp time = hs.time[i];
    if (time <= ws || time > we) continue;
    const uint32_t pid = hs.pid[i], tid = hs.tid[i];
    const auto role = facts.role_of(pid, tid);
    const bool is_main = tid == main_pid && pid == main_pid;
    const auto state = hs.state[i];
    const int64_t cpu_ns = static_cast<int64_t>(hs.cpu_ns[i]);
    const int64_t wait_ns = static_cast<int64_t>(hs.run_wait_ns[i]);
    ++h.samples;
    if (state == ThreadState::kRunning) ++tally.runnable_at[time];
    else tally.runnable_at.try_emplace(time, 0);
    tally.all_wait += wait_ns;
    if (role == trace::ProcessRole::kDescendant) tally.workers.insert(pid);

    HostThreadSummary& s = tally.threads[thread_key(pid, tid)];
    if (s.samples == 0) {
      s.pid = pid;
      s.tid = tid;
      s.is_main = is_main;
      s.role = role;
      if (auto f = facts.by_thread.find(thread_key(pid, tid)); f != facts.by_thread.end()) s.name = f->second.name;
    }
    ++s.samples;
    ++s.state_samples[static_cast<size_t>(state) < s.state_samples.size() ? static_cast<size_t>(state) : 0];
    s.cpu_ns += cpu_ns;
    s.run_wait_ns += wait_ns;
    s.voluntary_switches += hs.voluntary_switches[i];
    s.involuntary_switches += hs.involuntary_switches[i];
    const int32_t cpu = hs.cpu[i];
    if (cpu >= 0) {
      if (std::find(s.cpus.begin(), s.cpus.end(), cpu) == s.cpus.end()) s.cpus.push_back(cpu);
      tally.cpus.insert(cpu);
      if (is_main) tally.main_cpus.insert(cpu);
      const int32_t node = numa_node_of(t, cpu);
      if (gpu_node >= 0 && node >= 0) {
        tally.cpu_known_node += cpu_ns;
        if (node == gpu_node) tally.cpu_on_node += cpu_ns;
        if (is_main) {
          ++tally.main_known_node;
          tally.main_on_node += node == gpu_node;
        }
      }
    }
    for (Acc* a : {&tally.window, tally.iteration_of(time)}) {
      if (!a) continue;
      if (is_main) {
        a->main_cpu += cpu_ns;
        a->main_wait += wait_ns;
        ++a->main_samples;
        a->main_sleep_samples += state == ThreadState::kSleeping;
        a->main_io_samples += state == ThreadState::kDiskWait;
        a->main_run_samples += state == ThreadState::kRunning;
      } else if (role == trace::ProcessRole::kDescendant) {
        a->worker_cpu += cpu_ns;
      } else {
        a->other_cpu += cpu_ns;
      }
    }
  }
}

// Runnable threads per instant, per span.
void tally_runnable_instants(SampleTally& tally, HostStats& h) {
  int64_t contended = 0;
  for (const auto& [time, n] : tally.runnable_at) {
    if (h.cores > 0 && n > h.cores) ++contended;
    for (Acc* a : {&tally.window, tally.iteration_of(time)}) {
      if (!a) continue;
      a->runnable_sum += n;
      ++a->instants;
      a->max_runnable = std::max(a->max_runnable, n);
    }
  }
  h.sample_instants = static_cast<int64_t>(tally.runnable_at.size());
  h.contended_instants = static_cast<double>(contended) / static_cast<double>(tally.runnable_at.size());
}

void summarize_spans_and_threads(SampleTally& tally, Timestamp ws, Timestamp we, HostStats& h) {
  const int64_t wall = std::max<int64_t>(1, we - ws);
  h.run_wait_cores = static_cast<double>(tally.all_wait) / static_cast<double>(wall);
  h.window = tally.window.shares(h.has_run_wait);
  const std::vector<Acc>& its = tally.its;
  for (size_t i = 0; i < its.size(); ++i)
    if (its[i].main_samples > 0 || its[i].instants > 0)
      h.iterations.push_back({static_cast<int64_t>(i), its[i].start, its[i].end, its[i].shares(h.has_run_wait)});
  h.threads.reserve(tally.threads.size());
  for (auto& [k, s] : tally.threads) {
    s.busy_share = static_cast<double>(s.cpu_ns) / static_cast<double>(wall);
    std::sort(s.cpus.begin(), s.cpus.end());
    h.threads.push_back(std::move(s));
  }
  std::sort(h.threads.begin(), h.threads.end(), [](const HostThreadSummary& a, const HostThreadSummary& b) {
    if (a.is_main != b.is_main) return a.is_main;
    if (a.cpu_ns != b.cpu_ns) return a.cpu_ns > b.cpu_ns;
    return a.tid < b.tid;
  });
  h.thread_count = static_cast<int64_t>(h.threads.size());
  if (h.threads.size() > 64) h.threads.resize(64);
  h.worker_processes = static_cast<int64_t>(tally.workers.size());
}

void summarize_placement(const trace::Trace& t, const SampleTally& tally, HostStats& h) {
  h.main_cpus.assign(tally.main_cpus.begin(), tally.main_cpus.end());
  h.cpus.assign(tally.cpus.begin(), tally.cpus.end());
  std::set<int32_t> nodes;
  for (int32_t c : tally.cpus)
    if (numa_node_of(t, c) >= 0) nodes.insert(numa_node_of(t, c));
  h.nodes.assign(nodes.begin(), nodes.end());
  if (tally.main_known_node > 0)
    h.main_on_gpu_node = static_cast<double>(tally.main_on_node) / static_cast<double>(tally.main_known_node);
  if (tally.cpu_known_node > 0)
    h.cpu_on_gpu_node = static_cast<double>(tally.cpu_on_node) / static_cast<double>(tally.cpu_known_node);
}

}  // namespace

HostStats analyze_host(const trace::Trace& t, Timestamp ws, Timestamp we, const std::vector<Iteration>& iterations) {
  HostStats h;
  if (t.host_samples.size() == 0) {
    h.availability = {false, t.meta.source == "collector"
                                 ? "skipped: the trace has no host thread samples (collector before format 1.2, or "
                                   "--host-hz 0)"
                                 : "skipped: the trace has no host thread samples (only the collector records them)"};
    return h;
  }
  read_sampler_settings(t, h);
  const ThreadFacts facts = read_thread_facts(t, h);
  SampleTally tally = empty_tally(t, ws, we, iterations);
  h.gpu_node = tally.gpu_node;
  tally_samples(t, ws, we, facts, tally, h);
  if (h.samples == 0) {
    h.availability = {false, "skipped: no host thread sample in the window"};
    return h;
  }
  tally_runnable_instants(tally, h);
  summarize_spans_and_threads(tally, ws, we, h);
  summarize_placement(t, tally, h);
  add_stacks(t, ws, we, h);
  return h;
}

}  // namespace scalescope::analyze::detail
