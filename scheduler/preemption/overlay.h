// Plans over the snapshot without copying it: node copies made on first change (NodeOverlay),
// and the log of pods taken out and put in (PlanLog) that brings a pod's cycle state in step
// with them through the PreFilter extensions. Gang preemption and moves (consolidation) plan
// member after member, or pod after pod, on them.
//
//   NodeOverlay overlay(&snapshot);
//   overlay.Mutable(victim->node_name).RemovePod(victim->Key());
//   log.changes.push_back({false, victim});
//   log.Replay(fw, state_of_next_pod, next_pod, overlay.Lookup());
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduler/framework/framework.h"
#include "scheduler/state/snapshot.h"
#include "scheduler/util/strings.h"

namespace tessel::preemption {

using NodeLookup = std::function<const NodeInfo*(std::string_view)>;

// How full a node is, fuller first when compared: the fewest free GPU milli, then the least free
// CPU. A pod a plan places again (a gang member, a moved pod) takes the fullest node that fits
// it, so plans pack rather than open empty nodes.
inline std::pair<int64_t, int64_t> Fullness(const NodeInfo& n) {
  return {n.gpus().total_free_milli(), n.FreeMilliCpu()};
}

// A pod's cycle state as the plan left the cluster: the pods taken out gone, the pods placed so
// far present (the PreFilter extensions see the change as the node copies do).
struct PlanLog {
  struct Change {
    bool add;
    PodRef pod;
  };
  std::vector<Change> changes;
  bool Replay(const Framework& fw, CycleState& s, const Pod& member, const NodeLookup& lookup) const {
    for (const Change& c : changes) {
      const NodeInfo* where = lookup(c.pod->node_name);
      if (where == nullptr) continue;
      Status st = c.add ? fw.RunPreFilterExtensionAddPod(s, member, *c.pod, *where)
                        : fw.RunPreFilterExtensionRemovePod(s, member, *c.pod, *where);
      if (!st.ok()) return false;
    }
    return true;
  }
};

// Copy-on-write node copies over the snapshot.
class NodeOverlay {
 public:
  explicit NodeOverlay(const Snapshot* snapshot) : snapshot_(snapshot) {}
  const NodeInfo* Get(std::string_view name) const {
    auto it = changed_.find(name);
    return it != changed_.end() ? &it->second : snapshot_->Get(name);
  }
  NodeInfo& Mutable(const std::string& name) {
    auto it = changed_.find(name);
    if (it == changed_.end()) it = changed_.emplace(name, *snapshot_->Get(name)).first;
    return it->second;
  }
  NodeLookup Lookup() const {
    return [this](std::string_view name) { return Get(name); };
  }

 private:
  const Snapshot* snapshot_;
  StringKeyedMap<NodeInfo> changed_;
};

}  // namespace tessel::preemption
