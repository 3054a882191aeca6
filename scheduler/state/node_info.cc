// NodeInfo bookkeeping: pods in, pods out, requests summed.
#include "scheduler/state/node_info.h"

namespace tessel {

const Resources& NodeInfo::allocatable() const {
  static const Resources kNone;
  return node_ ? node_->allocatable : kNone;
}

Resources NodeInfo::Free() const {
  Resources free = allocatable();
  free.Sub(requested_);
  return free;
}

Resources NodeInfo::Room() const {
  Resources room = Free();
  gpu::AddGpuRoom(gpus_, room);
  return room;
}

void NodeInfo::SetNode(NodeRef node) {
  if (node) name_ = node->name();
  node_ = std::move(node);
  gpu::GpuInventory inventory = node_ ? gpu::ReadGpuInventory(*node_) : gpu::GpuInventory{};
  if (inventory == gpus_.inventory() && gpus_.count() == inventory.count) return;
  // The devices changed: account every pod again on the new inventory.
  gpus_.SetInventory(std::move(inventory));
  for (const PodRef& p : pods_) gpus_.AddPod(p.get());
}

void NodeInfo::AddPod(PodRef pod) {
  // Requests were checked for overflow at decode time; a node's sum stays far below int64.
  (void)requested_.Add(pod->requests);
  gpus_.AddPod(pod.get());
  pods_with_affinity_ += !pod->pod_affinity.empty() || !pod->pod_anti_affinity.empty();
  pods_with_required_anti_affinity_ += !pod->pod_anti_affinity.required.empty();
  pods_.push_back(std::move(pod));
}

bool NodeInfo::RemovePod(std::string_view key) {
  for (auto it = pods_.begin(); it != pods_.end(); ++it) {
    if ((*it)->HasKey(key)) {
      requested_.Sub((*it)->requests);
      gpus_.RemovePod(it->get());
      pods_with_affinity_ -= !(*it)->pod_affinity.empty() || !(*it)->pod_anti_affinity.empty();
      pods_with_required_anti_affinity_ -= !(*it)->pod_anti_affinity.required.empty();
      pods_.erase(it);
      return true;
    }
  }
  return false;
}

const Pod* NodeInfo::FindPod(std::string_view key) const {
  for (const PodRef& p : pods_) {
    if (p->HasKey(key)) return p.get();
  }
  return nullptr;
}

}  // namespace tessel
