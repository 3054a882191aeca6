#include "plugins/node_unschedulable/node_unschedulable.h"

namespace tessel::node_unschedulable {

absl::StatusOr<std::unique_ptr<NodeUnschedulable>> NodeUnschedulable::New(Handle&) {
  return std::make_unique<NodeUnschedulable>();
}

Status NodeUnschedulable::Filter(const CycleState&, const Pod& pod, const NodeInfo& info) const {
  // Built once: a Taint holds strings, and Filter runs for every node.
  static const Taint kUnschedulable{.key = "node.kubernetes.io/unschedulable",
                                    .effect = TaintEffect::kNoSchedule};
  static const Taint kNotReady{.key = "node.kubernetes.io/not-ready", .effect = TaintEffect::kNoSchedule};
  const Node& node = *info.node();
  if (node.unschedulable && !ToleratesTaint(pod.tolerations, kUnschedulable)) {
    return Status::Unresolvable(std::string(kUnschedulableReason));
  }
  if (node.ready != ConditionStatus::kTrue && !ToleratesTaint(pod.tolerations, kNotReady)) {
    return Status::Unresolvable(std::string(kNotReadyReason));
  }
  return Status::Ok();
}

}  // namespace tessel::node_unschedulable
