// The collectives of a rank, as straggler matching reads them.
#include "analyze/collectives.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "trace/import/clock_alignment.hpp"

namespace scalescope::analyze {

using trace::Timestamp;

namespace {

trace::NcclOp op_of_kernel(std::string_view name) { return trace::nccl_op_of_kernel_name(name); }

}  // namespace

// Collectives for straggler matching, in start order: NCCL's records, else
// the communication kernels. Sequence numbers count over the whole trace.
std::vector<CollectiveArrival> detail::collective_arrivals(const trace::Trace& t, Timestamp ws, Timestamp we,
                                                           const std::vector<KernelInfo>& info,
                                                           const std::vector<Iteration>& iterations) {
  std::vector<CollectiveArrival> out;
  std::map<std::pair<trace::StringId, trace::NcclOp>, int64_t> occurrence;
  // Collectives before the first steady iteration belong to the warm-up.
  Timestamp steady_start = std::numeric_limits<Timestamp>::min();
  for (const Iteration& it : iterations)
    if (!it.warmup) {
      steady_start = it.start;
      break;
    }
  auto push = [&](trace::StringId comm_id, trace::NcclOp op, int64_t seq, Timestamp s, Timestamp e) {
    int64_t& n = occurrence[{comm_id, op}];
    const int64_t sequence = seq >= 0 ? seq : n;
    ++n;
    if (e < ws || s > we || e < s) return;  // outside the window
    CollectiveArrival c;
    c.communicator = comm_id;
    c.op = op;
    c.sequence = sequence;
    c.arrival_unix_ns = t.meta.to_unix_ns(s);
    c.end_unix_ns = t.meta.to_unix_ns(e);
    c.warmup = s < steady_start;
    out.push_back(c);
  };
  const auto& nc = t.nccl;
  const auto& k = t.kernels;
  if (nc.size() > 0) {
    std::vector<uint32_t> order(nc.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return nc.start[x] < nc.start[y]; });
    for (uint32_t i : order) push(nc.communicator[i], nc.op[i], nc.sequence[i], nc.start[i], nc.end[i]);
  } else {
    std::vector<uint32_t> order;
    for (uint32_t i = 0; i < k.size(); ++i)
      if (info[k.name[i]].cls == KernelClass::kCommunication) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return k.start[x] < k.start[y]; });
    for (uint32_t i : order) push(trace::kNoString, op_of_kernel(t.strings.view(k.name[i])), -1, k.start[i], k.end[i]);
  }
  std::set<trace::StringId> comms;
  for (const auto& c : out) comms.insert(c.communicator);
  std::unordered_map<trace::StringId, std::string> names;
  for (trace::StringId id : comms) names[id] = std::string(t.strings.view(id));
  for (auto& c : out) c.communicator_name = names[c.communicator];
  return out;
}

}  // namespace scalescope::analyze
