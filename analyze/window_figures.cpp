#include "analyze/window_figures.hpp"

#include <algorithm>

namespace scalescope::analyze::detail {

void WindowFigures::sum_gpu(const Chunk& batch, Names& names) {
  const auto& k = batch->kernels;
  for (size_t i : batch.of(k)) {
    if (!in(k.start[i], k.end[i])) continue;
    const int64_t d = clipped(k.start[i], k.end[i]);
    const trace::StringId name = k.name[i];
    const KernelInfo& ki = names.kernel(name);
    name_ns_[name] += d;
    name_count_[name] += 1;
    auto& ct = classes_[static_cast<int>(ki.cls)];
    ct.count += 1;
    ct.total_ns += d;
    kernel_count_ += 1;
    small_kernels_ += d < kSmallKernelNs ? 1 : 0;
    kernel_median_.count(d);
    prec_.kernel_ns += d;
    prec_.ns[static_cast<int>(ki.precision)] += d;
    if (ki.layout_conversion) {
      layout_.conversion_count += 1;
      layout_.conversion_ns += d;
      if (ki.layout_to_nchw) layout_.to_nchw_ns += d;
    }
    if (ki.nchw_half) {
      layout_.nchw_half_count += 1;
      layout_.nchw_half_ns += d;
    }
  }
  const auto& m = batch->memcpys;
  for (size_t i : batch.of(m)) {
    if (!in(m.start[i], m.end[i])) continue;
    account_copy(m, i, clipped(m.start[i], m.end[i]), copy_groups_, cp_, host_bytes_,
                         pageable_correlations_);
  }
  const auto& ms = batch->memsets;
  for (size_t i : batch.of(ms)) {
    if (!in(ms.start[i], ms.end[i])) continue;
    cp_.memset_count += 1;
    cp_.memset_ns += clipped(ms.start[i], ms.end[i]);
  }
}

void WindowFigures::sum_syncs(const Chunk& batch) {
  const auto& s = batch->syncs;
  for (size_t i : batch.of(s))
    if (in(s.start[i], s.end[i])) add_sync(s.kind[i], clipped(s.start[i], s.end[i]));
}

void WindowFigures::sum_api(const Chunk& batch, Names& names) {
  const auto& a = batch->api;
  for (size_t i : batch.of(a)) {
    if (!launch_domain(a.domain[i]) || !names.launch(a.name[i]) || !in(a.start[i], a.end[i])) continue;
    const int64_t d = clipped(a.start[i], a.end[i]);
    launch_api_count_ += 1;
    launch_api_ns_ += d;
    launch_median_.count(d);
  }
}

void WindowFigures::inputs(const Chunk& batch, StreamSweep& sweep, bool collect) {
  const auto& m = batch->memcpys;
  for (size_t i : batch.of(m))
    if (m.kind[i] == trace::MemcpyKind::kHtoD && in(m.start[i], m.end[i])) {
      any_input_ = true;
      sweep.input_end(target_, std::min(m.end[i], we_));
    }
  if (collect) collect_kernels(batch);
}

void WindowFigures::late_api(const Chunk& batch, Names& names, bool sync_from_api, bool collect) {
  const auto& a = batch->api;
  for (size_t i : batch.of(a)) {
    if (!in(a.start[i], a.end[i])) continue;
    const int64_t d = clipped(a.start[i], a.end[i]);
    if (!pageable_correlations_.empty() && pageable_correlations_.count(a.correlation[i])) cp_.pageable_host_ns += d;
    if (collect && launch_domain(a.domain[i]) && names.launch(a.name[i])) launch_median_.collect(d);
    if (sync_from_api) {
      const int8_t kind = names.sync_kind(a.name[i]);
      if (kind > 0) add_sync(static_cast<trace::SyncKind>(kind), d);
    }
  }
}

void WindowFigures::collect_kernels(const Chunk& batch) {
  const auto& k = batch->kernels;
  for (size_t i : batch.of(k))
    if (in(k.start[i], k.end[i])) kernel_median_.collect(clipped(k.start[i], k.end[i]));
}

void WindowFigures::collect_launches(const Chunk& batch, Names& names) {
  const auto& a = batch->api;
  for (size_t i : batch.of(a))
    if (launch_domain(a.domain[i]) && names.launch(a.name[i]) && in(a.start[i], a.end[i]))
      launch_median_.collect(clipped(a.start[i], a.end[i]));
}

void WindowFigures::finish(const TableRows& rows, Names& names, const StreamSweep& sweep, const Options& o, RankAnalysis& r) {
  const StreamSweep::Sums& swept = sweep.sums(target_);
  const int64_t wall = this->wall();
  r.classes = classes_;
  for (int c = 0; c < kKernelClassCount; ++c) r.classes[c].cls = static_cast<KernelClass>(c);
  r.precision = prec_;
  r.layout = layout_;

  r.copies = cp_;
  finish_copies(r.copies, copy_groups_, host_bytes_, rows.memcpys + rows.memsets > 0);

  RankBreakdown& b = r.breakdown;
  b.window_start = ws_;
  b.window_end = we_;
  b.wall_ns = wall;
  b.streams = sweep.streams(target_, wall);
  b.compute_ns = swept.compute_ns;
  b.communication_ns = swept.communication_ns;
  b.overlap_ns = swept.overlap_ns;
  b.copy_ns = swept.copy_ns;
  finish_breakdown(b, rows.gpu());

  LaunchStats& ls = r.launch;
  ls.gap_count = swept.gap_count;
  ls.gpu_gap_ns = swept.gap_ns;
  ls.kernel_count = kernel_count_;
  ls.kernel_ns = prec_.kernel_ns;
  ls.median_kernel_ns = kernel_median_.median();
  ls.launch_api_count = launch_api_count_;
  ls.launch_api_ns = launch_api_ns_;
  ls.median_launch_ns = launch_median_.median();
  finish_launch(ls, small_kernels_, wall, rows.kernels > 0);

  r.sync = sync_;
  finish_sync(r.sync, sync_groups_, wall, rows.syncs + rows.api > 0);

  finish_kernel_tables(rows.kernels == 0, names.strings(), o, names.info, name_ns_, name_count_, r);

  r.input.starvation_ns = swept.starvation_ns;
  r.input.starved_iterations = swept.starved_gaps;
  finish_input(r.input, r.iterations, ws_, we_, any_input_, b.compute_ns);
}

void WindowFigures::add_sync(trace::SyncKind kind, int64_t d) {
  SyncGroup& g = sync_groups_[kind];
  g.kind = kind;
  g.count += 1;
  g.total_ns += d;
  if (kind != trace::SyncKind::kStreamWaitEvent) sync_.host_sync_ns += d;
}

}  // namespace scalescope::analyze::detail
