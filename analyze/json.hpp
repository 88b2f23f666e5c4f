#pragma once
// The analyses as JSON (nlohmann::json; json.cpp).

#include <nlohmann/json_fwd.hpp>

#include "analyze/diff.hpp"
#include "analyze/run_analysis.hpp"

namespace scalescope::analyze {

void to_json(nlohmann::json& j, const Availability& v);
void to_json(nlohmann::json& j, const RankBreakdown& v);
void to_json(nlohmann::json& j, const IterationStats& v);
void to_json(nlohmann::json& j, const LaunchStats& v);
void to_json(nlohmann::json& j, const CopyStats& v);
void to_json(nlohmann::json& j, const SyncStats& v);
void to_json(nlohmann::json& j, const PrecisionStats& v);
void to_json(nlohmann::json& j, const LayoutStats& v);
void to_json(nlohmann::json& j, const NcclOpStats& v);
void to_json(nlohmann::json& j, const InputStats& v);
void to_json(nlohmann::json& j, const ProfilerPerturbation& v);
void to_json(nlohmann::json& j, const JobFacts& v);
void to_json(nlohmann::json& j, const IdleCover& v);
void to_json(nlohmann::json& j, const IdleBreakdown& v);
void to_json(nlohmann::json& j, const NumaStats& v);
void to_json(nlohmann::json& j, const GpuClockStats& v);
void to_json(nlohmann::json& j, const HostShares& v);
void to_json(nlohmann::json& j, const HostStats& v);
void to_json(nlohmann::json& j, const PythonHotFrame& v);
void to_json(nlohmann::json& j, const PythonFrames& v);
void to_json(nlohmann::json& j, const KernelSummary& v);
void to_json(nlohmann::json& j, const AttributionRow& v);
void to_json(nlohmann::json& j, const Attribution& v);
void to_json(nlohmann::json& j, const RankAnalysis& v);
void to_json(nlohmann::json& j, const StragglerStats& v);
void to_json(nlohmann::json& j, const NodeStats& v);
void to_json(nlohmann::json& j, const HangReport& v);
void to_json(nlohmann::json& j, const RunAnalysis& v);
void to_json(nlohmann::json& j, const Delta& v);
void to_json(nlohmann::json& j, const RunDiff& v);

}  // namespace scalescope::analyze
