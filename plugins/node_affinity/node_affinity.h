// NodeAffinity (Filter, Score): the pod's nodeSelector and required node affinity terms must
// match the node's labels; preferred terms add their weights to the node's score (normalised so
// the best node scores 100).
#pragma once

#include "scheduler/framework/node_local.h"
#include "scheduler/framework/registry.h"

namespace tessel::node_affinity {

inline constexpr std::string_view kReason = "node(s) didn't match Pod's node affinity/selector";

class NodeAffinity final : public FilterPlugin, public ScorePlugin, public NodeLocalPlugin {
 public:
  static constexpr std::string_view kName = "NodeAffinity";
  static absl::StatusOr<std::unique_ptr<NodeAffinity>> New(Handle& handle);  // takes no args
  std::string_view Name() const override { return kName; }
  uint32_t EventsToRegister() const override { return kNodeAdd | kNodeUpdate; }
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  ScoreResult Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  Status NormalizeScore(const CycleState& state, const Pod& pod, NodeScoreList& scores) const override;
  bool AppendFilterKey(const CycleState&, const Pod& pod, std::string& key) const override {
    AppendNodeSelection(pod, key);
    return true;
  }
  ScoreUse AppendScoreKey(const CycleState&, const Pod& pod, std::string& key) const override {
    AppendNodeSelection(pod, key);
    return ScoreUse::kNodeLocal;  // max-scaled: a function of the highest raw score
  }
};

}  // namespace tessel::node_affinity
