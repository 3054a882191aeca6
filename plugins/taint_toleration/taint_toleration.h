// TaintToleration (Filter, Score): a node with a NoSchedule or NoExecute taint the pod does not
// tolerate is filtered out; among the rest, nodes with fewer untolerated PreferNoSchedule
// taints score higher.
#pragma once

#include "scheduler/framework/node_local.h"
#include "scheduler/framework/registry.h"

namespace tessel::taint_toleration {

class TaintToleration final : public FilterPlugin, public ScorePlugin, public NodeLocalPlugin {
 public:
  static constexpr std::string_view kName = "TaintToleration";
  static absl::StatusOr<std::unique_ptr<TaintToleration>> New(Handle& handle);  // takes no args
  std::string_view Name() const override { return kName; }
  uint32_t EventsToRegister() const override { return kNodeAdd | kNodeUpdate; }
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  ScoreResult Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  Status NormalizeScore(const CycleState& state, const Pod& pod, NodeScoreList& scores) const override;
  bool AppendFilterKey(const CycleState&, const Pod& pod, std::string& key) const override {
    AppendTolerations(pod.tolerations, key);
    return true;
  }
  ScoreUse AppendScoreKey(const CycleState&, const Pod& pod, std::string& key) const override {
    AppendTolerations(pod.tolerations, key);
    return ScoreUse::kNodeLocal;  // max-scaled: a function of the highest raw score
  }
};

}  // namespace tessel::taint_toleration
