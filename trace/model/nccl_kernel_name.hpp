#pragma once
// What an NCCL kernel's name says about its collective: the one parser of
// every importer, the collector and the clock alignment (there were
// four, and they disagreed on COLLNET_DIRECT and on pre-2.12 names). NCCL 2.19+ names
// kernels ncclDevKernel_<Op>[_<RedOp>_<type>]_<ALGO>_<PROTO> (e.g.
// "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
// 2.12-2.18 used ncclKernel_<Op>_<ALGO>_<PROTO>_<RedOp>_<type>; older ones
// nccl<Op><Algo><Proto>Kernel_<redop>_<type>. Generic kernels
// ("ncclDevKernel_Generic_4") run any collective: the op stays unknown.
// Demangled names may carry a return type and namespaces ("void
// ncclDevKernel_...(...)"); a mangled one ("_Z39ncclDevKernel_...") is read
// through its length-prefixed identifier.

#include <optional>
#include <string>
#include <string_view>

#include "trace/model/trace.hpp"

namespace scalescope::trace {

struct NcclKernelName {
  NcclOp op = NcclOp::kUnknown;
  std::string reduction;  // "Sum", "Max", ... ; empty when none
  std::string datatype;   // as NCCL spells it: "f32", "bf16", "float", "int8_t"
  std::string algorithm;  // "RING", "TREE", "COLLNET_DIRECT", "NVLS", "NVLS_TREE", "PAT"
  std::string protocol;   // "LL", "LL128", "SIMPLE"
};

// nullopt when `name` (demangled or not) is not an NCCL kernel.
std::optional<NcclKernelName> parse_nccl_kernel_name(std::string_view name);

}  // namespace scalescope::trace
