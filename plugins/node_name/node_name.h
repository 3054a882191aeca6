// NodeName (Filter): a pod that names a node in spec.nodeName fits only that node.
#pragma once

#include "scheduler/framework/node_local.h"
#include "scheduler/framework/registry.h"

namespace tessel::node_name {

inline constexpr std::string_view kReason = "node(s) didn't match the requested node name";

class NodeName final : public FilterPlugin, public NodeLocalPlugin {
 public:
  static constexpr std::string_view kName = "NodeName";
  static absl::StatusOr<std::unique_ptr<NodeName>> New(Handle& handle);  // takes no args
  std::string_view Name() const override { return kName; }
  uint32_t EventsToRegister() const override { return kNodeAdd; }
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  bool AppendFilterKey(const CycleState&, const Pod& pod, std::string& key) const override {
    AppendKeyString(pod.node_name, key);
    return true;
  }
};

}  // namespace tessel::node_name
