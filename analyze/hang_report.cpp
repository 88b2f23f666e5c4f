#include "analyze/hang_report.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "base/format_units.hpp"

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

// The main thread's innermost Python frames (the main thread's id is the
// pid; else the first thread read): where a rank that stopped was.
std::string python_of(const trace::HangDump& d) {
  if (d.python.empty()) return {};
  const trace::HangPythonThread* t = &d.python.front();
  for (const auto& p : d.python)
    if (p.tid == d.pid) t = &p;
  constexpr size_t kShown = 3;  // the leaf and its two callers: the line and the job's own frame that called it
  std::string s;
  for (size_t i = 0; i < t->frames.size() && i < kShown; ++i) {
    const auto& f = t->frames[i];
    const auto slash = f.file.find_last_of('/');
    s += fmt::format("{}{}:{} {}", i ? " < " : "", slash == std::string::npos ? f.file : f.file.substr(slash + 1),
                     f.line, f.function);
  }
  return s;
}

// The collective the job stopped at, as (communicator, sequence). NCCL's
// call returns once its kernel is queued, so a rank waiting for a peer has
// usually left the call's NVTX range: the ranks are told apart by how far
// each got on a communicator. Where the ranks of a communicator got to
// different counts, the highest is where the others never arrived (of
// several such communicators, the one entered last); where all agree, a call
// still open (the host blocked inside it) is the place.
std::optional<std::pair<uint64_t, uint64_t>> stopped_at(const std::vector<trace::HangDump>& dumps, bool* split) {
  std::map<uint64_t, std::vector<std::pair<uint64_t, int64_t>>> furthest;  // communicator -> per dump (sequence, entered)
  for (const auto& d : dumps) {
    std::map<uint64_t, std::pair<uint64_t, int64_t>> mine;
    for (const auto& c : d.collectives)
      if (c.sequence > 0 && c.sequence >= mine[c.communicator].first) mine[c.communicator] = {c.sequence, c.enter_unix_ns};
    for (const auto& [comm, v] : mine) furthest[comm].push_back(v);
  }
  std::optional<std::pair<uint64_t, uint64_t>> best;
  int64_t best_entered = 0;
  for (const auto& [comm, v] : furthest) {
    auto lo = std::min_element(v.begin(), v.end()), hi = std::max_element(v.begin(), v.end());
    // A communicator some dumped processes never used counts as behind too.
    const bool behind = lo->first < hi->first || v.size() < dumps.size();
    if (behind && hi->first > 0 && (!best || hi->second > best_entered)) best = {{comm, hi->first}}, best_entered = hi->second;
  }
  *split = best.has_value();
  if (best) return best;
  for (const auto& d : dumps)
    for (const auto& c : d.collectives)
      if (c.leave_unix_ns == 0 && c.sequence > 0) return {{c.communicator, c.sequence}};
  return std::nullopt;
}

}  // namespace

std::string rank_list(std::vector<int32_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  return fmt::format("rank{} {}", ranks.size() == 1 ? "" : "s", trace::integer_ranges(ranks, ", "));
}

HangReport find_hang(const std::vector<trace::HangDump>& dumps) {
  HangReport h;
  h.dumps = dumps.size();
  if (dumps.empty()) return h;
  for (const auto& d : dumps)
    if (std::find(h.reasons.begin(), h.reasons.end(), d.reason) == h.reasons.end()) h.reasons.push_back(d.reason);
  std::vector<trace::HangDump> recorded;
  for (const auto& d : dumps)
    if (d.collectives_recorded) recorded.push_back(d);
  bool split = false;
  const auto stuck = stopped_at(recorded, &split);
  std::vector<const trace::HangDump*> by_rank;
  for (const auto& d : dumps) by_rank.push_back(&d);
  std::sort(by_rank.begin(), by_rank.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  std::vector<int32_t> waiting;
  std::vector<std::string> behind;
  bool any_inside = false;
  for (const auto* d : by_rank) {
    HangProcess p{d->rank, d->host, d->pid, "", last_of(*d), python_of(*d), d->python_note};
    const std::string in_python = p.python.empty() ? "" : " (Python: " + p.python + ")";
    if (!d->collectives_recorded) {
      p.state = "no collectives recorded";
    } else if (!stuck) {
      p.state = "not in a collective";
    } else {
      uint64_t furthest = 0;  // the highest sequence this process entered on the communicator
      for (const auto& c : d->collectives)
        if (c.communicator == stuck->first) {
          furthest = std::max(furthest, c.sequence);
          if (c.sequence == stuck->second) {
            h.op = c.op;
            any_inside |= c.leave_unix_ns == 0;
          }
        }
      p.state = furthest == stuck->second ? "waiting" : furthest < stuck->second ? "not entered" : "past it";
      if (furthest == stuck->second) waiting.push_back(d->rank);
      else if (furthest < stuck->second)
        behind.push_back(fmt::format("{} never entered it and was last in {}{}", rank_list({d->rank}), p.last, in_python));
    }
    h.processes.push_back(std::move(p));
  }
  if (stuck) {
    h.in_collective = true;
    h.communicator = stuck->first;
    h.sequence = stuck->second;
    h.text = fmt::format("hung: {} wait{} in {} #{} of communicator {:#x}", rank_list(waiting),
                         waiting.size() == 1 ? "s" : "", trace::to_string(h.op), h.sequence, h.communicator);
    for (const auto& b : behind) h.text += "; " + b;
    if (!split) h.text += any_inside ? " (every rank with a dump is inside the call)" : "";
  } else if (recorded.empty()) {
    h.text = "no collectives recorded (NVTX went to CUPTI: profile with --hang-after); last iterations: ";
    for (size_t i = 0; i < h.processes.size(); ++i)
      h.text += (i ? "; " : "") + rank_list({h.processes[i].rank}) + " " + h.processes[i].last +
                (h.processes[i].python.empty() ? "" : " (Python: " + h.processes[i].python + ")");
  } else {
    h.text = "stopped with every rank at the same collective count and none inside a call: ";
    for (size_t i = 0; i < h.processes.size(); ++i)
      h.text += (i ? "; " : "") + rank_list({h.processes[i].rank}) + " last in " + h.processes[i].last +
                (h.processes[i].python.empty() ? "" : " (Python: " + h.processes[i].python + ")");
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
