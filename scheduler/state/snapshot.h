// A point-in-time copy of the cluster for one scheduling cycle. Plugins read it (and only it)
// during Filter and Score. Cache::UpdateSnapshot refreshes it incrementally: only nodes whose
// generation moved since the last refresh are copied, found without walking the others, as in
// kube-scheduler.
//
//   Snapshot snap;
//   cache.UpdateSnapshot(snap);
//   for (const NodeInfo* n : snap.nodes()) ...
//
// For caches that follow it (framework/decision_cache.h) the snapshot keeps a change log: the
// positions in nodes() of the nodes copied (or changed in place through GetMutable) since the
// log began. The log restarts, with a new epoch, whenever nodes() is rebuilt (nodes came or
// went) or it grew longer than the node list; a reader whose epoch is older looks at every node.
#pragma once

#include <cstdint>
#include <map>
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
  // For in-cycle "what if" changes (preemption, gangs). The node is logged as changed and gets a
  // generation of its own, so caches keyed on generations see the change, and the next
  // UpdateSnapshot copies it again from the cache.
  NodeInfo* GetMutable(std::string_view name);
  int64_t generation() const { return generation_; }
  size_t size() const { return list_.size(); }

  // The change log (see above): positions in nodes() changed since the log's epoch began.
  uint64_t change_epoch() const { return change_epoch_; }
  const std::vector<uint32_t>& changes() const { return changes_; }
  // Position of a node in nodes(), or -1.
  int64_t PositionOf(std::string_view name) const;

  // The distinct GPU counts of the nodes with GPUs, ascending, and a version that moves when
  // they change (FGD's whole-node prior follows them without walking the nodes).
  const std::vector<int32_t>& gpu_node_sizes() const { return gpu_node_sizes_; }
  // Pods of all nodes with any pod (anti-)affinity term / a required anti-affinity term.
  int64_t pods_with_affinity() const { return pods_with_affinity_; }
  int64_t pods_with_required_anti_affinity() const { return pods_with_required_anti_affinity_; }

 private:
  friend class Cache;
  // Copies `info` in under `name`, keeping the sums above and the change log.
  void Put(const std::string& name, const NodeInfo& info);
  void Erase(std::string_view name);
  void RebuildList();
  void Count(const NodeInfo& info, int sign);
  void LogChange(std::string_view name);

  StringKeyedMap<std::unique_ptr<NodeInfo>> infos_;
  std::vector<NodeInfo*> list_;
  StringKeyedMap<uint32_t> position_;
  int64_t generation_ = 0;
  uint64_t change_epoch_ = 1;
  std::vector<uint32_t> changes_;
  std::vector<std::string> mutated_;  // changed through GetMutable: copied again next update
  int64_t mutations_ = 0;
  std::map<int32_t, int64_t> gpu_count_nodes_;  // GPU count -> nodes with it
  std::vector<int32_t> gpu_node_sizes_;
  int64_t pods_with_affinity_ = 0;
  int64_t pods_with_required_anti_affinity_ = 0;
};

// A cache of per-node values (by position in nodes()) that follows the change log. Read hands
// `visit` each position the cache has not seen since its last Read: every node, after `reset`,
// when it must start over (the log restarted, `held` (the positions the cache holds) is not the
// node count, or Restart was called), else the positions logged since.
//
//   reader.Read(snapshot, cache.size(), [&] { cache.assign(snapshot.size(), {}); },
//               [&](uint32_t pos) { Recount(pos); });
class ChangeLogReader {
 public:
  template <typename Reset, typename Visit>
  void Read(const Snapshot& snapshot, size_t held, Reset reset, Visit visit) {
    if (restart_ || epoch_ != snapshot.change_epoch() || held != snapshot.size()) {
      reset();
      for (uint32_t pos = 0; pos < snapshot.size(); ++pos) visit(pos);
    } else {
      const std::vector<uint32_t>& changes = snapshot.changes();
      for (size_t p = log_pos_; p < changes.size(); ++p) visit(changes[p]);
    }
    restart_ = false;
    epoch_ = snapshot.change_epoch();
    log_pos_ = snapshot.changes().size();
  }
  // The next Read starts over (what every value reads changed, not only the nodes).
  void Restart() { restart_ = true; }
  // Whether the last Read saw the snapshot as it is now.
  bool InStepWith(const Snapshot& snapshot) const {
    return !restart_ && epoch_ == snapshot.change_epoch() && log_pos_ == snapshot.changes().size();
  }

 private:
  uint64_t epoch_ = 0;
  size_t log_pos_ = 0;
  bool restart_ = false;
};

}  // namespace tessel
