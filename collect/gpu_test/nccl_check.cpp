#include "collect/gpu_test/nccl_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <set>

#include "collect/gpu_test/ground_truth_spec.hpp"
#include "base/error.hpp"

namespace scalescope::collect {
namespace {

namespace gt = ground_truth;

GpuCheck exact(std::string name, uint64_t expected, uint64_t got) {
  return {std::move(name), expected == got, fmt::format("expected {}, got {}", expected, got)};
}

// Rows of `t.nccl` in time order.
std::vector<size_t> by_start(const trace::NcclTable& n) {
  std::vector<size_t> order(n.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&n](size_t a, size_t b) { return n.start[a] < n.start[b]; });
  return order;
}

}  // namespace

std::vector<GpuCheck> check_ground_truth_nccl(const std::vector<trace::Trace>& traces) {
  std::vector<GpuCheck> out;
  if (traces.size() != 1) {
    out.push_back(exact("one traced process", 1, traces.size()));
    return out;
  }
  const trace::Trace& t = traces[0];
  const uint64_t bytes = gt::kAllReduceFloats * sizeof(float);
  uint64_t with_bytes = 0, with_comm = 0, all = 0;
  std::map<uint32_t, std::vector<int64_t>> sequences;  // per device, in time order
  for (size_t i : by_start(t.nccl)) {
    if (t.nccl.op[i] != trace::NcclOp::kAllReduce) continue;
    ++all;
    with_bytes += t.nccl.bytes[i] == bytes;
    with_comm += !t.strings.view(t.nccl.communicator[i]).empty();
    sequences[t.nccl.device[i]].push_back(t.nccl.sequence[i]);
  }
  out.push_back(exact(fmt::format("NCCL all-reduces with the call's bytes ({})", bytes), all, with_bytes));
  out.push_back(exact("NCCL all-reduces with a communicator", all, with_comm));
  for (const auto& [device, seq] : sequences) {
    std::vector<int64_t> want(seq.size());
    std::iota(want.begin(), want.end(), int64_t{0});
    out.push_back({fmt::format("NCCL sequence 0..{} in time order on device {}", seq.size() - 1, device), seq == want,
                   fmt::format("got {}", fmt::join(seq, ","))});
  }
  auto extra = [&t](const char* key) {
    auto it = t.meta.extra.find(key);
    return it == t.meta.extra.end() ? std::string("?") : it->second;
  };
  out.push_back({"NCCL kernels without their call", extra("nccl_kernels_unjoined") == "0",
                 fmt::format("joined {}, unjoined {}, undecoded payloads {}", extra("nccl_kernels_joined"),
                             extra("nccl_kernels_unjoined"), extra("nccl_payloads_undecoded"))});
  return out;
}

ExpectedNcclCalls parse_expected_nccl_calls(const std::string& text) {
  ExpectedNcclCalls e;
  auto first = text.find(':'), second = text.find(':', first == std::string::npos ? first : first + 1);
  if (first == std::string::npos || second == std::string::npos)
    fail("expected NCCL calls '{}': want OP:BYTES:CALLS, e.g. AllReduce:4194332:5", text);
  e.op = trace::nccl_op_from_name(text.substr(0, first));
  auto number = [&text](size_t from, size_t to, uint64_t& v) {
    auto r = std::from_chars(text.data() + from, text.data() + to, v);
    return r.ec == std::errc() && r.ptr == text.data() + to && to > from;
  };
  if (e.op == trace::NcclOp::kUnknown || !number(first + 1, second, e.bytes) ||
      !number(second + 1, text.size(), e.calls))
    fail("expected NCCL calls '{}': want OP:BYTES:CALLS with a known op, e.g. AllReduce:4194332:5", text);
  return e;
}

std::vector<GpuCheck> check_nccl_sizes(const std::vector<trace::Trace>& traces, int world_size,
                                       const std::vector<ExpectedNcclCalls>& expected) {
  std::vector<GpuCheck> out;
  // Per expected kind: per rank, the (sequence, communicator) of its calls in time order.
  using Calls = std::vector<std::pair<int64_t, std::string>>;
  std::vector<std::map<int, Calls>> seen(expected.size());
  std::set<int> ranks;
  for (const auto& t : traces) {
    if (t.meta.rank < 0) continue;
    ranks.insert(t.meta.rank);
    const std::string who = fmt::format("rank {}", t.meta.rank);
    std::map<std::pair<std::string, uint32_t>, int64_t> last;  // per (communicator, device)
    uint64_t rising = 0, joined = 0;
    for (size_t i : by_start(t.nccl)) {
      if (t.nccl.sequence[i] < 0) continue;
      ++joined;
      auto key = std::make_pair(std::string(t.strings.view(t.nccl.communicator[i])), t.nccl.device[i]);
      auto it = last.find(key);
      rising += it == last.end() || t.nccl.sequence[i] >= it->second;  // equal: a second kernel of one call
      last[key] = t.nccl.sequence[i];
      for (size_t e = 0; e < expected.size(); ++e)
        if (t.nccl.op[i] == expected[e].op && t.nccl.bytes[i] == expected[e].bytes)
          seen[e][t.meta.rank].emplace_back(t.nccl.sequence[i], key.first);
    }
    auto extra = [&t](const char* key) {
      auto it = t.meta.extra.find(key);
      return it == t.meta.extra.end() ? std::string("?") : it->second;
    };
    out.push_back(
        {who + " NCCL sequence numbers rise in time order per communicator", rising == joined,
         fmt::format("{} of {} rise; collector joined {}, unjoined {}, undecoded payloads {}", rising, joined,
                     extra("nccl_kernels_joined"), extra("nccl_kernels_unjoined"), extra("nccl_payloads_undecoded"))});
    for (size_t e = 0; e < expected.size(); ++e)
      out.push_back(
          exact(fmt::format("{} {} calls of {} bytes", who, trace::to_string(expected[e].op), expected[e].bytes),
                expected[e].calls, seen[e][t.meta.rank].size()));
  }
  out.push_back(exact("ranks traced", uint64_t(world_size), ranks.size()));
  for (size_t e = 0; e < expected.size(); ++e) {
    const auto& per_rank = seen[e];
    bool same = !per_rank.empty();
    for (const auto& [rank, calls] : per_rank) same = same && calls == per_rank.begin()->second;
    out.push_back({fmt::format("{} of {} bytes: same sequence numbers and communicator on every rank",
                               trace::to_string(expected[e].op), expected[e].bytes),
                   same,
                   per_rank.empty()
                       ? "no calls"
                       : fmt::format("rank {}: first sequence {}", per_rank.begin()->first,
                                     per_rank.begin()->second.empty() ? -1 : per_rank.begin()->second[0].first)});
  }
  return out;
}

}  // namespace scalescope::collect
