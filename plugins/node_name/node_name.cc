#include "plugins/node_name/node_name.h"

namespace tessel::node_name {

absl::StatusOr<std::unique_ptr<NodeName>> NodeName::New(Handle&) {
  return std::make_unique<NodeName>();
}

Status NodeName::Filter(const CycleState&, const Pod& pod, const NodeInfo& node) const {
  if (pod.node_name.empty() || pod.node_name == node.name()) return Status::Ok();
  return Status::Unresolvable(std::string(kReason));
}

}  // namespace tessel::node_name
