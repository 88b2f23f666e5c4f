#pragma once
// The exact median of a stream of durations in two passes over the rows,
// without holding them (the chunked engine's kernel and launch medians).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "base/error.hpp"

namespace scalescope::analyze::detail {

// The exact median of durations (>= 0) in two passes, as trace::median_in_place
// gives it: count() every value, choose(), collect() every value again, median().
// Buckets keep a value's top 13 significant bits (values below 4096 exactly),
// so the middle rank's bucket holds at most value/4096 distinct values.
class TwoPassMedian {
 public:
  static size_t bucket(int64_t d) {
    const auto u = static_cast<uint64_t>(d);
    if (u < 4096) return static_cast<size_t>(u);
    const int e = 63 - std::countl_zero(u);  // 12 or more
    return 4096 + static_cast<size_t>(e - 12) * 4096 + static_cast<size_t>((u >> (e - 12)) & 4095);
  }
  void count(int64_t d) {
    const size_t b = bucket(d);
    if (b >= counts_.size()) counts_.resize(b + 1, 0);
    ++counts_[b];
    ++n_;
  }
  void choose() {
    if (n_ == 0) return;
    const uint64_t hi = n_ / 2;
    want_[1] = locate(hi);
    want_[0] = n_ % 2 ? want_[1] : locate(hi - 1);
  }
  void collect(int64_t d) {
    if (n_ == 0) return;
    const size_t b = bucket(d);
    for (Want& w : want_)
      if (w.bucket == b) {
        ++w.values[d];
        return;  // both ranks in one bucket share its values
      }
  }
  double median() const {
    if (n_ == 0) return 0;
    const double hi = static_cast<double>(value(want_[1]));
    if (n_ % 2 == 1) return hi;
    const double lo = static_cast<double>(value(want_[0]));
    return lo == hi ? lo : lo + (hi - lo) * 0.5;
  }

 private:
  struct Want {
    size_t bucket = std::numeric_limits<size_t>::max();
    uint64_t offset = 0;                 // the rank within its bucket
    std::map<int64_t, uint64_t> values;  // filled by collect()
  };
  Want locate(uint64_t rank) const {
    uint64_t before = 0;
    for (size_t b = 0; b < counts_.size(); ++b) {
      if (before + counts_[b] > rank) return Want{b, rank - before, {}};
      before += counts_[b];
    }
    return Want{};
  }
  int64_t value(const Want& w) const {
    // Both ranks in one bucket: the lower rank's values were collected into want_[0] or [1].
    const auto& values =
        w.values.empty() ? (want_[0].bucket == w.bucket ? want_[0].values : want_[1].values) : w.values;
    uint64_t seen = 0;
    for (const auto& [v, n] : values) {
      seen += n;
      if (seen > w.offset) return v;
    }
    fail("streaming median: the second pass saw fewer values than the first (the file changed?)");
  }

  std::vector<uint64_t> counts_;
  uint64_t n_ = 0;
  Want want_[2];
};

}  // namespace scalescope::analyze::detail
