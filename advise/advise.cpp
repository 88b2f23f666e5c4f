// The advisor's rules. Each rule reads one analysis per rank, fires only above
// its documented threshold (docs/advisor.md) and bounds the saving from the
// time the problem demonstrably costs in the trace.
#include "advise/advise.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/enum_names.hpp"
#include "base/format_units.hpp"
#include "base/json_fields.hpp"

namespace scalescope::advise {
namespace {

using analyze::HostStats;
using analyze::PythonHotFrame;
using analyze::PythonThreadFrames;
using analyze::RankAnalysis;
using analyze::RunAnalysis;
// Human figures for evidence text: the formatters of every table
// (base/format_units.hpp), so a finding and a table print a figure alike.
using trace::format_bytes;
using trace::format_duration_ns;
using trace::format_percent;

// An integer duration in ns as tables show it, and as a figure.
std::string ns_text(int64_t ns) { return format_duration_ns(static_cast<double>(ns)); }
Figure ns_figure(std::string name, int64_t ns) { return {std::move(name), static_cast<double>(ns), "ns"}; }

// "; launched by: aten::cudnn_convolution in nn.Module: Conv2d_3 (1.2 ms,
// 310 kernels), ..." from attribution, or "" where the trace has no ranges.
std::string responsible_text(const analyze::Attribution& a, const std::vector<analyze::ResponsibleOperator>& v,
                             bool by_count) {
  if (!a.available || v.empty()) return {};
  std::vector<std::string> parts;
  for (size_t i = 0; i < v.size() && i < 3; ++i) {
    const auto& x = v[i];
    std::string who = x.name.empty() ? std::string("(outside every operator)") : x.name.substr(0, 60);
    if (!x.module.empty()) who += " in " + x.module.substr(0, 60);
    parts.push_back(by_count ? fmt::format("{} ({} kernels)", who, x.count)
                             : fmt::format("{} ({}, {} kernels)", who, ns_text(x.sum_ns), x.count));
  }
  return fmt::format("; launched by: {}", fmt::join(parts, ", "));
}

// The time the window's iterations take at their steady pace: count x steady
// median. Rules divide window totals by it, so a share is "per iteration, of a
// steady iteration". The raw span would let one long warm-up iteration (seen on
// H200: cuDNN autotuning made step 0 take 21 s of a 23 s window) push every
// share under its threshold.
double step_time(const RankAnalysis& r) {
  const auto& it = r.iterations;
  if (it.availability.available && it.count > 0) {
    const double median = it.steady_median_ns > 0 ? it.steady_median_ns : it.median_ns;
    if (median > 0) return median * static_cast<double>(it.count);
    const double span = static_cast<double>(it.iterations.back().end - it.iterations.front().start);
    if (span > 0) return span;
  }
  return static_cast<double>(r.breakdown.wall_ns);
}

Severity severity_for(double saving) {
  if (saving >= 0.20) return Severity::kCritical;
  if (saving >= 0.05) return Severity::kWarning;
  return Severity::kInfo;
}

// A per-rank rule: returns (share, finding) for the rank or nothing; the
// run-level finding is the worst rank's, listing every rank above threshold.
struct RankHit {
  double saving = 0;
  Finding finding;
};

// What each rank's rules read: its steady iterations when the analysis has
// them (RankAnalysis::steady), labelled so the evidence says so, else the
// analysed window.
std::vector<RankAnalysis> judged_ranks(const RunAnalysis& run) {
  std::vector<RankAnalysis> out;
  out.reserve(run.ranks.size());
  for (const RankAnalysis& r : run.ranks) {
    if (!r.steady) {
      out.push_back(r);
      continue;
    }
    RankAnalysis s = *r.steady;
    s.python = r.python;  // sampled over the windows, not per iteration
    s.label = fmt::format("{}, steady iterations it{}:it{}", r.label, r.steady_first_iteration, r.steady_end_iteration);
    out.push_back(std::move(s));
  }
  return out;
}

// Whether the rule's own method calls its saving an upper bound.
SavingKind kind_of(const std::string& method) {
  return method.starts_with("upper bound") ? SavingKind::kUpperBound : SavingKind::kEstimate;
}

template <typename Rule>
void per_rank(const std::vector<RankAnalysis>& judged, std::vector<Finding>& out, Rule&& rule) {
  std::optional<RankHit> worst;
  std::vector<int32_t> ranks;
  std::vector<RankSaving> savings;
  for (const RankAnalysis& r : judged) {
    std::optional<RankHit> hit = rule(r);
    if (!hit) continue;
    ranks.push_back(r.rank);
    savings.push_back({r.rank, std::clamp(hit->saving, 0.0, 1.0)});
    if (!worst || hit->saving > worst->saving) worst = std::move(hit);
  }
  if (!worst) return;
  Finding f = std::move(worst->finding);
  f.rank_savings = std::move(savings);
  f.saving_kind = kind_of(f.saving_method);
  f.saving_fraction = std::clamp(worst->saving, 0.0, 1.0);
  f.severity = severity_for(f.saving_fraction);
  f.ranks = ranks.size() == judged.size() && ranks.size() > 1 ? std::vector<int32_t>{} : ranks;
  if (judged.size() > 1)
    f.evidence +=
        fmt::format(" ({} of {} ranks above the threshold; figures are from the worst).", ranks.size(), judged.size());
  out.push_back(std::move(f));
}

double ns_share(int64_t ns, double step) { return step > 0 ? static_cast<double>(ns) / step : 0; }

// The short name of the largest kernel of a list sorted by time, "-" when empty.
std::string largest(const std::vector<analyze::KernelSummary>& top) {
  return top.empty() ? "-" : top.front().short_name;
}

// The fix in the job's own terms: PyTorch's API where the trace shows
// PyTorch, the CUDA (or MPI) one otherwise; never PyTorch advice to a
// program without it.
std::string fix_for(const RankAnalysis& r, std::string_view pytorch, std::string_view cuda) {
  return std::string(r.job.framework == analyze::Framework::kPyTorch ? pytorch : cuda);
}

// pinned-memory: pageable HtoD/DtoH copies cost a share of step time: the
// GPU's copy time, or the calling thread's time blocked in those calls when
// that is longer (the copy is staged synchronously through a bounce buffer).
std::optional<RankHit> pinned_memory(const RankAnalysis& r, const Thresholds& th) {
  const auto& c = r.copies;
  if (!c.availability.available || c.pageable_ns <= 0) return std::nullopt;
  const int64_t cost_ns = std::max(c.pageable_ns, c.pageable_host_ns);
  const double share = ns_share(cost_ns, step_time(r));
  if (share < th.pageable_share_of_step) return std::nullopt;
  Finding f{.id = "pinned-memory", .title = "Input copies come from pageable host memory"};
  f.evidence = fmt::format(
      "{}: {} of host<->device copies ({}, {} of the bytes) read or write pageable memory; "
      "the calling threads wait {} in those calls; {} of step time (threshold {})",
      r.label, ns_text(c.pageable_ns), format_bytes(static_cast<double>(c.pageable_bytes)),
      format_percent(c.pageable_fraction), ns_text(c.pageable_host_ns), format_percent(share),
      format_percent(th.pageable_share_of_step));
  f.figures = {ns_figure("pageable copy time", c.pageable_ns),
               ns_figure("host time in pageable copy calls", c.pageable_host_ns),
               {"pageable bytes", static_cast<double>(c.pageable_bytes), "bytes"},
               {"pageable share of step time", share, "fraction"}};
  f.saving_method =
      "estimate: the longer of the pageable copies' GPU time and the host's time blocked in them, which pinned "
      "memory with non_blocking copies takes off the critical path";
  f.fix = fix_for(r, "DataLoader(..., pin_memory=True) and tensor.to(device, non_blocking=True)",
                  "allocate the host buffers with cudaMallocHost (or cudaHostRegister the existing ones) and copy "
                  "with cudaMemcpyAsync on a stream of its own");
  return RankHit{share, std::move(f)};
}

// channels-last / layout-fallback: NCHW<->NHWC conversion kernels, and
// half-precision kernels that exist only for NCHW data.
std::optional<RankHit> channels_last(const RankAnalysis& r, const Thresholds& th) {
  const auto& l = r.layout;
  if (!l.availability.available) return std::nullopt;
  const bool conversions = l.conversion_ns > 0 && l.fraction >= th.layout_share;
  const bool nchw_half = l.nchw_half_ns > 0 && l.nchw_half_fraction >= th.layout_share;
  if (!conversions && !nchw_half) return std::nullopt;
  // Mostly NHWC -> NCHW: the job already runs channels_last and some operators
  // have no NHWC kernel for this data type; switching to channels_last is not the fix.
  const bool already_channels_last = conversions && 2 * l.to_nchw_ns > l.conversion_ns;
  const int64_t cost_ns = (conversions ? l.conversion_ns : 0) + (nchw_half ? l.nchw_half_ns : 0);
  const double share = ns_share(cost_ns, step_time(r));
  Finding f{.id = already_channels_last ? "layout-fallback" : "channels-last",
            .title = already_channels_last ? "Channels-last job converts back to NCHW for some operators"
                     : nchw_half           ? "Half-precision kernels run on NCHW data (no NHWC tensor-core path)"
                                           : "Time spent converting tensors between NCHW and NHWC"};
  std::vector<std::string> parts;
  if (conversions)
    parts.push_back(fmt::format("{} layout conversion kernels take {} ({} of kernel time, threshold {}); largest: {}",
                                l.conversion_count, ns_text(l.conversion_ns), format_percent(l.fraction),
                                format_percent(th.layout_share), largest(l.top)));
  if (nchw_half)
    parts.push_back(
        fmt::format("{} fp16/bf16 kernels that exist only for NCHW data take {} ({} of kernel time, "
                    "threshold {}); largest: {}",
                    l.nchw_half_count, ns_text(l.nchw_half_ns), format_percent(l.nchw_half_fraction),
                    format_percent(th.layout_share), largest(l.top_nchw_half)));
  f.evidence = fmt::format("{}: {}", r.label, fmt::join(parts, "; "));
  if (conversions) f.evidence += responsible_text(r.attribution, r.attribution.layout_conversions, false);
  f.figures = {ns_figure("conversion kernel time", l.conversion_ns),
               {"share of kernel time", l.fraction, "fraction"},
               {"conversion kernels", static_cast<double>(l.conversion_count), "count"},
               ns_figure("NHWC to NCHW conversion time", l.to_nchw_ns),
               ns_figure("NCHW-only half-precision kernel time", l.nchw_half_ns),
               {"NCHW-only half-precision share of kernel time", l.nchw_half_fraction, "fraction"}};
  if (already_channels_last) {
    f.saving_method = nchw_half ? "upper bound: all conversion kernel time and all NCHW-only half-precision kernel "
                                  "time, which disappear when every operator has an NHWC kernel"
                                : "upper bound: all conversion kernel time, which disappears when every operator has "
                                  "an NHWC kernel";
    f.fix = fix_for(r,
                    "find the operators without an NHWC kernel for this dtype (often depthwise convolutions in bf16): "
                    "try torch.backends.cudnn.benchmark = True, fp16 instead of bf16 autocast, or keep those layers "
                    "in NCHW; compare with `scalescope diff`",
                    "find the operations without an NHWC kernel for this data type (the largest conversions above): "
                    "choose a cuDNN algorithm or data type that has one (fp16 rather than bf16 for depthwise "
                    "convolutions), or keep those layers in NCHW; compare with `scalescope diff`");
  } else {
    f.saving_method = nchw_half ? "upper bound: the conversion kernels' time (when over the threshold) and all time in "
                                  "NCHW-only half-precision kernels, which NHWC tensor-core kernels replace (those "
                                  "take time too)"
                                : "upper bound: all conversion kernel time, which disappears when model and input are "
                                  "channels_last";
    f.fix = fix_for(
        r, "model = model.to(memory_format=torch.channels_last); input = input.to(memory_format=torch.channels_last)",
        "keep activations and filters in NHWC (cuDNN tensor descriptors with CUDNN_TENSOR_NHWC) so that "
        "half-precision convolutions and normalizations take the tensor-core path without transposes");
  }
  return RankHit{share, std::move(f)};
}

// mixed-precision: FP32 GEMM/conv without tensor cores, or as TF32.
std::optional<RankHit> mixed_precision(const RankAnalysis& r, const Thresholds& th) {
  const auto& p = r.precision;
  const double fp32_fraction = p.fp32_no_tensor_fraction + p.tf32_fraction;
  if (!p.availability.available || fp32_fraction < th.fp32_share) return std::nullopt;
  const int64_t ns = p.ns[static_cast<int>(analyze::Precision::kFp32NoTensor)];
  const int64_t tf32_ns = p.ns[static_cast<int>(analyze::Precision::kTf32)];
  // H100/H200 dense BF16 tensor-core peak is about 15x the FP32 CUDA-core peak
  // and 2x the TF32 peak; assume at most 8x and 2x.
  const double share = ns_share(ns, step_time(r)) * (1.0 - 1.0 / 8.0) + ns_share(tf32_ns, step_time(r)) * 0.5;
  Finding f{.id = "mixed-precision",
            .title = "Matrix multiplies and convolutions run in FP32 (no tensor cores, or TF32)"};
  f.evidence = fmt::format(
      "{}: FP32 GEMM/convolution kernels take {} without tensor cores ({} of kernel time) and {} as "
      "TF32 ({}); together {} (threshold {}); FP16/BF16 tensor-core share {}; largest FP32: {}",
      r.label, ns_text(ns), format_percent(p.fp32_no_tensor_fraction), ns_text(tf32_ns),
      format_percent(p.tf32_fraction), format_percent(fp32_fraction), format_percent(th.fp32_share),
      format_percent(p.tensor_core_fraction), largest(p.top_fp32));
  if (ns > 0) f.evidence += responsible_text(r.attribution, r.attribution.fp32_no_tensor, false);
  f.figures = {ns_figure("fp32 gemm/conv time", ns),
               ns_figure("tf32 gemm/conv time", tf32_ns),
               {"fp32+tf32 share of kernel time", fp32_fraction, "fraction"},
               {"tensor-core share", p.tensor_core_fraction, "fraction"}};
  f.saving_method =
      "estimate: FP32 GEMM/conv time x (1 - 1/8) + TF32 time x (1 - 1/2): BF16 tensor cores at most 8x faster "
      "than FP32 CUDA cores and 2x faster than TF32";
  f.fix = fix_for(r,
                  "with torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16): ... (or "
                  "torch.backends.cuda.matmul.allow_tf32 = True and torch.backends.cudnn.allow_tf32 = True)",
                  "use FP16/BF16 inputs with FP32 accumulation (cublasGemmEx or cublasLt with CUBLAS_COMPUTE_32F "
                  "and CUDA_R_16BF data, cuDNN with half data types), or allow TF32 "
                  "(CUBLAS_COMPUTE_32F_FAST_TF32, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)");
  return RankHit{share, std::move(f)};
}

// fp64: double precision kernels.
std::optional<RankHit> fp64(const RankAnalysis& r, const Thresholds& th) {
  const auto& p = r.precision;
  if (!p.availability.available || p.fp64_fraction < th.fp64_share) return std::nullopt;
  const int64_t ns = p.ns[static_cast<int>(analyze::Precision::kFp64)];
  const double share = ns_share(ns, step_time(r));
  Finding f{.id = "fp64", .title = "Double-precision (FP64) kernels"};
  f.evidence =
      fmt::format("{}: FP64 kernels take {} ({} of kernel time, threshold {}); largest: {}", r.label, ns_text(ns),
                  format_percent(p.fp64_fraction), format_percent(th.fp64_share), largest(p.top_fp64));
  f.figures = {ns_figure("fp64 kernel time", ns), {"share of kernel time", p.fp64_fraction, "fraction"}};
  f.saving_method = "upper bound: all FP64 kernel time";
  f.fix = fix_for(r,
                  "find the float64 tensors (torch.from_numpy of float64 arrays, .double(), dtype=torch.float64) and "
                  "use float32 or bfloat16",
                  "use float instead of double where the algorithm allows: look for double variables, literals "
                  "without the f suffix and double math functions (sin rather than sinf) in the kernels above");
  return RankHit{share, std::move(f)};
}

std::optional<RankHit> exposed_communication(const RankAnalysis& r, const Thresholds& th) {
  const auto& b = r.breakdown;
  if (!b.availability.available || b.wall_ns <= 0) return std::nullopt;
  const double share = static_cast<double>(b.exposed_communication_ns) / static_cast<double>(b.wall_ns);
  if (share < th.exposed_comm_share) return std::nullopt;
  Finding f{.id = "exposed-communication", .title = "Communication is not hidden behind compute"};
  f.evidence = fmt::format(
      "{}: {} of communication is not overlapped with compute ({} of wall time, threshold {}); "
      "only {} of communication overlaps compute",
      r.label, ns_text(b.exposed_communication_ns), format_percent(share), format_percent(th.exposed_comm_share),
      format_percent(b.overlap_fraction));
  f.figures = {ns_figure("exposed communication", b.exposed_communication_ns),
               {"share of wall time", share, "fraction"},
               {"overlap fraction", b.overlap_fraction, "fraction"}};
  f.saving_method = "upper bound: all exposed communication time, if it were fully overlapped with backward compute";
  f.fix = fix_for(r,
                  "DDP(model, bucket_cap_mb=<tune: 10-100>, gradient_as_bucket_view=True); for large models FSDP or "
                  "gradient accumulation with no_sync() to communicate less often",
                  r.job.mpi && !r.job.nccl
                      ? "overlap communication with compute: post non-blocking MPI_Isend/MPI_Irecv/MPI_Iallreduce "
                        "as soon as each buffer is ready and wait just before its use; CUDA-aware MPI on device "
                        "buffers; fewer, larger messages"
                      : "overlap collectives with compute: launch each on a stream of its own as soon as its buffer "
                        "is ready, with events ordering the kernels that read it; fuse small buffers into fewer, "
                        "larger collectives");
  return RankHit{share, std::move(f)};
}

std::optional<RankHit> launch_bound(const RankAnalysis& r, const Thresholds& th) {
  const auto& l = r.launch;
  if (!l.availability.available || !l.launch_bound || l.gap_fraction < th.launch_gap_share) return std::nullopt;
  const double share = l.gap_fraction;
  Finding f{.id = "launch-bound", .title = "The GPU waits for kernel launches"};
  // Without launch calls in the window (--api none, or a trace whose API
  // records are missing) there is no launch time to compare: say so instead
  // of a median of nothing ("0 ns").
  const std::string launch_text = l.launch_api_count > 0
                                      ? "median launch call " + format_duration_ns(l.median_launch_ns)
                                      : std::string("no launch calls recorded in the window");
  f.evidence = fmt::format(
      "{}: {} GPU gaps under 1 ms add up to {} ({} of wall time, threshold {}); median kernel {} "
      "vs {}; {} of kernels are shorter than 10 us",
      r.label, l.gap_count, ns_text(l.gpu_gap_ns), format_percent(share), format_percent(th.launch_gap_share),
      format_duration_ns(l.median_kernel_ns), launch_text, format_percent(l.small_kernel_fraction));
  if (const std::string who = responsible_text(r.attribution, r.attribution.tiny_kernels, true); !who.empty())
    f.evidence += "; kernels under 10 us" + who.substr(1);
  f.figures = {ns_figure("gpu gaps", l.gpu_gap_ns),
               {"gap share of wall", share, "fraction"},
               {"median kernel", l.median_kernel_ns, "ns"},
               {"median launch", l.median_launch_ns, "ns"}};
  f.saving_method = "upper bound: all short GPU gaps between kernels, which CUDA graphs remove";
  f.fix = fix_for(r,
                  "capture the step in CUDA graphs (torch.compile(model, mode=\"reduce-overhead\") or "
                  "torch.cuda.CUDAGraph), or raise the batch size so kernels run longer",
                  "capture the step's kernels in CUDA graphs (cudaStreamBeginCapture, cudaGraphLaunch), fuse small "
                  "kernels, or give each kernel more work");
  return RankHit{share, std::move(f)};
}

std::optional<RankHit> host_sync(const RankAnalysis& r, const Thresholds& th) {
  const auto& s = r.sync;
  if (!s.availability.available || r.breakdown.wall_ns <= 0) return std::nullopt;
  // The host waiting costs GPU time only where the GPU idles as well.
  const double idle = static_cast<double>(r.breakdown.idle_ns) / static_cast<double>(r.breakdown.wall_ns);
  const double share = std::min(s.fraction, idle);
  if (share < th.sync_share) return std::nullopt;
  Finding f{.id = "host-sync", .title = "The host blocks in synchronize calls"};
  f.evidence = fmt::format(
      "{}: the host spends {} in stream/device/event synchronize ({} of wall time) while the GPU "
      "idles {} of wall time (threshold {} for the smaller of the two)",
      r.label, ns_text(s.host_sync_ns), format_percent(s.fraction), format_percent(idle),
      format_percent(th.sync_share));
  f.figures = {ns_figure("host synchronize time", s.host_sync_ns), {"share of wall", s.fraction, "fraction"}};
  f.saving_method = "upper bound: synchronize time, but no more than the GPU's idle time";
  f.fix = fix_for(r,
                  "remove per-step .item(), .cpu(), print(loss) and torch.cuda.synchronize() from the training loop; "
                  "log every N steps",
                  "remove cudaDeviceSynchronize/cudaStreamSynchronize from the loop where the host does not need "
                  "the result yet; order work with events (cudaStreamWaitEvent) and read results back every N steps");
  return RankHit{share, std::move(f)};
}

// sync-copies (not pageable ones: pinned-memory covers those).
std::optional<RankHit> sync_copies(const RankAnalysis& r, const Thresholds& th) {
  const auto& c = r.copies;
  if (!c.availability.available) return std::nullopt;
  int64_t ns = 0, n = 0;
  for (const auto& g : c.groups) {
    const bool pageable = g.src_kind == trace::MemoryKind::kPageable || g.dst_kind == trace::MemoryKind::kPageable;
    if (!pageable) {
      ns += g.sync_ns;
      n += g.sync_count;
    }
  }
  const double share = ns_share(ns, step_time(r));
  if (n == 0 || share < th.sync_copy_share) return std::nullopt;
  Finding f{.id = "sync-copies", .title = "Synchronous memory copies in the step"};
  f.evidence = fmt::format("{}: {} synchronous copies take {} ({} of step time, threshold {})", r.label, n, ns_text(ns),
                           format_percent(share), format_percent(th.sync_copy_share));
  f.figures = {{"synchronous copies", static_cast<double>(n), "count"}, ns_figure("synchronous copy time", ns)};
  f.saving_method = "upper bound: all synchronous copy time";
  f.fix = fix_for(r, "tensor.to(device, non_blocking=True) from pinned memory; avoid .item()/.cpu() inside the step",
                  "cudaMemcpyAsync from pinned host memory (cudaMallocHost) on a stream, instead of cudaMemcpy");
  return RankHit{share, std::move(f)};
}

// Idle time covered by `with` and by none of `without` (IdleCover's sets).
int64_t idle_only(const analyze::IdleCover& c, unsigned with, unsigned without) {
  int64_t ns = 0;
  for (unsigned set = 1; set < analyze::kIdleCauseSets; ++set)
    if ((set & with) && !(set & without)) ns += c.by_causes[set];
  return ns;
}

std::optional<RankHit> input_starvation(const RankAnalysis& r, const Thresholds& th) {
  const auto& in = r.input;
  if (!in.availability.available) return std::nullopt;
  // An MPI program's gaps that the host spends inside MPI calls are host
  // communication (host-communication), not a wait for input data.
  const auto& c = r.idle_cover;
  const bool mpi = r.job.mpi && c.availability.available && c.span_ns > 0;
  const int64_t in_mpi = mpi ? c.covered_ns(analyze::kIdleInput) - idle_only(c, analyze::kIdleInput, analyze::kIdleMpi) : 0;
  const double share = mpi ? ns_share(idle_only(c, analyze::kIdleInput, analyze::kIdleMpi), static_cast<double>(c.span_ns))
                           : in.fraction;
  if (share < th.starvation_share) return std::nullopt;
  Finding f{.id = "input-starvation", .title = "The GPU waits for input data"};
  f.evidence =
      fmt::format("{}: {} idle gaps ending with an input copy add up to {} ({} of iteration time, threshold {})",
                  r.label, in.starved_iterations, ns_text(in.starvation_ns), format_percent(in.fraction),
                  format_percent(th.starvation_share));
  if (mpi)
    f.evidence += fmt::format(
        "; {} of that idle time the host spent inside MPI calls (host communication), which "
        "leaves {} waiting for input",
        ns_text(in_mpi), format_percent(share));
  f.figures = {ns_figure("starvation", in.starvation_ns), {"share of iteration time", in.fraction, "fraction"}};
  if (mpi) f.figures.push_back(ns_figure("of it inside MPI calls", in_mpi));
  f.saving_method = "upper bound: every idle gap that ends with a host-to-device copy";
  f.fix = fix_for(r,
                  "DataLoader(..., num_workers=<cores per GPU>, pin_memory=True, persistent_workers=True, "
                  "prefetch_factor=4); decode on the GPU (DALI) when the CPU cannot keep up",
                  "prepare the next input while the GPU computes: double-buffered pinned host buffers copied with "
                  "cudaMemcpyAsync on a second stream, an event before the kernels that read them");
  return RankHit{share, std::move(f)};
}

// host-communication: the host inside MPI calls while the GPU idles (an MPI
// program that exchanges data between steps instead of overlapping it).
std::optional<RankHit> host_communication(const RankAnalysis& r, const Thresholds& th) {
  const auto& c = r.idle_cover;
  if (!r.job.mpi || r.job.mpi_ns <= 0) return std::nullopt;
  const bool covered = c.availability.available && c.span_ns > 0;
  // Without a split of idle time (a window without time or GPU activity),
  // the MPI time capped at the GPU's idle time bounds it.
  const double share = covered ? ns_share(c.covered_ns(analyze::kIdleMpi), static_cast<double>(c.span_ns))
                               : std::min(ns_share(r.job.mpi_ns, step_time(r)),
                                          ns_share(r.breakdown.idle_ns, static_cast<double>(r.breakdown.wall_ns)));
  if (share < th.host_communication_share) return std::nullopt;
  Finding f{.id = "host-communication", .title = "The GPU idles while the host is inside MPI calls"};
  f.evidence = fmt::format(
      "{}: {} MPI calls take {} in the window; the GPU idles during {} of them ({} of step time, threshold {}); {}",
      r.label, r.job.mpi_calls, ns_text(r.job.mpi_ns),
      covered ? ns_text(c.covered_ns(analyze::kIdleMpi)) : std::string("(not split)"), format_percent(share),
      format_percent(th.host_communication_share), r.job.evidence);
  f.figures = {{"MPI calls", static_cast<double>(r.job.mpi_calls), "count"},
               ns_figure("MPI call time", r.job.mpi_ns),
               {"GPU idle inside MPI calls, share of step", share, "fraction"}};
  f.saving_method = covered ? "upper bound: the GPU's idle time inside MPI calls, which overlapping them with GPU work "
                              "hides (start-up calls such as MPI_Init included when inside the window)"
                            : "upper bound: MPI call time, at most the GPU's idle time";
  f.fix =
      "overlap communication with GPU work: post MPI_Isend/MPI_Irecv before launching the kernels that do not need "
      "the data and wait just before those that do; pass device buffers to a CUDA-aware MPI (no staging copies); "
      "send fewer, larger messages; for collectives between GPUs, NCCL";
  return RankHit{share, std::move(f)};
}

std::optional<RankHit> numa_placement(const RankAnalysis& r, const Thresholds& th) {
  const auto& n = r.numa;
  if (!n.availability.available) return std::nullopt;
  const bool memory = n.remote_memory_fraction >= th.remote_memory_fraction;
  if (!n.cpus_cross_node && !memory) return std::nullopt;
  int64_t host_copy_ns = 0;
  for (const auto& g : r.copies.groups)
    if (g.kind == trace::MemcpyKind::kHtoD || g.kind == trace::MemcpyKind::kDtoH) host_copy_ns += g.time_ns;
  const double share = ns_share(host_copy_ns, step_time(r));
  std::string cpu_nodes;
  for (int32_t c : n.cpu_nodes) cpu_nodes += (cpu_nodes.empty() ? "" : ",") + std::to_string(c);
  Finding f{.id = "numa-placement", .title = "Process placed off its GPU's NUMA node"};
  f.evidence = fmt::format(
      "{}: GPU on NUMA node {}; the process may run on CPUs of nodes {}; {} of its memory is on other "
      "nodes (threshold {}); policy '{}'",
      r.label, n.gpu_node, cpu_nodes, format_percent(n.remote_memory_fraction),
      format_percent(th.remote_memory_fraction), n.memory_policy);
  f.figures = {{"gpu node", static_cast<double>(n.gpu_node), "node"},
               {"remote memory fraction", n.remote_memory_fraction, "fraction"}};
  if (r.host.availability.available && r.host.main_on_gpu_node >= 0) {
    // Measured, not only allowed: where the threads actually ran.
    f.evidence += fmt::format(
        "; measured: the main thread ran on the GPU's node in {} of its samples, and {} of the "
        "sampled CPU time was on it",
        format_percent(r.host.main_on_gpu_node), format_percent(r.host.cpu_on_gpu_node));
    f.figures.push_back({"main thread samples on the GPU's node", r.host.main_on_gpu_node, "fraction"});
    f.figures.push_back({"CPU time on the GPU's node", r.host.cpu_on_gpu_node, "fraction"});
  }
  f.saving_method = "upper bound: all host<->device copy time (the traffic that crosses the socket link)";
  f.fix = r.job.framework == analyze::Framework::kPyTorch
              ? fmt::format(
                    "numactl --cpunodebind={0} --membind={0} python train.py (per rank; torchrun --numa-binding / "
                    "srun --cpu-bind=ldoms)",
                    n.gpu_node)
              : fmt::format(
                    "numactl --cpunodebind={0} --membind={0} <program> (per rank; mpirun --bind-to numa / "
                    "srun --cpu-bind=ldoms)",
                    n.gpu_node);
  return RankHit{share, std::move(f)};
}

// gpu-throttling: the GPU's SM clock held below its maximum over the steady
// iterations (NVML samples, analyze::GpuClockStats). Compute kernels take
// about 1/clock longer; the fix depends on why NVML says it held the clock.
std::string throttle_cause(const analyze::GpuClockStats& g) {
  if (g.reason_samples == 0) return {};
  const std::pair<double, const char*> shares[] = {{g.thermal_share, "thermal"},
                                                   {g.power_cap_share, "power cap"},
                                                   {g.hw_slowdown_share, "hardware slowdown"},
                                                   {g.sync_boost_share, "sync boost"},
                                                   {g.app_clocks_share, "application clocks"}};
  const auto* top = std::max_element(std::begin(shares), std::end(shares),
                                     [](const auto& a, const auto& b) { return a.first < b.first; });
  return top->first > 0 ? std::string(top->second) : std::string();
}

std::string throttle_fix(const analyze::GpuClockStats& g) {
  const std::string cause = throttle_cause(g);
  if (cause == "thermal")
    return fmt::format(
        "cooling: the GPU reached {:.0f} C{} and slowed its clock: check its airflow, fans and inlet temperature "
        "(nvidia-smi -q -d TEMPERATURE,PERFORMANCE); a GPU hotter than its neighbours often has a blocked intake",
        g.temperature_max_c, g.temperature_slowdown_c > 0 ? fmt::format(" (slowdown at {:.0f} C)", g.temperature_slowdown_c) : "");
  if (cause == "power cap")
    return fmt::format(
        "power limit: the GPU drew up to {:.0f} W{} and was held at its power cap: restore the default limit "
        "(nvidia-smi -q -d POWER shows it; nvidia-smi -pl <W>), or accept the cap",
        g.power_max_w, g.power_limit_w > 0 ? fmt::format(" against a {:.0f} W limit", g.power_limit_w) : "");
  if (cause == "hardware slowdown")
    return "hardware slowdown or power brake (the node's power supply or an external brake signal): report the node "
           "to its administrators (nvidia-smi -q -d PERFORMANCE)";
  if (cause == "sync boost")
    return "sync boost holds this GPU to the slowest GPU of its group: find and fix the throttled one";
  if (cause == "application clocks")
    return fmt::format("clocks: application clocks are set below the maximum: reset them (nvidia-smi -rac) or lock "
                       "the SM clock at {:.0f} MHz (nvidia-smi -lgc {:.0f})",
                       g.sm_clock_max_mhz, g.sm_clock_max_mhz);
  return "check the GPU's clocks, temperature and power limit: nvidia-smi -q -d CLOCK,PERFORMANCE,TEMPERATURE,POWER";
}

// "1,410 MHz median (min 1,200) of 1,980 MHz max, throttled in 80 % of samples (power cap 80 %), 84 C (slowdown
// 87 C), 698 W of a 700 W limit"
std::string clock_text(const analyze::GpuClockStats& g) {
  std::string s = fmt::format("SM clock {:.0f} MHz median (min {:.0f})", g.sm_clock_median_mhz, g.sm_clock_min_mhz);
  if (g.sm_clock_max_mhz > 0) s += fmt::format(" of {:.0f} MHz max ({})", g.sm_clock_max_mhz, format_percent(g.clock_ratio));
  if (g.reason_samples > 0) {
    s += fmt::format(", held down in {} of samples", format_percent(g.throttled_share));
    const std::string cause = throttle_cause(g);
    if (!cause.empty()) s += fmt::format(" (mostly {})", cause);
  } else {
    s += ", throttle reasons not recorded";
  }
  if (g.temperature_max_c > 0)
    s += fmt::format(", {:.0f} C median, {:.0f} C max{}", g.temperature_median_c, g.temperature_max_c,
                     g.temperature_slowdown_c > 0 ? fmt::format(" (slowdown at {:.0f} C)", g.temperature_slowdown_c) : "");
  if (g.power_max_w > 0)
    s += fmt::format(", {:.0f} W median, {:.0f} W max{}", g.power_median_w, g.power_max_w,
                     g.power_limit_w > 0 ? fmt::format(" of a {:.0f} W limit", g.power_limit_w) : "");
  if (!g.sampled_by.empty()) s += fmt::format(" (sampled in {}'s trace)", g.sampled_by);
  return s;
}

std::optional<RankHit> gpu_throttling(const RankAnalysis& r, const Thresholds& th) {
  const auto& g = r.gpu_clocks;
  if (!g.availability.available || g.clock_ratio <= 0) return std::nullopt;
  const double deficit = 1 - g.clock_ratio;
  // Where reasons are recorded, a low clock without one is not throttling.
  if (deficit < th.clock_deficit || (g.reason_samples > 0 && g.throttled_share < th.throttled_samples))
    return std::nullopt;
  // At the maximum clock, the compute time would shrink by the clock ratio.
  const double compute = ns_share(r.breakdown.compute_ns, step_time(r));
  const double share = compute * deficit;
  Finding f{.id = "gpu-throttling", .title = "The GPU runs below its maximum clock"};
  f.evidence = fmt::format("{}: {}; compute is {} of step time (threshold: median clock {} below the maximum{})",
                           r.label, clock_text(g), format_percent(compute), format_percent(th.clock_deficit),
                           g.reason_samples > 0
                               ? fmt::format(", held down in {} of samples", format_percent(th.throttled_samples))
                               : std::string());
  f.figures = {{"SM clock median", g.sm_clock_median_mhz, "MHz"},
               {"SM clock min", g.sm_clock_min_mhz, "MHz"},
               {"SM clock max", g.sm_clock_max_mhz, "MHz"},
               {"clock ratio", g.clock_ratio, "ratio"},
               {"throttled samples", g.throttled_share, "fraction"},
               {"power cap samples", g.power_cap_share, "fraction"},
               {"thermal samples", g.thermal_share, "fraction"},
               {"temperature max", g.temperature_max_c, "C"},
               {"power max", g.power_max_w, "W"}};
  f.saving_method =
      "estimate: compute time x (1 - median clock / max clock), as if every kernel ran in proportion to the SM clock "
      "(memory-bound kernels gain less)";
  f.fix = throttle_fix(g);
  return RankHit{share, std::move(f)};
}

// Host threads (the collector's host sampler, format 1.2). Three
// explanations of a GPU that idles because of the host, told apart by what
// the main (launching) thread did: ran the whole time (host-bound), slept
// while the DataLoader's workers worked (loader-bound), or waited on a run
// queue for a CPU (contention).
double host_idle(const RankAnalysis& r, const Thresholds& th) {
  const auto& h = r.host;
  if (!h.availability.available || h.window.main_samples < 10 || r.breakdown.wall_ns <= 0) return -1;
  const double idle = static_cast<double>(r.breakdown.idle_ns) / static_cast<double>(r.breakdown.wall_ns);
  return idle >= th.host_gpu_idle_share ? idle : -1;
}

std::vector<Figure> host_figures(const HostStats& h, double idle) {
  const auto& w = h.window;
  return std::vector<Figure>{{"main thread busy", w.main_busy, "fraction"},
                             {"main thread runnable, waiting for a CPU", w.main_run_wait, "fraction"},
                             {"main thread sleeping", w.main_sleep, "fraction"},
                             {"main thread in I/O wait", w.main_io, "fraction"},
                             {"worker processes' CPU", w.worker_cores, "cores"},
                             {"mean runnable threads", w.mean_runnable, "count"},
                             {"GPU idle share of wall", idle, "fraction"}};
}

std::string host_text(const RankAnalysis& r, double idle) {
  const auto& w = r.host.window;
  return fmt::format(
      "{}: the main thread ran {} of the wall time, waited for a CPU {}, slept {} and waited on I/O "
      "{}; its other threads used {:.2f} cores and {} worker processes {:.2f} cores; the GPU idled {}",
      r.label, format_percent(w.main_busy),
      r.host.has_run_wait ? format_percent(w.main_run_wait) : std::string("(not measured)"),
      format_percent(w.main_sleep), format_percent(w.main_io), w.main_other_threads_cores, r.host.worker_processes,
      w.worker_cores, format_percent(idle));
}

// Where Python samples ended most often (the bootstrap's stacks), at most
// three: "dataset.py:41 __getitem__, 63.0 % of worker samples; ...".
std::string python_frames_text(const std::vector<PythonHotFrame>& top, std::string_view whose) {
  std::string s;
  for (size_t i = 0; i < top.size() && i < 3; ++i)
    s += fmt::format("{}{}, {} of {} samples", i ? "; " : "", top[i].where, format_percent(top[i].share), whose);
  return s;
}

std::optional<RankHit> host_bound(const RankAnalysis& r, const Thresholds& th) {
  const double idle = host_idle(r, th);
  if (idle < 0 || r.host.window.main_busy < th.host_busy_share) return std::nullopt;
  Finding f{.id = "host-bound", .title = "The launching thread is busy the whole step"};
  f.evidence =
      host_text(r, idle) + fmt::format(" (threshold: main thread busy {} with the GPU idle {})",
                                       format_percent(th.host_busy_share), format_percent(th.host_gpu_idle_share));
  if (const PythonThreadFrames* main = r.python.main_thread(); main && main->samples > 0)
    f.evidence += fmt::format(". Hottest Python frames of the main thread ({} samples in windows): {}",
                              main->samples, python_frames_text(main->top, "main-thread"));
  f.figures = host_figures(r.host, idle);
  f.saving_method = "upper bound: the GPU's idle time, which a faster host loop would fill";
  f.fix = fix_for(r,
                  "issue fewer, larger GPU operations from Python: capture the step in CUDA graphs "
                  "(torch.compile(model, mode=\"reduce-overhead\") or torch.cuda.CUDAGraph), torch.compile to fuse "
                  "small ops, fused optimizers (foreach/fused=True); move per-step Python work (logging, metrics) out "
                  "of the loop",
                  "issue fewer, larger GPU operations: CUDA graphs (cudaStreamBeginCapture, cudaGraphLaunch), fused "
                  "kernels, and less host work between launches");
  return RankHit{idle, std::move(f)};
}

std::optional<RankHit> loader_bound(const RankAnalysis& r, const Thresholds& th) {
  const double idle = host_idle(r, th);
  if (idle < 0) return std::nullopt;
  const auto& h = r.host;
  const double waiting = h.window.main_sleep + h.window.main_io;
  const bool workers_busy = h.worker_processes > 0 && h.window.worker_cores >= th.host_worker_cores;
  const bool input_late = r.input.availability.available && r.input.fraction >= th.starvation_share;
  if (waiting < th.host_main_wait_share || (!workers_busy && !input_late)) return std::nullopt;
  const double share = std::min(idle, waiting);
  Finding f{.id = "loader-bound", .title = "The main thread waits for input"};
  f.evidence =
      host_text(r, idle) +
      fmt::format(
          "; the main thread was off the CPU {} of the wall time while {} (threshold: off the CPU {} "
          "with workers using {:.2f} cores or input late)",
          format_percent(waiting),
          workers_busy
              ? fmt::format("its {} worker processes used {:.2f} cores", h.worker_processes, h.window.worker_cores)
              : fmt::format("input copies arrived late ({} of iteration time)", format_percent(r.input.fraction)),
          format_percent(th.host_main_wait_share), th.host_worker_cores);
  if (r.python.worker_samples > 0)
    f.evidence += fmt::format(
        ". Hottest Python frames of its DataLoader workers ({} samples of their main threads in windows, {} worker process{}): {}",
        r.python.worker_samples, r.python.worker_processes, r.python.worker_processes == 1 ? "" : "es",
        python_frames_text(r.python.workers_top, "worker"));
  f.figures = host_figures(h, idle);
  f.saving_method = "upper bound: the smaller of the GPU's idle time and the main thread's time off the CPU";
  f.fix = fix_for(r,
                  "feed the step faster: DataLoader(num_workers=<more, up to the cores per GPU>, pin_memory=True, "
                  "persistent_workers=True, prefetch_factor=4), smaller batches to transfer (uint8 instead of float, "
                  "decode/augment on the GPU: DALI or torchvision.transforms.v2 on CUDA tensors)",
                  "produce input ahead of the GPU: more producer threads, the next batch prefetched into pinned "
                  "double buffers, less data to move (decode on the GPU)");
  return RankHit{share, std::move(f)};
}

std::optional<RankHit> host_contention(const RankAnalysis& r, const Thresholds& th) {
  const double idle = host_idle(r, th);
  if (idle < 0) return std::nullopt;
  const auto& h = r.host;
  const bool waits = h.has_run_wait && h.window.main_run_wait >= th.host_run_wait_share;
  const bool crowded = h.cores > 0 && h.contended_instants >= th.host_contended_instants;
  if (!waits && !crowded) return std::nullopt;
  const double share = std::min(idle, waits ? h.window.main_run_wait : h.contended_instants * h.window.main_busy);
  Finding f{.id = "host-contention", .title = "Host threads compete for CPUs"};
  f.evidence =
      host_text(r, idle) +
      fmt::format(
          "; {:.1f} threads were runnable on average (at most {}) for {} CPUs, more than the CPUs in "
          "{} of the samples; all sampled threads waited {:.2f} cores' worth on run queues "
          "(thresholds: main thread waiting {} or {} of samples over the CPUs)",
          h.window.mean_runnable, h.window.max_runnable, h.cores > 0 ? std::to_string(h.cores) : std::string("?"),
          h.cores > 0 ? format_percent(h.contended_instants) : std::string("n/a"), h.run_wait_cores,
          format_percent(th.host_run_wait_share), format_percent(th.host_contended_instants));
  f.figures = host_figures(h, idle);
  f.figures.push_back({"samples with more runnable threads than CPUs", h.contended_instants, "fraction"});
  f.figures.push_back({"run-queue wait, all threads", h.run_wait_cores, "cores"});
  f.saving_method =
      waits ? "upper bound: the smaller of the GPU's idle time and the main thread's run-queue wait"
            : "estimate: GPU idle time, at most the share of busy main-thread samples with CPUs oversubscribed";
  f.fix = fix_for(r,
                  "give the training thread a CPU of its own: fewer DataLoader workers or intra-op threads "
                  "(num_workers, OMP_NUM_THREADS, torch.set_num_threads), more CPUs per rank, or pin workers away "
                  "from the main thread (worker_init_fn with os.sched_setaffinity)",
                  "give the launching thread a CPU of its own: fewer threads (OMP_NUM_THREADS), more CPUs per rank, "
                  "ranks bound to their cores (mpirun --bind-to core, numactl --physcpubind)");
  return RankHit{share, std::move(f)};
}

std::optional<RankHit> iteration_variance(const RankAnalysis& r, const Thresholds& th) {
  const auto& it = r.iterations;
  if (!it.availability.available || it.count - it.warmup_count < 3 || it.steady_cv < th.iteration_cv)
    return std::nullopt;
  double excess = 0, sum = 0;
  for (const auto& i : it.iterations) {
    if (i.warmup) continue;
    const double d = static_cast<double>(i.end - i.start);
    sum += d;
    excess += std::max(0.0, d - it.steady_median_ns);
  }
  const double share = sum > 0 ? excess / sum : 0;
  Finding f{.id = "iteration-variance", .title = "Iteration times vary"};
  f.evidence = fmt::format("{}: steady-state iterations have CV {:.2f} (threshold {:.2f}); median {}, p95 {}", r.label,
                           it.steady_cv, th.iteration_cv, format_duration_ns(it.steady_median_ns),
                           format_duration_ns(it.steady_p95_ns));
  f.figures = {{"steady cv", it.steady_cv, "ratio"},
               {"steady median", it.steady_median_ns, "ns"},
               {"steady p95", it.steady_p95_ns, "ns"}};
  f.saving_method = "upper bound: time of the steady iterations above the median";
  f.fix = fix_for(r,
                  "look for periodic host work in the slow iterations: garbage collection (gc.freeze()), logging, "
                  "checkpointing, DataLoader workers falling behind",
                  "look for periodic host work in the slow iterations: I/O, logging, checkpoints, other processes "
                  "on the node");
  return RankHit{share, std::move(f)};
}

// straggler: run-level, judged on the steady iterations' collectives.
void straggler(const RunAnalysis& run, const std::vector<RankAnalysis>& judged, const Thresholds& th,
               std::vector<Finding>& out) {
  const auto& st = run.stragglers;
  if (!st.availability.available || st.ranks.empty()) return;
  const auto& worst = st.ranks.front();
  const RankAnalysis* rank = nullptr;
  for (const auto& r : judged)
    if (r.rank == worst.rank) rank = &r;
  const double step = rank && rank->iterations.count > 0 ? rank->iterations.steady_median_ns : 0;
  // Only lateness beyond the next-latest rank's is the straggler's: ranks
  // that take turns being last (a launch-bound DPO job on 2×H200: 1.37 s and
  // 1.23 s) would keep waiting for each other if this one were fixed.
  // Steady iterations only where there are any (stragglers.cpp ranks by them):
  // a wait at start-up is not a cost of every step.
  const bool steady = st.steady_matched_collectives > 0;
  auto per_iteration = [steady](const analyze::RankLateness& l) {
    return steady ? l.steady_late_per_iteration_ns : l.late_per_iteration_ns;
  };
  const double worst_per_iteration = per_iteration(worst);
  const double next = st.ranks.size() > 1 ? per_iteration(st.ranks[1]) : 0;
  const double excess = std::max(0.0, worst_per_iteration - next);
  const double share = step > 0 ? excess / step : 0;
  if (share < th.straggler_share) return;
  Finding f{.id = "straggler", .title = fmt::format("Rank {} makes the others wait", worst.rank)};
  f.evidence = fmt::format(
      "rank {} arrives last at {} of {} matched collectives{}, {} late per {}iteration, {} more than "
      "the next-latest rank ({} of a {} step, threshold {}); {} late in total, at most {}",
      worst.rank, steady ? worst.steady_times_last : worst.times_last,
      steady ? st.steady_matched_collectives : st.matched_collectives, steady ? " of the steady iterations" : "",
      format_duration_ns(worst_per_iteration), steady ? "steady " : "", format_duration_ns(excess),
      format_percent(share), format_duration_ns(step), format_percent(th.straggler_share), ns_text(worst.total_late_ns),
      ns_text(worst.max_late_ns));
  f.ranks = {worst.rank};
  f.figures = {{"late per iteration", worst_per_iteration, "ns"},
               {"beyond the next-latest rank", excess, "ns"},
               {"share of step", share, "fraction"},
               {"times last", static_cast<double>(steady ? worst.steady_times_last : worst.times_last), "count"}};
  f.saving_method =
      "upper bound: the straggler's lateness per iteration beyond the next-latest rank's, which every other rank waits "
      "out";
  f.fix =
      "check that rank's host: CPU binding (numactl --cpunodebind), data loading on that node, GPU clocks and "
      "temperature (nvidia-smi -q -d CLOCK,TEMPERATURE), and uneven work per rank";
  f.saving_fraction = std::clamp(share, 0.0, 1.0);
  f.saving_kind = kind_of(f.saving_method);
  f.rank_savings = {{worst.rank, f.saving_fraction}};
  f.severity = severity_for(f.saving_fraction);
  out.push_back(std::move(f));
}

// The collector measured how much slower traced iterations ran: findings
// read from CPU-side timing (launch gaps, idle gaps, host waits) are
// inflated by it, so they say so where the interval is above the threshold.
void add_perturbation_cautions(const std::vector<RankAnalysis>& judged, std::vector<Finding>& out) {
  for (auto& f : out) {
    if (f.id != "launch-bound" && f.id != "host-sync" && f.id != "input-starvation" && f.id != "sync-copies") continue;
    const RankAnalysis* worst = nullptr;
    for (const auto& r : judged) {
      if (!r.perturbation.matters) continue;
      if (!f.ranks.empty() && std::find(f.ranks.begin(), f.ranks.end(), r.rank) == f.ranks.end()) continue;
      if (!worst || r.perturbation.ci_low > worst->perturbation.ci_low) worst = &r;
    }
    if (!worst) continue;
    const auto& p = worst->perturbation;
    f.evidence += fmt::format(
        "; caution: the profiler made traced iterations {:.1f} % (95 % CI {:.1f} to {:.1f} %) "
        "slower on {}, which inflates CPU-side gaps and waits (docs/collector.md)",
        p.percent, p.ci_low, p.ci_high, worst->label);
    f.figures.push_back({"profiler perturbation", p.percent / 100, "fraction"});
  }
}

// ---- windows that cannot support a finding --------------------------------

// Why a rank's judged window cannot support a per-step finding: it holds
// fewer than two complete iterations of a trace that has iterations ("" when
// it holds enough). A trace without iterations is judged over its window as
// it is, with shares of the wall time.
std::string window_caveat(const RankAnalysis& r) {
  const auto& it = r.iterations;
  if (it.source.empty() || it.count >= 2) return {};
  return fmt::format(
      "{}'s window ({}) holds {} complete iteration{} ({}), fewer than two: its shares are of that window, not of "
      "a step, and a one-off cost cannot be told from a per-step one (widen --window to several iterations)",
      r.label, ns_text(r.breakdown.wall_ns), it.count, it.count == 1 ? "" : "s", it.source);
}

void add_window_cautions(const std::vector<RankAnalysis>& judged, std::vector<Finding>& out) {
  for (auto& f : out) {
    for (const auto& r : judged) {
      if (!f.ranks.empty() && std::find(f.ranks.begin(), f.ranks.end(), r.rank) == f.ranks.end()) continue;
      std::string why = window_caveat(r);
      if (why.empty()) continue;
      f.evidence += "; caution: " + why;
      f.caveat = std::move(why);
      f.severity = Severity::kInfo;
      break;
    }
  }
}

// ---- causes, not symptoms: the cause graph (docs/advisor.md) ----------------

Finding* find_id(std::vector<Finding>& out, std::string_view id) {
  auto it = std::find_if(out.begin(), out.end(), [&](const Finding& f) { return f.id == id; });
  return it == out.end() ? nullptr : &*it;
}

double saving_on(const Finding& f, int32_t rank) {
  for (const RankSaving& s : f.rank_savings)
    if (s.rank == rank) return s.fraction;
  return 0;
}

bool on_rank(const Finding& f, int32_t rank) {
  return std::any_of(f.rank_savings.begin(), f.rank_savings.end(), [&](const RankSaving& s) { return s.rank == rank; });
}

// `symptom` is one more sign of `cause` (a finding has at most one cause).
void link(Finding& cause, Finding& symptom) {
  if (!symptom.explained_by.empty() || &cause == &symptom) return;
  symptom.explained_by = cause.id;
  cause.explains.push_back(symptom.id);
}

// The host sampler's diagnosis explains the GPU-side symptom on the same
// ranks: a busy launching thread is why kernels are launched late, a main
// thread waiting for its loader is why the input arrives late.
void link_host_diagnoses(std::vector<Finding>& out) {
  static constexpr std::pair<std::string_view, std::string_view> kPairs[] = {{"host-bound", "launch-bound"},
                                                                              {"loader-bound", "input-starvation"}};
  for (const auto& [cause_id, symptom_id] : kPairs) {
    Finding* cause = find_id(out, cause_id);
    Finding* symptom = find_id(out, symptom_id);
    if (!cause || !symptom) continue;
    const bool shared = std::any_of(symptom->rank_savings.begin(), symptom->rank_savings.end(),
                                    [&](const RankSaving& s) { return on_rank(*cause, s.rank); });
    if (shared) link(*cause, *symptom);
  }
}

// Waiting inside a collective for a late rank shows as exposed communication
// on the ranks that wait: it is the straggler's cost, and tuning the overlap
// of communication would not remove it. Explained when what is left of every
// waiting rank's exposed communication, less the lateness, is under the
// rule's threshold; the late rank's own exposed communication is its own.
void link_straggler_wait(const Thresholds& th, std::vector<Finding>& out) {
  Finding* st = find_id(out, "straggler");
  Finding* ex = find_id(out, "exposed-communication");
  if (!st || !ex || st->ranks.empty()) return;
  const int32_t late = st->ranks.front();
  if (on_rank(*ex, late)) return;
  double rest = 0;
  for (const RankSaving& s : ex->rank_savings) rest = std::max(rest, s.fraction - st->saving_fraction);
  ex->evidence += fmt::format(
      "; up to {} of step time of it is waiting inside the collectives for rank {}, which arrives late (the "
      "straggler's cost); {} is left beyond that wait",
      format_percent(std::min(ex->saving_fraction, st->saving_fraction)), late, format_percent(rest));
  if (rest < th.exposed_comm_share) link(*st, *ex);
}

struct StepFigures {
  double idle_share = 0;          // GPU idle / wall
  double compute_per_step_ns = 0;
};

StepFigures step_figures(const RankAnalysis& r) {
  StepFigures s;
  const auto& b = r.breakdown;
  s.idle_share = b.wall_ns > 0 ? static_cast<double>(b.idle_ns) / static_cast<double>(b.wall_ns) : 0;
  const double steps = r.iterations.count > 0 ? static_cast<double>(r.iterations.count) : 1.0;
  s.compute_per_step_ns = static_cast<double>(b.compute_ns) / steps;
  return s;
}

double figure(const Finding& f, std::string_view name) {
  for (const Figure& g : f.figures)
    if (g.name == name) return g.value;
  return 0;
}

// A late rank's GPU clock this much below the others' mean is a cause of its
// lateness (when the compute time it adds is at least half the lateness).
constexpr double kSlowerClock = 0.05;

// What makes the late rank late, from its own evidence against the others':
// one of its own findings that the other ranks do not share (host-bound, its
// loader, its copies, ...), else its GPU's idle time or its compute per step.
void explain_straggler(const std::vector<RankAnalysis>& judged, std::vector<Finding>& out) {
  Finding* st = find_id(out, "straggler");
  if (!st || st->ranks.empty()) return;
  const int32_t late = st->ranks.front();
  const RankAnalysis* lr = nullptr;
  StepFigures others;
  double others_clock = 0, slower_clock = 0, clock_lost_ns = 0;
  int n = 0, clocked = 0;
  for (const RankAnalysis& r : judged) {
    if (r.rank == late) {
      lr = &r;
      continue;
    }
    const StepFigures f = step_figures(r);
    others.idle_share += f.idle_share;
    others.compute_per_step_ns += f.compute_per_step_ns;
    ++n;
    if (r.gpu_clocks.availability.available) {
      others_clock += r.gpu_clocks.sm_clock_median_mhz;
      ++clocked;
    }
  }
  if (!lr || n == 0) return;
  others.idle_share /= n;
  others.compute_per_step_ns /= n;
  const StepFigures mine = step_figures(*lr);
  const double lateness_ns = figure(*st, "beyond the next-latest rank");
  st->evidence += fmt::format("; rank {}'s GPU idles {} of its time against {} on the other ranks, with {} of compute "
                              "per step against {}",
                              late, format_percent(mine.idle_share), format_percent(others.idle_share),
                              format_duration_ns(mine.compute_per_step_ns),
                              format_duration_ns(others.compute_per_step_ns));
  st->figures.push_back({"late rank's GPU idle share", mine.idle_share, "fraction"});
  st->figures.push_back({"other ranks' GPU idle share", others.idle_share, "fraction"});
  st->figures.push_back({"late rank's compute per step", mine.compute_per_step_ns, "ns"});
  st->figures.push_back({"other ranks' compute per step", others.compute_per_step_ns, "ns"});
  // Its GPU's clock against the others': a lower clock makes the same kernels
  // take longer (more compute per step, but not more work).
  if (const auto& lg = lr->gpu_clocks; lg.availability.available && clocked > 0 && others_clock > 0) {
    others_clock /= clocked;
    slower_clock = 1 - lg.sm_clock_median_mhz / others_clock;
    clock_lost_ns = mine.compute_per_step_ns * std::max(0.0, slower_clock);  // compute the lower clock added per step
    st->evidence += fmt::format("; rank {}'s GPU: {}, against {:.0f} MHz on the other ranks (the mean of their medians)",
                                late, clock_text(lg), others_clock);
    st->figures.push_back({"late rank's SM clock median", lg.sm_clock_median_mhz, "MHz"});
    st->figures.push_back({"other ranks' SM clock median, mean over ranks", others_clock, "MHz"});
  }
  // The late rank's own findings, by how much more they cost it than any other rank.
  static constexpr std::string_view kCauses[] = {"host-bound",       "loader-bound", "host-contention",
                                                 "host-communication", "input-starvation", "host-sync",
                                                 "launch-bound",     "sync-copies",  "pinned-memory",
                                                 "numa-placement",   "gpu-throttling"};
  Finding* best = nullptr;
  double best_excess = 0;
  for (std::string_view id : kCauses) {
    Finding* c = find_id(out, id);
    if (!c || !on_rank(*c, late)) continue;
    double other = 0;
    for (const RankSaving& s : c->rank_savings)
      if (s.rank != late) other = std::max(other, s.fraction);
    const double excess = saving_on(*c, late) - other;
    if (excess > best_excess) {
      best = c;
      best_excess = excess;
    }
  }
  if (best && best_excess >= 0.5 * st->saving_fraction) {
    st->evidence += fmt::format("; rank {}'s own finding \"{}\" costs it {} of its step more than any other rank: that "
                                "is why it is late",
                                late, best->title, format_percent(best_excess));
    st->fix = fmt::format("fix rank {}'s {} (the cause): {}", late, best->id, best->fix);
    link(*best, *st);
    return;
  }
  if (slower_clock >= kSlowerClock && clock_lost_ns >= 0.5 * lateness_ns) {
    st->title = fmt::format("Rank {} makes the others wait: its GPU runs at lower clocks", late);
    st->fix = fmt::format("rank {}'s GPU runs {} slower than the others' ({} of compute per step): {}", late,
                          format_percent(slower_clock), format_duration_ns(clock_lost_ns), throttle_fix(lr->gpu_clocks));
    return;
  }
  const double extra_compute = mine.compute_per_step_ns - others.compute_per_step_ns;
  if (others.compute_per_step_ns > 0 && extra_compute >= 0.05 * others.compute_per_step_ns &&
      extra_compute >= 0.5 * lateness_ns) {
    st->title = fmt::format("Rank {} makes the others wait: it computes more per step", late);
    st->fix = fmt::format(
        "rank {} runs {} more GPU compute per step than the others: balance the work per rank (data shards, "
        "sequence lengths or pipeline stages of unequal size, work only that rank does such as evaluation or "
        "logging)",
        late, format_duration_ns(extra_compute));
  } else if (mine.idle_share - others.idle_share >= 0.05) {
    st->title = fmt::format("Rank {} makes the others wait: its GPU waits for its host", late);
    st->fix = fmt::format(
        "rank {}'s GPU idles {} against {} on the others with similar compute: its host falls behind. Trace it "
        "with the host sampler (scalescope profile, on by default) to see its main thread; check its data "
        "loading, its CPU binding (numactl --cpunodebind) and other processes on its node",
        late, format_percent(mine.idle_share), format_percent(others.idle_share));
  }
}

// Roots first, by the largest saving in their chain (fixing the root gains
// it), each followed by what it explains, depth first.
void rank_by_root(std::vector<Finding>& out) {
  const size_t n = out.size();
  auto index_of = [&](const std::string& id) -> size_t {
    for (size_t i = 0; i < n; ++i)
      if (out[i].id == id) return i;
    return n;
  };
  std::vector<size_t> root(n);
  for (size_t i = 0; i < n; ++i) {
    size_t at = i;
    for (size_t step = 0; step < n; ++step) {  // a chain is at most n long
      const size_t up = index_of(out[at].explained_by);
      if (up == n) break;
      at = up;
    }
    root[i] = at;
  }
  std::vector<double> chain(n, 0);
  for (size_t i = 0; i < n; ++i) chain[root[i]] = std::max(chain[root[i]], out[i].saving_fraction);
  for (size_t i = 0; i < n; ++i) out[i].chain_saving_fraction = chain[root[i]];
  std::vector<size_t> order;
  std::function<void(size_t)> visit = [&](size_t i) {
    order.push_back(i);
    std::vector<size_t> children;
    for (const std::string& id : out[i].explains)
      if (const size_t c = index_of(id); c < n) children.push_back(c);
    std::stable_sort(children.begin(), children.end(),
                     [&](size_t a, size_t b) { return out[a].saving_fraction > out[b].saving_fraction; });
    for (size_t c : children) visit(c);
  };
  std::vector<size_t> roots;
  for (size_t i = 0; i < n; ++i)
    if (root[i] == i) roots.push_back(i);
  std::stable_sort(roots.begin(), roots.end(), [&](size_t a, size_t b) { return chain[a] > chain[b]; });
  for (size_t r : roots) visit(r);
  std::vector<Finding> sorted;
  sorted.reserve(n);
  for (size_t i : order) sorted.push_back(std::move(out[i]));
  out = std::move(sorted);
}

// ---- one combined estimate over the timeline --------------------------------

// What the fixes of `fixed` remove from one rank's step, combined: savings
// carved out of the GPU's idle time (launch gaps, host syncs, input gaps, MPI
// calls) as the union of their idle intervals (analyze::IdleCover), the host
// sampler's diagnoses at most the idle time; savings of compute kernels (of
// disjoint kernel sets) added, at most the compute time; copies added;
// communication and the straggler's wait as the larger of the two; then the
// parts added, as they are disjoint parts of the step.
double combined_on(const RankAnalysis& r, const std::vector<const Finding*>& fixed) {
  auto get = [&](std::string_view id) {
    for (const Finding* f : fixed)
      if (f->id == id) return f->id == "straggler" ? f->saving_fraction : saving_on(*f, r.rank);
    return 0.0;
  };
  const auto& b = r.breakdown;
  const double wall = static_cast<double>(b.wall_ns);
  const auto& c = r.idle_cover;
  const bool cover = c.availability.available && c.span_ns > 0;
  static constexpr std::pair<std::string_view, unsigned> kIdleRules[] = {{"launch-bound", analyze::kIdleLaunchGap},
                                                                          {"host-sync", analyze::kIdleHostSync},
                                                                          {"input-starvation", analyze::kIdleInput},
                                                                          {"host-communication", analyze::kIdleMpi}};
  unsigned mask = 0;
  double idle_sum = 0, idle_max = 0;
  for (const auto& [id, bit] : kIdleRules) {
    const double v = get(id);
    if (v <= 0) continue;
    mask |= bit;
    idle_sum += v;
    idle_max = std::max(idle_max, v);
  }
  double idle_union = idle_sum;
  if (cover) {
    // input-starvation leaves out the idle time inside MPI calls (an MPI
    // program's host communication) unless host-communication is fixed too.
    const bool input_without_mpi = r.job.mpi && (mask & analyze::kIdleInput) && !(mask & analyze::kIdleMpi);
    int64_t ns = 0;
    for (unsigned set = 1; set < analyze::kIdleCauseSets; ++set) {
      const bool other = (set & mask & ~analyze::kIdleInput) != 0;
      const bool input = (set & mask & analyze::kIdleInput) && !(input_without_mpi && (set & analyze::kIdleMpi));
      if (other || input) ns += c.by_causes[set];
    }
    idle_union = static_cast<double>(ns) / static_cast<double>(c.span_ns);
  }
  const double idle_share = cover ? static_cast<double>(c.idle_ns) / static_cast<double>(c.span_ns)
                            : wall > 0 ? static_cast<double>(b.idle_ns) / wall
                                       : 0;
  const double host = std::max({get("host-bound"), get("loader-bound"), get("host-contention")});
  const double idle_part = std::max({idle_max, host, std::min(idle_share, idle_union)});
  const double compute_share = wall > 0 ? static_cast<double>(b.compute_ns) / wall : 0;
  double compute_sum = 0, compute_max = 0;
  for (std::string_view id : {"mixed-precision", "fp64", "channels-last", "layout-fallback"}) {
    compute_sum += get(id);
    compute_max = std::max(compute_max, get(id));
  }
  double compute_part = std::max(compute_max, std::min(compute_sum, compute_share));
  // Restored clocks speed up the compute left after the kernel fixes.
  if (const double throttled = get("gpu-throttling"); throttled > 0 && compute_share > 0)
    compute_part += std::max(0.0, compute_share - compute_part) * std::min(1.0, throttled / compute_share);
  const double copy_part = std::max(get("pinned-memory") + get("sync-copies"), get("numa-placement"));
  const double comm_part = std::max(get("exposed-communication"), get("straggler"));
  return std::min(1.0, idle_part + compute_part + copy_part + comm_part + get("iteration-variance"));
}

// Each root, in rank order, gets the combined saving of fixing it and every
// root above it (with what they explain): the most any rank would gain.
void combine_savings(const std::vector<RankAnalysis>& judged, std::vector<Finding>& out) {
  std::vector<const Finding*> fixed;
  int roots = 0;
  for (Finding& f : out) {
    fixed.push_back(&f);
    if (!f.explained_by.empty()) continue;
    // Add the root's descendants (they follow it in `out`) before combining.
    const size_t at = static_cast<size_t>(&f - out.data());
    for (size_t i = at + 1; i < out.size() && !out[i].explained_by.empty(); ++i) fixed.push_back(&out[i]);
    ++roots;
    double best = 0;
    for (const RankAnalysis& r : judged) best = std::max(best, combined_on(r, fixed));
    f.combined_fraction = std::max(best, f.saving_fraction);
    f.combined_count = roots;
  }
}

// The per-rank rules, one function each (docs/advisor.md documents each id).
// Findings are listed by saving; equal savings keep this order.
struct RankRule {
  std::string_view id;
  std::optional<RankHit> (*judge)(const RankAnalysis&, const Thresholds&);
};
constexpr RankRule kRankRules[] = {
    {"pinned-memory", &pinned_memory},
    {"channels-last", &channels_last},
    {"mixed-precision", &mixed_precision},
    {"fp64", &fp64},
    {"exposed-communication", &exposed_communication},
    {"launch-bound", &launch_bound},
    {"host-sync", &host_sync},
    {"sync-copies", &sync_copies},
    {"input-starvation", &input_starvation},
    {"host-communication", &host_communication},
    {"numa-placement", &numa_placement},
    {"host-bound", &host_bound},
    {"loader-bound", &loader_bound},
    {"host-contention", &host_contention},
    {"gpu-throttling", &gpu_throttling},
    {"iteration-variance", &iteration_variance},
};

}  // namespace

std::string_view to_string(Severity s) {
  static constexpr auto kNames = std::to_array<std::string_view>({"info", "warning", "critical"});
  return name_by_value<Severity::kCritical>(kNames, s, "info");
}

std::string_view to_string(SavingKind k) { return k == SavingKind::kEstimate ? "estimate" : "upper bound"; }

std::string_view combined_method() {
  return "each rank's removed time combined over its timeline: savings carved out of the GPU's idle time (launch "
         "gaps, host syncs, input gaps, MPI calls) as the union of their intervals, the host diagnoses at most the "
         "idle time, kernel savings added up to the compute time, then the disjoint parts (idle, compute, copies, "
         "communication) added; the most any rank gains";
}

std::vector<std::string_view> rule_ids() {
  std::vector<std::string_view> ids;
  for (const RankRule& rule : kRankRules) ids.push_back(rule.id);
  ids.push_back("layout-fallback");  // channels_last's second id
  ids.push_back("straggler");
  return ids;
}

std::vector<Finding> advise(const RunAnalysis& run, const Thresholds& th) {
  std::vector<Finding> out;
  const std::vector<RankAnalysis> judged = judged_ranks(run);
  for (const RankRule& rule : kRankRules)
    per_rank(judged, out, [&](const RankAnalysis& r) { return rule.judge(r, th); });
  straggler(run, judged, th, out);
  add_perturbation_cautions(judged, out);
  // Equal savings keep the rules' order (kRankRules, then the straggler).
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.saving_fraction > b.saving_fraction; });
  link_host_diagnoses(out);
  link_straggler_wait(th, out);
  explain_straggler(judged, out);
  add_window_cautions(judged, out);
  rank_by_root(out);
  combine_savings(judged, out);
  return out;
}

std::string format_figure(const Figure& f) {
  if (!std::isfinite(f.value)) return "n/a";
  if (f.unit == "ns") return format_duration_ns(f.value);
  if (f.unit == "bytes") return format_bytes(f.value);
  // Shares under 0.1% keep two significant digits: "0.0%" would say none.
  if (f.unit == "fraction")
    return f.value != 0 && std::fabs(f.value) < 1e-3 ? fmt::format("{:.2g}%", 100 * f.value) : format_percent(f.value);
  if (f.unit == "ratio") return fmt::format("{:.3g}", f.value);
  if (f.unit == "count" || f.unit == "node") {
    if (f.value != std::round(f.value) || std::fabs(f.value) >= 1e15) return fmt::format("{:.3g}", f.value);
    std::string digits = fmt::format("{}", static_cast<int64_t>(std::fabs(f.value)));
    for (size_t i = digits.size(); i > 3; i -= 3) digits.insert(i - 3, ",");
    return f.value < 0 ? "-" + digits : digits;
  }
  return fmt::format("{:.3g} {}", f.value, f.unit);
}

void to_json(nlohmann::json& j, const Figure& v) {
  j = json_with(SCALESCOPE_JSON_FIELDS(v, name, value, unit), {{"text", format_figure(v)}});
}

void to_json(nlohmann::json& j, const RankSaving& v) {
  j = nlohmann::json{{"rank", v.rank}, {"saving_fraction", v.fraction}};
}

void to_json(nlohmann::json& j, const Finding& v) {
  j = json_with(
      SCALESCOPE_JSON_FIELDS(v, id, title, evidence, figures, ranks, saving_fraction, saving_method, fix, rank_savings,
                             explains, chain_saving_fraction, combined_fraction, combined_count),
      {{"severity", to_string(v.severity)},
       {"saving_kind", to_string(v.saving_kind)},
       {"explained_by", v.explained_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.explained_by)}});
  if (v.combined_count > 1) j["combined_method"] = std::string(combined_method());
  if (!v.caveat.empty()) j["caveat"] = v.caveat;
}

}  // namespace scalescope::advise
