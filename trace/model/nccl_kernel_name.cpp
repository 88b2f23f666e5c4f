#include "trace/model/nccl_kernel_name.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

#include "base/text_input.hpp"

namespace scalescope::trace {
namespace {

constexpr std::array<std::string_view, 3> kProtocols = {"LL128", "LL", "SIMPLE"};
constexpr std::array<std::string_view, 6> kReductions = {"Sum", "Prod", "Max", "Min", "PreMulSum", "SumPostDiv"};

bool is_protocol(std::string_view t) { return std::find(kProtocols.begin(), kProtocols.end(), t) != kProtocols.end(); }

bool is_reduction(std::string_view t) {
  for (auto r : kReductions)
    if (t.size() == r.size() && std::equal(t.begin(), t.end(), r.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return true;
  return false;
}

// Consumes an algorithm starting at tokens[i] (some span two tokens); 0 if none.
size_t match_algorithm(const std::vector<std::string_view>& t, size_t i, std::string& out) {
  auto tok = t[i];
  auto next = i + 1 < t.size() ? t[i + 1] : std::string_view();
  if (tok == "COLLNET" && (next == "DIRECT" || next == "CHAIN")) {
    out = std::string(tok) + "_" + std::string(next);
    return 2;
  }
  if (tok == "NVLS" && next == "TREE") {
    out = "NVLS_TREE";
    return 2;
  }
  if (tok == "RING" || tok == "TREE" || tok == "NVLS" || tok == "PAT" || tok == "COLLNET") {
    out = std::string(tok);
    return 1;
  }
  return 0;
}

std::string join(const std::vector<std::string_view>& t, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) {
    if (!out.empty()) out += '_';
    out += t[i];
  }
  return out;
}

// "ncclAllReduceRingLLKernel_sum_f32" (NCCL < 2.12).
std::optional<NcclKernelName> parse_legacy(std::string_view body) {
  auto k = body.find("Kernel");
  if (k == std::string_view::npos) return std::nullopt;
  std::string_view head = body.substr(0, k);  // "AllReduceRingLL"
  NcclKernelName out;
  static constexpr std::pair<std::string_view, std::string_view> kProto[] = {
      {"LL128", "LL128"}, {"LL", "LL"}, {"Simple", "SIMPLE"}};
  for (auto [suffix, proto] : kProto)
    if (head.ends_with(suffix)) {
      out.protocol = proto;
      head.remove_suffix(suffix.size());
      break;
    }
  static constexpr std::pair<std::string_view, std::string_view> kAlgo[] = {{"CollNetDirect", "COLLNET_DIRECT"},
                                                                            {"CollNetChain", "COLLNET_CHAIN"},
                                                                            {"CollNet", "COLLNET"},
                                                                            {"NvlsTree", "NVLS_TREE"},
                                                                            {"Nvls", "NVLS"},
                                                                            {"Ring", "RING"},
                                                                            {"Tree", "TREE"}};
  for (auto [suffix, algo] : kAlgo)
    if (head.ends_with(suffix)) {
      out.algorithm = algo;
      head.remove_suffix(suffix.size());
      break;
    }
  out.op = nccl_op_from_name(head);
  if (out.op == trace::NcclOp::kUnknown) return std::nullopt;
  std::string_view rest = body.substr(k + 6);
  if (rest.starts_with("_")) {
    auto t = split(rest.substr(1), '_');
    if (!t.empty() && is_reduction(t[0])) {
      out.reduction = std::string(t[0]);
      out.datatype = join(t, 1, t.size());
    }
  }
  return out;
}

}  // namespace

std::optional<NcclKernelName> parse_nccl_kernel_name(std::string_view name) {
  // A mangled name: _Z<length><identifier>..., the identifier is the kernel's name.
  if (name.starts_with("_Z")) {
    size_t i = 2, length = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && length < 4096)
      length = length * 10 + (name[i++] - '0');
    if (length == 0 || i + length > name.size()) return std::nullopt;
    name = name.substr(i, length);
  }
  // Drop the parameter list of a demangled name.
  if (auto paren = name.find('('); paren != std::string_view::npos) name = name.substr(0, paren);
  // A return type ("void ") and namespaces: take the last component.
  if (auto space = name.rfind(' '); space != std::string_view::npos) name = name.substr(space + 1);
  if (auto colon = name.rfind("::"); colon != std::string_view::npos) name = name.substr(colon + 2);
  NcclKernelName out;
  std::string_view body;
  bool modern = false;
  if (name.starts_with("ncclDevKernel_")) {
    body = name.substr(14);
    modern = true;
  } else if (name.starts_with("ncclKernel_")) {
    body = name.substr(11);
  } else if (name.starts_with("nccl") && name.find("Kernel") != std::string_view::npos) {
    return parse_legacy(name.substr(4));
  } else {
    return std::nullopt;
  }
  auto t = split(body, '_');
  if (t.empty() || t[0].empty()) return std::nullopt;
  if (t[0] == "Generic") return out;  // runs any collective; the op is not in the name
  out.op = nccl_op_from_name(t[0]);
  size_t i = 1;
  if (modern) {
    // <Op>[_<RedOp>_<type>]_<ALGO>_<PROTO>
    if (i < t.size() && is_reduction(t[i])) {
      out.reduction = std::string(t[i++]);
      size_t type_start = i;
      while (i < t.size()) {
        std::string algo;
        if (match_algorithm(t, i, algo)) break;
        ++i;
      }
      out.datatype = join(t, type_start, i);
    }
    if (i < t.size()) i += match_algorithm(t, i, out.algorithm);
    if (i < t.size() && is_protocol(t[i])) out.protocol = std::string(t[i]);
  } else {
    // <Op>_<ALGO>_<PROTO>_<RedOp>_<type>
    if (i < t.size()) i += match_algorithm(t, i, out.algorithm);
    if (i < t.size() && is_protocol(t[i])) out.protocol = std::string(t[i++]);
    if (i < t.size() && is_reduction(t[i])) {
      out.reduction = std::string(t[i++]);
      out.datatype = join(t, i, t.size());
    }
  }
  return out;
}

}  // namespace scalescope::trace
