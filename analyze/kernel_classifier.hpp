#pragma once
// Kernel classes, precision and layout by kernel name (rules: docs/kernel-classes.md;
// kernel_classifier.cpp), and the per-name summaries the top lists hold.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/trace.hpp"

namespace scalescope::analyze {

enum class KernelClass : uint8_t { kCompute = 0, kCommunication, kMemory, kSynchronization };
inline constexpr int kKernelClassCount = 4;
enum class Precision : uint8_t {
  kOther = 0,     // not a GEMM/convolution we can place (elementwise, reductions, ...)
  kFp64,          // double-precision kernels
  kFp32NoTensor,  // FP32 GEMM/convolution on CUDA cores (SIMT)
  kTensorCore,    // tensor-core kernels in FP16, BF16, FP8, INT8 (HMMA/GMMA/WGMMA)
  kTf32,          // FP32 data on tensor cores as TF32 (half the BF16 peak)
};
inline constexpr int kPrecisionCount = 5;

std::string_view to_string(KernelClass c);
std::string_view to_string(Precision p);

// What the name of one kernel says about it.
struct KernelInfo {
  KernelClass cls = KernelClass::kCompute;
  Precision precision = Precision::kOther;
  bool layout_conversion = false;  // NCHW <-> NHWC transposes
  bool layout_to_nchw = false;     // ... of them, NHWC -> NCHW (the model is channels_last, an op is not)
  bool nchw_half = false;          // an NCHW-only kernel computing in fp16/bf16 (docs/kernel-classes.md)
};

// Name rules: an ordered list of (case-insensitive substring, class); the
// first match wins, built-in rules come after the user's. Precision and layout
// patterns are built in.
class KernelClassifier {
 public:
  KernelClassifier();  // the built-in rules
  // Reads a rules file: lines "<class> <substring>" (class: compute,
  // communication, memory, synchronization); '#' starts a comment. The file's
  // rules take precedence over the built-in ones. Throws Error on bad lines.
  static KernelClassifier from_file(const std::string& path);
  // The text of a rules file, read as from_file reads it (a regular file of
  // at most kMaxRulesBytes; a FIFO or device is refused at once), not parsed.
  static std::string read_file(const std::string& path);
  // The same rules from text already read; `source` names the input in errors
  // ("rules.txt:3: ..."). At most kMaxRules rules and kMaxRulesBytes of text.
  static KernelClassifier parse(std::string_view text, std::string_view source);
  static constexpr size_t kMaxRules = 10'000;
  static constexpr size_t kMaxRulesBytes = 1 << 20;
  void add_rule(std::string substring, KernelClass cls);  // user rule, before built-ins
  KernelInfo classify(std::string_view kernel_name) const;

 private:
  struct Rule {
    std::string needle;  // lower case
    KernelClass cls;
  };
  std::vector<Rule> user_rules_;
};

struct KernelSummary {
  std::string name;        // the full name, as the trace has it
  std::string short_name;  // trace::distinct_short_names over the list it is in: rows never read alike
  KernelClass cls = KernelClass::kCompute;
  Precision precision = Precision::kOther;
  int64_t count = 0;
  int64_t total_ns = 0;
};

struct ClassTotal {
  KernelClass cls = KernelClass::kCompute;
  int64_t count = 0;
  int64_t total_ns = 0;
};

// The class, precision and layout of every name in the trace's string table.
std::vector<KernelInfo> classify_names(const trace::Trace& trace, const KernelClassifier& classifier);

}  // namespace scalescope::analyze
