#pragma once
// Stragglers: which ranks arrive late at matched collectives (stragglers.cpp).

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/availability.hpp"

namespace scalescope::analyze {

struct RankAnalysis;  // rank_analysis.hpp

struct RankLateness {
  int32_t rank = -1;
  int64_t total_late_ns = 0;  // summed lateness over matched collectives
  int64_t max_late_ns = 0;
  double late_per_iteration_ns = 0;
  int64_t times_last = 0;  // collectives where this rank arrived last
  // The same over the collectives no rank reached in a warm-up iteration: one
  // wait at start-up (a slow first batch, a compile) must not outweigh a
  // steady lateness every step.
  int64_t steady_late_ns = 0;
  int64_t steady_times_last = 0;
  double steady_late_per_iteration_ns = 0;  // steady_late_ns / steady iterations
};

struct StragglerStats {
  Availability availability;
  int64_t matched_collectives = 0;
  int64_t unmatched_collectives = 0;
  int64_t total_wait_ns = 0;               // summed (latest - earliest) arrival
  int64_t steady_matched_collectives = 0;  // matched, reached by no rank in a warm-up iteration
  std::string ranked_by;                   // "steady iterations" (steady_late_ns) or "whole window" (total_late_ns)
  std::vector<RankLateness> ranks;         // latest first, by steady_late_ns where steady collectives exist
  int32_t slowest_rank = -1;               // longest median iteration
  double slowest_rank_median_ns = 0;
  double fastest_rank_median_ns = 0;
};

StragglerStats find_stragglers(const std::vector<RankAnalysis>& ranks);

}  // namespace scalescope::analyze
