#pragma once
// Kernel names a person can read: the one shortening of every table, chart
// and column that shows kernels. A kernel's full name is its whole C++
// signature ("void at::native::vectorized_elementwise_kernel<4,
// at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, ...)"), or
// its mangled form from CUPTI ("_Z...").
//
// short_kernel_name: demangled (Itanium ABI) when mangled; then the return
// type, template arguments, parameter lists and "(anonymous namespace)::"
// are dropped, and the namespace-qualified function name kept
// ("at::native::vectorized_elementwise_kernel"). Names that are no C++
// signature (cuBLAS "nvjet_sm90_...", cuDNN "sm90_xmma_...", Triton
// "triton_poi_fused_add_0") come back unchanged.
//
// distinct_short_names: the short names of a list of distinct full names, so
// that no two rows of one table read alike. Names that share a short name get
// back the fewest template arguments that tell them apart, each as its
// unqualified short name ("at::native::vectorized_elementwise_kernel<FillFunctor>",
// "...<AUnaryFunctor, 2>" beside "...<AUnaryFunctor, 4>" would read
// "<2, AUnaryFunctor>": arguments keep their order); names no template
// argument separates get " #2", " #3" in list order.

#include <string>
#include <string_view>
#include <vector>

namespace scalescope::trace {

// The demangled name when `name` is an Itanium-mangled symbol ("_Z..."), else `name`.
std::string demangle_kernel_name(std::string_view name);

std::string short_kernel_name(std::string_view name);

// One short name per entry of `names` (same order), distinct when the full
// names are distinct.
std::vector<std::string> distinct_short_names(const std::vector<std::string_view>& names);

}  // namespace scalescope::trace
