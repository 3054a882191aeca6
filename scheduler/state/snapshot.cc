// Snapshot lookups, the sorted node list, the change log and the sums kept in step with copies.
#include "scheduler/state/snapshot.h"

#include <algorithm>

namespace tessel {

const NodeInfo* Snapshot::Get(std::string_view name) const {
  auto it = infos_.find(name);
  if (it == infos_.end() || it->second->node() == nullptr) return nullptr;
  return it->second.get();
}

NodeInfo* Snapshot::GetMutable(std::string_view name) {
  auto it = infos_.find(name);
  if (it == infos_.end() || it->second->node() == nullptr) return nullptr;
  // A generation no cache copy ever has (they are positive): whatever was cached for the node
  // is stale from now on.
  it->second->set_generation(-(++mutations_));
  mutated_.emplace_back(name);
  LogChange(name);
  return it->second.get();
}

int64_t Snapshot::PositionOf(std::string_view name) const {
  auto it = position_.find(name);
  return it == position_.end() ? -1 : static_cast<int64_t>(it->second);
}

void Snapshot::Count(const NodeInfo& info, int sign) {
  pods_with_affinity_ += sign * info.pods_with_affinity();
  pods_with_required_anti_affinity_ += sign * info.pods_with_required_anti_affinity();
  const int32_t gpus = info.node() != nullptr ? info.gpus().count() : 0;
  if (gpus <= 0) return;
  int64_t& n = gpu_count_nodes_[gpus];
  const bool was_present = n > 0;
  n += sign;
  const bool now_present = n > 0;
  if (n == 0) gpu_count_nodes_.erase(gpus);  // `n` dangles from here
  if (was_present != now_present) {
    gpu_node_sizes_.clear();
    for (const auto& [size, count] : gpu_count_nodes_) gpu_node_sizes_.push_back(size);
  }
}

void Snapshot::Put(const std::string& name, const NodeInfo& info) {
  auto& slot = infos_[name];
  if (!slot) {
    slot = std::make_unique<NodeInfo>();
  } else {
    Count(*slot, -1);
  }
  *slot = info;
  Count(*slot, +1);
  LogChange(name);
}

void Snapshot::Erase(std::string_view name) {
  auto it = infos_.find(name);
  if (it == infos_.end()) return;
  Count(*it->second, -1);
  infos_.erase(it);
}

void Snapshot::LogChange(std::string_view name) {
  auto it = position_.find(name);
  if (it == position_.end()) return;  // not listed (yet): the next RebuildList starts a new epoch
  if (changes_.size() >= list_.size() + 64) {
    changes_.clear();
    ++change_epoch_;
  }
  changes_.push_back(it->second);
}

void Snapshot::RebuildList() {
  list_.clear();
  for (auto& [name, info] : infos_) {
    if (info->node() != nullptr) list_.push_back(info.get());
  }
  std::sort(list_.begin(), list_.end(),
            [](const NodeInfo* a, const NodeInfo* b) { return a->name() < b->name(); });
  position_.clear();
  for (size_t i = 0; i < list_.size(); ++i) position_[list_[i]->name()] = static_cast<uint32_t>(i);
  changes_.clear();
  ++change_epoch_;
}

}  // namespace tessel
