// Fuzzes the parser of the user's kernel class rules (`analyze --classes FILE`):
// any text must give a classifier or a scalescope::Error, and a classifier
// must classify names, including its own needles, without fault.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analyze/analyze.hpp"
#include "base/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using scalescope::analyze::KernelClassifier;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const KernelClassifier c = KernelClassifier::parse(text, "rules.txt");
    // Classify the input itself and a few real names: user rules are matched first.
    (void)c.classify(text.substr(0, 256));
    (void)c.classify("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    (void)c.classify("sm90_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nhwckrsc_nhwc_tilesize128x128x32");
    (void)c.classify("");
  } catch (const scalescope::Error&) {}
  return 0;
}
