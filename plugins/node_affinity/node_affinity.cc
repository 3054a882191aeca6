#include "plugins/node_affinity/node_affinity.h"

#include "scheduler/framework/plugin_util.h"

namespace tessel::node_affinity {

absl::StatusOr<std::unique_ptr<NodeAffinity>> NodeAffinity::New(Handle&) {
  return std::make_unique<NodeAffinity>();
}

Status NodeAffinity::Filter(const CycleState&, const Pod& pod, const NodeInfo& node) const {
  if (MatchesRequiredNodeAffinity(pod, *node.node())) return Status::Ok();
  return Status::Unresolvable(std::string(kReason));
}

ScoreResult NodeAffinity::Score(const CycleState&, const Pod& pod, const NodeInfo& node) const {
  int64_t sum = 0;
  for (const PreferredSchedulingTerm& t : pod.node_affinity.preferred) {
    if (MatchesNodeSelectorTerm(t.preference, *node.node())) sum += t.weight;
  }
  return {sum, Status::Ok()};
}

Status NodeAffinity::NormalizeScore(const CycleState&, const Pod&, NodeScoreList& scores) const {
  DefaultNormalizeScore(scores);
  return Status::Ok();
}

}  // namespace tessel::node_affinity
