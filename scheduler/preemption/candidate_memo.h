// Preemption's dry-run answers, kept between attempts while nothing they read has changed.
//
// When demand exceeds the cluster, preemptors of a few shapes and priorities ask the same
// question of the same nodes again and again: which pods on this node must go for me to fit?
// A dry run (preemption.cc's SelectVictims) reads
//   - of the preemptor: what its Filters read (Framework::AppendNodeLocalFilterKey, when every
//     active Filter is node-local) and its priority, provided every victim policy defers on it
//     (Framework::VictimPoliciesDeferEvery: then the priority rule alone picks the victims);
//   - of the cluster: the node (its generation moves with every change to it), the pods
//     nominated there (a version per node, Nominations::VersionOf) and the PodDisruptionBudgets.
// Those make the key of a table (the preemptor's part and the budgets) and the stamp of a slot
// (the node's part). An answer that read more, a gang member's mates on other nodes or a
// PriorityClass looked up for a pod without spec.priority, is not kept, nor one for a node
// where the preemptor is nominated itself (it does not count itself there).
//
//   CandidateMemo::Table& t = memo.For(key);
//   if (const auto* kept = t.Find(node, nominations.VersionOf(node.name()))) return *kept;
//   t.Keep(node, version, answer);
//
// The differential test (tests/unit/decision_cache_test.cc) compares every preemption with the
// reference mode, which keeps nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/framework/interface.h"
#include "scheduler/state/node_info.h"

namespace tessel::preemption {

struct Candidate {
  std::string node;
  // Victims on the node, then the gang mates of those victims running elsewhere; most
  // important first.
  std::vector<PreemptionVictim> victims;
  int64_t pdb_violations = 0;
};

class CandidateMemo {
 public:
  // Tables kept; the least recently used goes beyond this.
  static constexpr size_t kMaxTables = 32;

  class Table {
   public:
    // The answer kept for `node` (nullopt inside: no candidate there), or null when none is kept
    // for the node as it is now.
    const std::optional<Candidate>* Find(const NodeInfo& node, uint64_t nominations) const;
    void Keep(const NodeInfo& node, uint64_t nominations, const std::optional<Candidate>& answer);

   private:
    friend class CandidateMemo;
    struct Slot {
      int64_t generation = 0;
      uint64_t nominations = 0;
      std::optional<Candidate> answer;
    };
    StringKeyedMap<Slot> slots_;
    uint64_t last_used_ = 0;
  };

  // The table for `key`; `nodes` (the snapshot's size) bounds it: a table that outgrew twice
  // that (nodes came and went) starts again.
  Table& For(std::string_view key, size_t nodes);

  struct Stats {
    int64_t kept = 0;    // answers taken from a table
    int64_t missed = 0;  // dry runs made where a table was asked
  };
  Stats stats() const { return stats_; }
  void Count(bool kept) { ++(kept ? stats_.kept : stats_.missed); }

 private:
  StringKeyedMap<std::unique_ptr<Table>> tables_;
  uint64_t clock_ = 0;
  Stats stats_;
};

}  // namespace tessel::preemption
