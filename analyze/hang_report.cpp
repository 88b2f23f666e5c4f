#include "analyze/hang_report.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

namespace scalescope::analyze {

namespace {

std::string describe(const trace::HangCollective& c) {
  return fmt::format("{} #{} of communicator {:#x}{}", trace::to_string(c.op), c.sequence, c.communicator,
                     c.leave_unix_ns ? " (left)" : " (inside)");
}

// The process's last collective and iteration, in words.
std::string last_of(const trace::HangDump& d) {
  std::string s;
  if (!d.collectives.empty()) s = describe(d.collectives.back());
  if (!d.iterations.empty())
    s += (s.empty() ? "" : ", ") + fmt::format("iteration {}", d.iterations.back().index);
  if (s.empty()) s = d.collectives_recorded ? "no collective or iteration seen" : "no collectives recorded";
  return s;
}

// "0-6, 9": ranks, runs of consecutive ones joined.
std::string rank_list(std::vector<int32_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j > i ? fmt::format("{}-{}", ranks[i], ranks[j]) : fmt::format("{}", ranks[i]);
    i = j + 1;
  }
  return fmt::format("rank{} {}", ranks.size() == 1 ? "" : "s", out);
}

}  // namespace

HangReport find_hang(const std::vector<trace::HangDump>& dumps) {
  HangReport h;
  h.dumps = dumps.size();
  if (dumps.empty()) return h;
  for (const auto& d : dumps)
    if (std::find(h.reasons.begin(), h.reasons.end(), d.reason) == h.reasons.end()) h.reasons.push_back(d.reason);
  // The collective the job stopped in: the (communicator, sequence) the most
  // processes are inside; of equals, the lowest sequence (the first to block).
  std::map<std::pair<uint64_t, uint64_t>, std::pair<size_t, trace::NcclOp>> inside;
  for (const auto& d : dumps)
    for (const auto& c : d.collectives)
      if (c.leave_unix_ns == 0 && c.sequence > 0) {
        auto& [n, op] = inside[{c.communicator, c.sequence}];
        ++n;
        op = c.op;
      }
  std::optional<std::pair<uint64_t, uint64_t>> stuck;
  size_t most = 0;
  for (const auto& [key, v] : inside)
    if (v.first > most || (v.first == most && stuck && key.second < stuck->second)) most = v.first, stuck = key, h.op = v.second;
  std::vector<const trace::HangDump*> by_rank;
  for (const auto& d : dumps) by_rank.push_back(&d);
  std::sort(by_rank.begin(), by_rank.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  std::vector<int32_t> waiting;
  std::vector<std::string> behind;
  for (const auto* d : by_rank) {
    HangProcess p{d->rank, d->host, d->pid, "", last_of(*d)};
    if (!stuck) {
      p.state = d->collectives_recorded ? "not in a collective" : "no collectives recorded";
    } else if (!d->collectives_recorded) {
      p.state = "no collectives recorded";
    } else {
      uint64_t furthest = 0;  // the highest sequence this process entered on the communicator
      bool in_it = false;
      for (const auto& c : d->collectives)
        if (c.communicator == stuck->first) {
          furthest = std::max(furthest, c.sequence);
          in_it |= c.sequence == stuck->second && c.leave_unix_ns == 0;
        }
      p.state = in_it ? "waiting" : furthest < stuck->second ? "not entered" : "past it";
      if (in_it) waiting.push_back(d->rank);
      else if (furthest < stuck->second)
        behind.push_back(fmt::format("{} never entered it and was last in {}", rank_list({d->rank}), p.last));
    }
    h.processes.push_back(std::move(p));
  }
  if (stuck) {
    h.in_collective = true;
    h.communicator = stuck->first;
    h.sequence = stuck->second;
    h.text = fmt::format("hung: {} wait in {} #{} of communicator {:#x}", rank_list(waiting), trace::to_string(h.op),
                         h.sequence, h.communicator);
    for (const auto& b : behind) h.text += "; " + b;
    if (behind.empty()) h.text += "; every process with a dump entered it (the rank missing may have no dump)";
  } else {
    h.text = fmt::format("no process was inside a collective when its dump was written ({} dump{})", dumps.size(),
                         dumps.size() == 1 ? "" : "s");
  }
  return h;
}

std::vector<trace::HangDump> read_hang_dumps(const std::filesystem::path& run_dir, std::vector<std::string>* warnings) {
  std::vector<trace::HangDump> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(trace::hang_dump_dir(run_dir), ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().extension() != ".json") continue;
    std::ifstream in(it->path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string error;
    auto d = trace::parse_hang_dump(text, &error);
    if (d) out.push_back(std::move(*d));
    else if (warnings) warnings->push_back(it->path().string() + ": " + error);
  }
  return out;
}

}  // namespace scalescope::analyze
