#include "plugins/node_ports/node_ports.h"

namespace tessel::node_ports {

bool PortsConflict(const HostPort& wanted, const HostPort& used) {
  if (wanted.port <= 0 || wanted.port != used.port || wanted.protocol != used.protocol) return false;
  // "" is 0.0.0.0: every address.
  return wanted.host_ip.empty() || used.host_ip.empty() || wanted.host_ip == used.host_ip;
}

absl::StatusOr<std::unique_ptr<NodePorts>> NodePorts::New(Handle&) {
  return std::make_unique<NodePorts>();
}

Status NodePorts::PreFilter(CycleState& state, const Pod& pod) {
  std::vector<HostPort> ports = PodHostPorts(pod);
  if (ports.empty()) return Status::Skip();
  state.WriteValue(kName, std::move(ports));
  return Status::Ok();
}

Status NodePorts::Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  const auto* wanted = state.ReadValue<std::vector<HostPort>>(kName);
  std::vector<HostPort> own;
  if (wanted == nullptr) {  // a profile that filters without the PreFilter
    own = PodHostPorts(pod);
    wanted = &own;
  }
  for (const PodRef& existing : node.pods()) {
    for (const HostPort& used : PodHostPorts(*existing)) {
      for (const HostPort& w : *wanted) {
        if (PortsConflict(w, used)) return Status::Unschedulable(std::string(kReason));
      }
    }
  }
  return Status::Ok();
}

}  // namespace tessel::node_ports
