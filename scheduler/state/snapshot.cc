// Snapshot lookups and the sorted node list.
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
  return it->second.get();
}

void Snapshot::RebuildList() {
  list_.clear();
  for (auto& [name, info] : infos_) {
    if (info->node() != nullptr) list_.push_back(info.get());
  }
  std::sort(list_.begin(), list_.end(),
            [](const NodeInfo* a, const NodeInfo* b) { return a->name() < b->name(); });
}

}  // namespace tessel
