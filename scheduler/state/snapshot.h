// A point-in-time copy of the cluster for one scheduling cycle. Plugins read it (and only it)
// during Filter and Score. Cache::UpdateSnapshot refreshes it incrementally: only nodes whose
// generation moved since the last refresh are copied, as in kube-scheduler.
//
//   Snapshot snap;
//   cache.UpdateSnapshot(snap);
//   for (const NodeInfo* n : snap.nodes()) ...
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "scheduler/util/strings.h"
#include "scheduler/state/node_info.h"

namespace tessel {

class Snapshot {
 public:
  // Nodes that have a Node object, sorted by name.
  const std::vector<NodeInfo*>& nodes() const { return list_; }
  const NodeInfo* Get(std::string_view name) const;
  // For in-cycle "what if" changes (preemption, gangs); the next UpdateSnapshot repairs them.
  NodeInfo* GetMutable(std::string_view name);
  int64_t generation() const { return generation_; }
  size_t size() const { return list_.size(); }

 private:
  friend class Cache;
  void RebuildList();

  StringKeyedMap<std::unique_ptr<NodeInfo>> infos_;
  std::vector<NodeInfo*> list_;
  int64_t generation_ = 0;
};

}  // namespace tessel
