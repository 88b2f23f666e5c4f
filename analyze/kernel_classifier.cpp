// Kernel classification by name. The rules are listed, with their reasons, in
// docs/kernel-classes.md; keep the two in step.
#include "analyze/kernel_classifier.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string>

#include "analyze/analyze.hpp"
#include "analyze/detail.hpp"
#include "base/enum_names.hpp"
#include "base/error.hpp"
#include "base/text_input.hpp"

namespace scalescope::analyze {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool has(std::string_view haystack, std::string_view needle) { return haystack.find(needle) != std::string_view::npos; }

template <size_t N>
bool has_any(std::string_view haystack, const std::array<std::string_view, N>& needles) {
  return std::any_of(needles.begin(), needles.end(), [&](std::string_view n) { return has(haystack, n); });
}

// Built-in class rules, first match wins (all lower case).
constexpr std::array<std::string_view, 4> kCommunication = {"nccl", "rccl", "nvshmem", "msccl"};
constexpr std::array<std::string_view, 5> kSynchronization = {"wait_kernel", "spin_kernel", "streamwait", "waitvalue",
                                                              "sleep_kernel"};
constexpr std::array<std::string_view, 5> kMemory = {"memcpy", "memset", "fillfunctor", "direct_copy_kernel",
                                                     "copy_kernel_cuda"};

// Layout conversions between NCHW and NHWC (cuDNN's transforms, CUTLASS/XLA style names).
constexpr std::array<std::string_view, 8> kLayout = {
    "nchwtonhwc",   "nhwctonchw",           "nchw2nhwc",           "nhwc2nchw", "nchw_to_nhwc",
    "nhwc_to_nchw", "nchwaddpaddingtonhwc", "nhwcaddpaddingtonchw"};

constexpr std::array<std::string_view, 4> kLayoutToNchw = {"nhwctonchw", "nhwc2nchw", "nhwc_to_nchw",
                                                           "nhwcaddpaddingtonchw"};

// GEMM / convolution families (where precision matters for the advisor).
constexpr std::array<std::string_view, 16> kGemmConv = {
    "gemm", "gemv",    "conv1d", "conv2d", "conv3d", "convolution", "convolve", "nvjet",
    "xmma", "cutlass", "dgrad",  "wgrad",  "fprop",  "winograd",    "cublas",   "matmul"};

// Tensor-core or reduced-precision GEMM/convolution markers.
constexpr std::array<std::string_view, 13> kTensor = {"hmma",   "gmma",   "wgmma", "tensorop", "tensor16x8",
                                                      "s16816", "h16816", "h1688", "i8816",    "bf16",
                                                      "f16",    "e4m3",   "e5m2"};
// cuBLAS's nvjet kernels name their types in a 3-letter code after "nvjet_"
// (and the arch, "sm90_", in CUDA 13): A/B type, compute type, C/D type.
// Seen in public profiles: hsh/hss = FP16 inputs, tst/tss = BF16 inputs (aten::mm
// on c10::BFloat16), sss = FP32 ("sss_tf32" when TF32 is allowed), ddd = FP64.
// Returns the A/B letter, or 0 when the name has no such code.
char nvjet_input_type(std::string_view n) {
  size_t at = n.find("nvjet_");
  if (at == std::string_view::npos) return 0;
  std::string_view rest = n.substr(at + 6);
  if (rest.starts_with("sm") && rest.size() > 2 && rest[2] >= '0' && rest[2] <= '9') {
    size_t cut = rest.find('_');
    if (cut == std::string_view::npos) return 0;
    rest = rest.substr(cut + 1);
  }
  size_t end = rest.find('_');
  std::string_view code = rest.substr(0, end);
  if (code.size() != 3) return 0;
  for (char ch : code)
    if (ch < 'a' || ch > 'z') return 0;
  return code[0];
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }

// The data type a kernel computes in, as the first floating-point type named
// in its template arguments: "bn_bw_1c11_kernel_new<double, double, double2,
// 512>" is double, "conv_depthwise2d_forward_kernel<3, c10::half, int>" half.
// Only the first one counts: later ones can be scalar parameters that FP32
// kernels take too (PyTorch's fused SGD: "multi_tensor_apply_kernel<
// tensorlistmetadata<4>, fusedsgdmathfunctor<float, 4>, float*, double, ...>").
// The parameter list is not read, for the same reason; "(anonymous
// namespace)" is part of the name, not a parameter list.
enum class FloatType : uint8_t { kNone, kDouble, kFloat, kHalf };

FloatType first_float_type(std::string_view n) {
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  constexpr std::array<std::string_view, 3> kDouble = {"double", "double2", "double4"};
  constexpr std::array<std::string_view, 3> kFloat = {"float", "float2", "float4"};
  constexpr std::array<std::string_view, 9> kHalf = {"half",          "half2",          "__half",
                                                     "__half2",       "c10::half",      "bfloat16",
                                                     "__nv_bfloat16", "__nv_bfloat162", "c10::bfloat16"};
  auto in = [](const auto& list, std::string_view w) { return std::find(list.begin(), list.end(), w) != list.end(); };
  int depth = 0;
  for (size_t i = 0; i < n.size();) {
    const char c = n[i];
    if (c == '(') {
      if (n.substr(i).starts_with(kAnonymous)) {
        i += kAnonymous.size();
        continue;
      }
      if (depth == 0) return FloatType::kNone;
      ++i;
    } else if (c == '<') {
      ++depth, ++i;
    } else if (c == '>') {
      if (depth > 0) --depth;
      ++i;
    } else if (word_char(c)) {
      size_t j = i;
      while (j < n.size() && word_char(n[j])) ++j;
      const std::string_view word = n.substr(i, j - i);
      if (depth > 0) {
        if (in(kDouble, word)) return FloatType::kDouble;
        if (in(kFloat, word)) return FloatType::kFloat;
        if (in(kHalf, word)) return FloatType::kHalf;
      }
      i = j;
    } else {
      ++i;
    }
  }
  return FloatType::kNone;
}

// Kernels that exist only for NCHW data, seen in an fp16 NCHW MobileNetV2 on
// H200 where the NHWC run used other kernels: cuDNN's "1C11" spatial batch
// norm (bn_fw_tr_1c11_kernel_nchw, bn_bw_1c11_kernel_new), PyTorch's own
// depthwise convolution (conv_depthwise2d_*), and cuDNN kernels named *nchw*
// (conv2d_c1_k1_nchw_shmem_tiling). Conversions are counted apart.
constexpr std::array<std::string_view, 4> kNchwOnly = {"nchw", "bn_fw_tr_1c11", "bn_bw_1c11", "conv_depthwise2d"};

Precision precision_of(std::string_view n) {
  const bool gemm_conv = has_any(n, kGemmConv);
  // FP64 work of any kind (batch norm, depthwise convolutions, elementwise
  // kernels) counts: on H200 the GEMM/conv families held only 19 % of an FP64
  // MobileNetV2 step's kernel time, and leaving FP64 halved the step.
  if (!gemm_conv) return first_float_type(n) == FloatType::kDouble ? Precision::kFp64 : Precision::kOther;
  // FP64: dgemm, zgemm, double in the template arguments, _f64 / _ddd_ type codes.
  if (has(n, "dgemm") || has(n, "zgemm") || has(n, "f64") || has(n, "_ddd_") || has(n, "<double") ||
      has(n, "double,") || has(n, "_d884") || has(n, "dmma"))
    return Precision::kFp64;
  if (char input = nvjet_input_type(n)) {
    if (has(n, "tf32")) return Precision::kTf32;
    switch (input) {
      case 'h':
      case 't':
      case 'b':
      case 'q':
      case 'e': return Precision::kTensorCore;  // FP16, BF16, FP8
      case 's': return Precision::kFp32NoTensor;
      case 'd': return Precision::kFp64;
      default: return Precision::kOther;  // a code not seen yet: no claim
    }
  }
  // TF32: FP32 tensors on tensor cores (cuDNN's default for FP32 convolutions,
  // cuBLAS with allow_tf32); s1688gemm without f16 is CUTLASS's TF32 tensor-op GEMM.
  const bool half = has(n, "f16") || has(n, "half") || has(n, "bf16");
  if (!half && (has(n, "tf32") || has(n, "s1688"))) return Precision::kTf32;
  // Half/bf16/fp8 markers: a mixed name (f16 inputs, f32 accumulate) is half.
  if (has_any(n, kTensor) || has(n, "__half") || has(n, "c10::half") || has(n, "bfloat16") || has(n, "fp16") ||
      has(n, "fp8"))
    return Precision::kTensorCore;
  // What remains of a GEMM/conv family with an FP32 marker runs on CUDA cores:
  // sgemm (cuBLAS, CUTLASS simt), implicit_convolve_sgemm, f32f32 xmma without tf32.
  if (has(n, "sgemm") || has(n, "f32f32") || has(n, "simt") || has(n, "<float") || has(n, "fp32") || has(n, "scudnn") ||
      has(n, "_sss_") || has(n, "float,"))
    return Precision::kFp32NoTensor;
  return Precision::kOther;
}

}  // namespace

std::string_view to_string(KernelClass c) {
  static constexpr auto kNames =
      std::to_array<std::string_view>({"compute", "communication", "memory", "synchronization"});
  return name_by_value<KernelClass::kSynchronization>(kNames, c, "compute");
}

std::string_view to_string(Precision p) {
  static constexpr auto kNames =
      std::to_array<std::string_view>({"other", "fp64", "fp32-no-tensor-core", "tensor-core", "tf32"});
  return name_by_value<Precision::kTf32>(kNames, p, "other");
}

KernelClassifier::KernelClassifier() = default;

void KernelClassifier::add_rule(std::string substring, KernelClass cls) {
  user_rules_.push_back({lower(substring), cls});
}

namespace {

// A fragment of user text for a one-line error: control characters become '?'
// and long text is cut, so a binary or huge file cannot break the line.
std::string printable(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string out;
  for (char c : s.substr(0, kMax)) out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  if (s.size() > kMax) out += "...";
  return out;
}

}  // namespace

KernelClassifier KernelClassifier::from_file(const std::string& path) { return parse(read_file(path), path); }

std::string KernelClassifier::read_file(const std::string& path) {
  // O_NONBLOCK, then a regular-file check: a FIFO (or a device, a socket) is
  // refused at once instead of waiting for a writer or reading forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) fail("kernel class rules file '{}': no such file", path);
    fail("cannot open kernel class rules file '{}' ({})", path, std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    if (S_ISDIR(st.st_mode)) fail("kernel class rules file '{}' is a directory", path);
    fail("kernel class rules file '{}' is not a regular file (a FIFO, device or socket)", path);
  }
  // Read at most one byte past the limit: a huge file is refused without reading it all.
  std::string text(kMaxRulesBytes + 1, '\0');
  const ssize_t got = trace::read_up_to(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (got < 0) fail("cannot read kernel class rules file '{}' ({})", path, std::strerror(err));
  text.resize(static_cast<size_t>(got));
  return text;
}

KernelClassifier KernelClassifier::parse(std::string_view text, std::string_view source) {
  if (text.size() > kMaxRulesBytes)
    fail("{}: kernel class rules file larger than {} MiB", source, kMaxRulesBytes >> 20);
  KernelClassifier classifier;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) continue;
    line.remove_prefix(first);
    line = line.substr(0, line.find_last_not_of(" \t\r") + 1);
    const auto space = line.find_first_of(" \t");
    if (space == std::string_view::npos)
      fail("{}:{}: expected '<class> <substring>', got '{}'", source, line_no, printable(line));
    const std::string cls = lower(line.substr(0, space));
    std::string_view needle = line.substr(space);
    needle.remove_prefix(needle.find_first_not_of(" \t"));
    KernelClass k;
    if (cls == "compute") k = KernelClass::kCompute;
    else if (cls == "communication") k = KernelClass::kCommunication;
    else if (cls == "memory") k = KernelClass::kMemory;
    else if (cls == "synchronization") k = KernelClass::kSynchronization;
    else
      fail("{}:{}: unknown kernel class '{}' (expected compute, communication, memory or synchronization)", source,
           line_no, printable(cls));
    if (classifier.user_rules_.size() >= kMaxRules) fail("{}: more than {} kernel class rules", source, kMaxRules);
    classifier.add_rule(std::string(needle), k);
  }
  return classifier;
}

KernelInfo KernelClassifier::classify(std::string_view kernel_name) const {
  const std::string n = lower(kernel_name);
  KernelInfo info;
  info.layout_conversion = has_any(n, kLayout);
  // Direction matters for the fix: NCHW->NHWC means the model runs NCHW and
  // tensor-core kernels want NHWC; NHWC->NCHW means it already runs channels_last.
  info.layout_to_nchw = info.layout_conversion && has_any(n, kLayoutToNchw);
  // In half precision the NHWC tensor-core kernels are the fast path; an
  // NCHW-only kernel there is time that channels_last would replace.
  info.nchw_half = !info.layout_conversion && has_any(n, kNchwOnly) && first_float_type(n) == FloatType::kHalf;
  info.precision = precision_of(n);
  for (const Rule& r : user_rules_) {
    if (has(n, r.needle)) {
      info.cls = r.cls;
      return info;
    }
  }
  if (has_any(n, kCommunication)) info.cls = KernelClass::kCommunication;
  else if (has_any(n, kSynchronization)) info.cls = KernelClass::kSynchronization;
  else if (has_any(n, kMemory)) info.cls = KernelClass::kMemory;
  else info.cls = KernelClass::kCompute;
  if (info.cls != KernelClass::kCompute) info.precision = Precision::kOther;
  return info;
}

std::vector<KernelInfo> classify_names(const trace::Trace& trace, const KernelClassifier& classifier) {
  // Classify each distinct kernel name once; the table is indexed by StringId.
  std::vector<KernelInfo> out(trace.strings.size());
  std::vector<uint8_t> seen(trace.strings.size(), 0);
  for (trace::StringId id : trace.kernels.name) {
    if (id < seen.size() && !seen[id]) {
      seen[id] = 1;
      out[id] = classifier.classify(trace.strings.view(id));
    }
  }
  return out;
}

namespace detail {

bool contains_ci(std::string_view hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

}  // namespace detail

}  // namespace scalescope::analyze
