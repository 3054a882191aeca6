#include "plugins/node_name/node_name.h"

#include "scheduler/framework/plugin_util.h"

namespace tessel::node_name {

absl::StatusOr<std::unique_ptr<NodeName>> NodeName::New(const YAML::Node& args, Handle&) {
  if (absl::Status st = ArgsReader(args).OnlyKeys({}); !st.ok()) return st;
  return std::make_unique<NodeName>();
}

Status NodeName::Filter(const CycleState&, const Pod& pod, const NodeInfo& node) const {
  if (pod.node_name.empty() || pod.node_name == node.name()) return Status::Ok();
  return Status::Unresolvable(std::string(kReason));
}

}  // namespace tessel::node_name
