// Which nodes preemption needs to look at, kept in step with the snapshot's change log, so that
// a pod that fits nowhere and outranks nobody is answered without walking the cluster.
//
// For each node of the snapshot the index keeps what decides whether a dry run could find
// anything there (preemption.h: a node with no pod the preemptor may evict and no terminating
// pod is no candidate): the lowest spec.priority among its running, non-terminating pods, whether
// any of those has no spec.priority yet (its PriorityClass arrived after it: its priority is
// resolved at use and only bounded here by the caller's floor), and whether any pod there is
// terminating (its room counts free in the dry run). Nodes are grouped by their lowest priority,
// so the nodes worth a dry run for a preemptor of priority P are found without visiting the
// others; a preemptor that outranks every running pod of the cluster's nowhere is answered in
// O(1). Sync costs O(pods on the nodes that changed).
//
//   VictimIndex index;
//   index.Sync(snapshot);
//   if (!index.MayHaveVictims({.priority = p, .floor = f})) return {};
//   index.ForEachFrom(offset, {.priority = p, .floor = f}, [&](uint32_t pos) { ...; return true; });
//
// The index reads each pod's spec.priority only: no per-pod key, no priority lookup by name.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "scheduler/state/snapshot.h"

namespace tessel::preemption {

class VictimIndex {
 public:
  // What the preemptor could evict.
  struct Query {
    int32_t priority = 0;  // the preemptor's: pods below it are victims by priority
    // No pod without spec.priority has a priority below this (Handle::PriorityFloor).
    int32_t floor = std::numeric_limits<int32_t>::min();
    // A victim policy may allow pods at or above `priority` (queue reclaim): every node counts.
    bool any_priority = false;
  };

  // Brings the index up to the snapshot: the nodes in its change log since the last Sync, or
  // every node when the log restarted (nodes came or went).
  void Sync(const Snapshot& snapshot);

  // Whether the index describes this snapshot as it is now (Sync ran since its last change).
  bool InStepWith(const Snapshot& snapshot) const {
    return log_.InStepWith(snapshot) && nodes_.size() == snapshot.size();
  }
  // False when no node of the snapshot can be a candidate for the query (O(1)).
  bool MayHaveVictims(const Query& q) const;
  // Calls `visit` with the position in snapshot.nodes() of every node that may be a candidate,
  // starting at position `offset` and wrapping around, in position order; stops when `visit`
  // returns false.
  void ForEachFrom(uint32_t offset, const Query& q, const std::function<bool(uint32_t)>& visit) const;
  // Nodes that may be candidates (for tests and the bench's counters).
  size_t CountFor(const Query& q) const;

 private:
  static constexpr int32_t kNone = std::numeric_limits<int32_t>::max();
  struct NodeSummary {
    int64_t generation = std::numeric_limits<int64_t>::min();
    int32_t lowest = kNone;  // lowest spec.priority among non-terminating pods
    bool unresolved = false; // a non-terminating pod without spec.priority
    bool terminating = false;
  };
  void Set(uint32_t pos, const NodeSummary& s);
  void Clear(uint32_t pos);
  // The marked positions for a query, one bit each.
  std::vector<uint64_t> Marks(const Query& q) const;

  ChangeLogReader log_;
  std::vector<NodeSummary> nodes_;
  std::map<int32_t, std::set<uint32_t>> by_lowest_;
  std::set<uint32_t> unresolved_;
  std::set<uint32_t> terminating_;
};

}  // namespace tessel::preemption
