#pragma once
// The chunked engine's sums per row over one window (stream_analyzer.cpp):
// kernel classes, precision, layout, top kernels, the launch figures, copies
// and synchronization, with the rank's names classified once.

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <unordered_set>
#include <vector>

#include "analyze/analyze.hpp"
#include "analyze/chunk_source.hpp"
#include "analyze/detail.hpp"
#include "analyze/stream_sweep.hpp"
#include "analyze/two_pass_median.hpp"

namespace scalescope::analyze::detail {

// The rows of each table over the whole file (the analyses' availability).
struct TableRows {
  uint64_t kernels = 0, memcpys = 0, memsets = 0, nccl = 0, syncs = 0, api = 0;
  bool gpu() const { return kernels + memcpys + memsets + nccl > 0; }
};

// The rank's names, each classified once for every window.
class Names {
 public:
  Names(const trace::StringTable& strings, const KernelClassifier& classifier)
      : strings_(strings),
        classifier_(classifier),
        info(strings.size()),
        classified_(strings.size(), 0),
        launch_(strings.size(), -1),
        sync_(strings.size(), -1) {}
  const KernelInfo& kernel(trace::StringId id) {
    if (!classified_[id]) {
      classified_[id] = 1;
      info[id] = classifier_.classify(strings_.view(id));
    }
    return info[id];
  }
  bool launch(trace::StringId id) {
    int8_t& l = launch_[id];
    if (l < 0) l = contains_ci(strings_.view(id), "launch") ? 1 : 0;
    return l > 0;
  }
  // The synchronization an API call is (by name), 0 for none.
  int8_t sync_kind(trace::StringId id) {
    int8_t& k = sync_[id];
    if (k < 0) {
      const auto sk = sync_kind_of_api(strings_.view(id));
      k = sk ? static_cast<int8_t>(*sk) : 0;
    }
    return k;
  }
  const trace::StringTable& strings() const { return strings_; }

 private:
  const trace::StringTable& strings_;
  const KernelClassifier& classifier_;

 public:
  std::vector<KernelInfo> info;  // of the names kernel() was asked about

 private:
  std::vector<uint8_t> classified_;
  std::vector<int8_t> launch_, sync_;
};

// A synchronization the host waits in (StreamWaitEvent does not block it).
inline bool host_wait(trace::SyncKind k) { return k != trace::SyncKind::kStreamWaitEvent; }

inline bool launch_domain(trace::ApiDomain d) { return d == trace::ApiDomain::kRuntime || d == trace::ApiDomain::kDriver; }

// One window's figures (all but iterations, host, collectives and
// attribution), made in steps that each take chunks:
//   sum_gpu, sum_syncs, sum_api  per-row sums and median counts, chunks in any order;
//   sweep, cut        the interval unions, GPU chunks in order of first start;
//   late_api          after every GPU chunk's sum_gpu: pageable calls, and
//                     syncs from API calls;
//   choose, then collect_kernels / collect_launches: the medians' values;
//   finish            the results.
// A row counts if it lies in [ws, we] (in()), clipped to it. The whole
// trace's sums are made in pass 1, before the window
// is known, with an unbounded window; summed_outside() then says whether a
// row lay outside the real one (only possible with events at time 0).
class WindowFigures {
 public:
  WindowFigures(size_t names, Timestamp ws, Timestamp we) : ws_(ws), we_(we), name_ns_(names, 0), name_count_(names, 0) {}
  void set_window(Timestamp ws, Timestamp we) {
    ws_ = ws;
    we_ = we;
  }
  Timestamp ws() const { return ws_; }
  Timestamp we() const { return we_; }
  int64_t wall() const { return std::max<int64_t>(0, we_ - ws_); }
  bool summed_outside(Timestamp ws, Timestamp we) const { return lo_ <= hi_ && (lo_ < ws || hi_ > we); }

  void sum_gpu(const Chunk& batch, Names& names);
  void sum_syncs(const Chunk& batch);

  void sum_api(const Chunk& batch, Names& names);

  // The shared sweep's window for this one (StreamSweep::add_window).
  void sweep_as(size_t target) { target_ = target; }

  // What the sweep needs of this window besides the rows (sweep_rows): when
  // input copies ended. With collect (the kernel median's counts complete),
  // also the kernel durations' values.
  void inputs(const Chunk& batch, StreamSweep& sweep, bool collect);

  // With collect (the launch median's counts complete), also its values.
  void late_api(const Chunk& batch, Names& names, bool sync_from_api, bool collect);

  void choose() {
    kernel_median_.choose();
    launch_median_.choose();
  }
  void collect_kernels(const Chunk& batch);
  void collect_launches(const Chunk& batch, Names& names);

  // The window's results; r.iterations is set.
  void finish(const TableRows& rows, Names& names, const StreamSweep& sweep, const Options& o, RankAnalysis& r);

 private:
  bool in(Timestamp s, Timestamp e) {
    if (e < ws_ || s > we_ || e < s) return false;
    lo_ = std::min(lo_, s);
    hi_ = std::max(hi_, e);
    return true;
  }
  int64_t clipped(Timestamp s, Timestamp e) const { return std::min(e, we_) - std::max(s, ws_); }
  void add_sync(trace::SyncKind kind, int64_t d);

  Timestamp ws_, we_;
  Timestamp lo_ = std::numeric_limits<Timestamp>::max(), hi_ = std::numeric_limits<Timestamp>::min();
  std::vector<int64_t> name_ns_, name_count_;
  std::array<ClassTotal, kKernelClassCount> classes_{};
  int64_t kernel_count_ = 0, small_kernels_ = 0, launch_api_count_ = 0, launch_api_ns_ = 0;
  TwoPassMedian kernel_median_, launch_median_;
  PrecisionStats prec_;
  LayoutStats layout_;
  CopyStats cp_;
  CopyGroups copy_groups_;
  std::unordered_set<uint32_t> pageable_correlations_;
  uint64_t host_bytes_ = 0;
  std::map<trace::SyncKind, SyncGroup> sync_groups_;
  SyncStats sync_;
  bool any_input_ = false;
  size_t target_ = 0;
};

}  // namespace scalescope::analyze::detail
