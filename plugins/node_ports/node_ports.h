// NodePorts (PreFilter, Filter): a pod that binds host ports fits a node only if none of the
// node's pods already binds the same (protocol, port) on the same address, as kube-scheduler's
// NodePorts. hostIP 0.0.0.0 (or unset) binds every address, so it conflicts with that port on
// any address, and any address conflicts with it. Protocol defaults to TCP; TCP 80 and UDP 80
// do not conflict.
//
// PreFilter collects the pod's ports once (Skip when it has none); Filter compares them with
// the host ports of the pods on the node, read from the snapshot.
#pragma once

#include <vector>

#include "scheduler/framework/registry.h"

namespace tessel::node_ports {

inline constexpr std::string_view kReason = "node(s) didn't have free ports for the requested pod ports";

// Whether binding `wanted` conflicts with an already bound port (kube's HostPortInfo rule).
bool PortsConflict(const HostPort& wanted, const HostPort& used);

class NodePorts final : public PreFilterPlugin, public FilterPlugin {
 public:
  static constexpr std::string_view kName = "NodePorts";
  static absl::StatusOr<std::unique_ptr<NodePorts>> New(Handle& handle);  // takes no args
  std::string_view Name() const override { return kName; }
  // Ports are freed when a pod leaves a node; a new node has all its ports free. A node update
  // frees nothing, but kube-scheduler retries on it too, so a pod never waits on a stale view.
  uint32_t EventsToRegister() const override { return kAssignedPodDelete | kNodeAdd | kNodeUpdate; }
  Status PreFilter(CycleState& state, const Pod& pod) override;
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
};

}  // namespace tessel::node_ports
