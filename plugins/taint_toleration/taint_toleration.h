// TaintToleration (Filter, Score): a node with a NoSchedule or NoExecute taint the pod does not
// tolerate is filtered out; among the rest, nodes with fewer untolerated PreferNoSchedule
// taints score higher.
#pragma once

#include "scheduler/framework/registry.h"

namespace tessel::taint_toleration {

class TaintToleration final : public FilterPlugin, public ScorePlugin {
 public:
  static constexpr std::string_view kName = "TaintToleration";
  static absl::StatusOr<std::unique_ptr<TaintToleration>> New(const YAML::Node& args, Handle& handle);
  std::string_view Name() const override { return kName; }
  uint32_t EventsToRegister() const override { return kNodeAdd | kNodeUpdate; }
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  ScoreResult Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  Status NormalizeScore(const CycleState& state, const Pod& pod, NodeScoreList& scores) const override;
};

}  // namespace tessel::taint_toleration
