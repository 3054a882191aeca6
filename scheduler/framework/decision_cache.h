// Incremental decisions with the same answers as evaluating every node.
//
// Between two cycles only a few nodes change: the one chosen last, plus what the informers
// changed. For each pod shape (the parts of a pod that the profile's Filter and Score plugins
// read, as they declare through NodeLocalPlugin) the cache keeps, per node of the snapshot, the
// generation it last evaluated, and groups the feasible nodes into buckets of equal raw score
// vectors (one raw score per Score plugin). A cycle then
//   1. re-evaluates only the nodes in the snapshot's change log since the shape's last cycle
//      (every node when the log restarted or a plugin's ResultVersion moved);
//   2. runs PreScore, normalises each Score plugin over the buckets' raw scores (one entry per
//      bucket: NodeLocalPlugin promises that normalisation depends on the set of raw scores
//      only), and sums the weighted scores per bucket;
//   3. takes the best bucket and its first node in name order (a min-heap per bucket), which is
//      the node a full evaluation picks: the highest total, ties to the first node by name.
// The first rejecting Filter's Status is kept per infeasible node too (one copy per distinct
// rejection, with the number of nodes that gave it), so a pod that fits nowhere is answered with
// every node's rejection, as the full evaluation would give them, and their histogram, without
// filtering again or walking the nodes.
// Cycles for which a plugin is not node-local (pod affinity, spread constraints, host ports, a
// random policy) are left to the full evaluation;
// FrameworkOptions::reference turns the cache off, and the differential test compares the two.
//
// Nothing here allocates once the buffers have grown: keys are built in a reused string, raw
// vectors are fixed arrays, heaps keep their capacity.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "scheduler/framework/interface.h"
#include "scheduler/framework/node_local.h"
#include "scheduler/framework/parallel.h"

namespace tessel {

class DecisionCache {
 public:
  struct FilterRef {
    const FilterPlugin* plugin;
    const NodeLocalPlugin* local;  // null: not cacheable
  };
  struct ScoreRef {
    const ScorePlugin* plugin;
    int64_t weight;
    const NodeLocalPlugin* local;
  };
  struct PreScoreRef {
    PreScorePlugin* plugin;
    const NodeLocalPlugin* local;
  };
  // The profile's plugins, and the framework's PreScore and Score runs.
  struct Profile {
    std::vector<FilterRef> filters;
    std::vector<ScoreRef> scores;
    std::vector<PreScoreRef> pre_scores;
    std::function<Status(CycleState&, const Pod&, const std::vector<const NodeInfo*>&)> run_pre_score;
    std::function<absl::StatusOr<NodeScoreList>(const CycleState&, const Pod&,
                                                const std::vector<const NodeInfo*>&)> run_score;
  };

  struct Choice {
    enum class Kind {
      kFallback,  // not decided here: evaluate every node (nothing was run past PreFilter)
      kChosen,
      kNoFit,     // no node fits; `rejected` holds every node's rejection, as Filter gave it
      kError,     // PreScore or Score failed; `error` says why, as a full evaluation would
    };
    Kind kind = Kind::kFallback;
    const NodeInfo* node = nullptr;
    absl::Status error;
    // kNoFit: every node's rejection by name, kept in step by the cache (valid until its next
    // Choose).
    const NodeStatusMap* rejected = nullptr;
    // kNoFit: each distinct rejection with the number of nodes that gave it, kept in step as
    // nodes are evaluated again (valid until the next Choose).
    const std::vector<NodeRejections>* histogram = nullptr;
  };

  // The most pod shapes kept; the least recently used is dropped beyond it. A backlog cycles
  // through its shapes: when it holds more shapes than this, every retry rebuilds a dropped
  // entry over all nodes (openb's 151 shapes at 64 spent 85 % of a contended trace run there).
  static constexpr size_t kMaxShapes = 256;
  // Score plugins a cached profile may have.
  static constexpr size_t kMaxColumns = 12;

  DecisionCache(Profile profile, Parallelizer* parallelizer);
  ~DecisionCache();

  // Nodes whose room pods nominated there hold. A full evaluation with nominations keeps a node
  // only if it fits as it is and with those pods, and reports its rejection as it is first; a
  // held node that fits as it is is asked `fits_held` and sits out the choice when that says
  // no (with the rejection `why_held` gives, when no node is left).
  // With `reuse`, `fits_held`'s verdict is kept per shape and node, and holds while the node's
  // generation, its `versions` entry (of its nominated pods) and `priority` (of the pod, which
  // decides which of them go first) are the same. (Not for a pod nominated itself: it does not
  // count itself.)
  struct HeldNodes {
    std::vector<int64_t> positions;  // in the snapshot's nodes()
    std::vector<uint64_t> versions;  // per position
    std::function<bool(const NodeInfo&)> fits_held;
    std::function<Status(const NodeInfo&)> why_held;
    bool reuse = false;
    int32_t priority = 0;
  };

  // After PreFilter: chooses the node a full evaluation would choose, or says it did not. With
  // `tier`, among the nodes of that tier alone (node_tiers.h InTier): the choice the full
  // evaluation makes when it is the pod's first tier with a feasible node; kNoFit then says that
  // no node of the tier fits (the others' rejections say only that they are in another tier).
  Choice Choose(CycleState& state, const Pod& pod, const Snapshot& snapshot, const HeldNodes* held = nullptr,
                std::optional<int64_t> tier = std::nullopt);

  struct Stats {
    int64_t answered = 0;   // cycles decided here with a node
    int64_t fallbacks = 0;  // cycles left to the full evaluation
    size_t shapes = 0;      // pod shapes held
    int64_t no_fit = 0;     // cycles answered here with every node's rejection
    int64_t with_held = 0;  // cycles answered here while pods were nominated (HeldNodes given)
    int64_t held_out = 0;   // of those, cycles where a held node sat out
    int64_t held_reused = 0;  // held nodes' verdicts taken from an earlier cycle
  };
  Stats stats() const {
    return {answered_, fallbacks_, entries_.size(), no_fit_, with_held_, held_out_, held_reused_};
  }

 private:
  using Raw = std::array<int64_t, kMaxColumns>;
  struct Bucket {
    Raw raw{};
    int32_t count = 0;
    std::vector<int32_t> heap;  // node positions, min first; stale entries are skipped lazily
  };
  struct Entry;
  // One Score plugin's raw scores for one key of that plugin (what it reads of the pod), per node
  // position, shared by every shape with that key: pods that differ only in what other plugins
  // read (tolerations, selectors) score each node once.
  struct Column {
    uint64_t last_used = 0;
    int64_t version = 0;
    std::vector<int64_t> gen;  // per node position: the generation scored (unique per change)
    std::vector<int64_t> raw;
  };
  Column& ColumnFor(std::string_view key, int64_t version, size_t nodes);

  Entry& EntryFor(std::string_view key);
  void Sync(Entry& e, const CycleState& state, const Pod& pod, const Snapshot& snapshot);
  void ResetBuckets(Entry& e);
  void Place(Entry& e, int32_t i, bool feasible, const Raw& raw, bool score_error);
  // Keeps one copy of each distinct rejection of the entry; its index.
  int32_t Intern(Entry& e, Status&& rejection);
  // Every infeasible node's rejection from the entry, by name (every node's when none fits):
  // built on the entry's first such answer, then kept in step as nodes are evaluated again. Null
  // when one is an error (the full evaluation reports it).
  const NodeStatusMap* Rejections(Entry& e, const Snapshot& snapshot) const;
  void Unplace(Entry& e, int32_t i);
  int32_t FirstNode(Entry& e, int32_t bucket);
  Choice ChooseUncounted(CycleState& state, const Pod& pod, const Snapshot& snapshot, const HeldNodes* held);
  std::optional<int64_t> tier_;  // this cycle's Choose(..., tier)
  // Whether held node `i` (fitting as it is) fits beside its nominated pods: kept per entry.
  bool FitsHeld(Entry& e, const HeldNodes& held, size_t k, int32_t i, const NodeInfo& node);
  // kNoFit: the entry's rejections, and those of the held nodes that sat out (`sat_out_`, when
  // every node that fits as it is did). Null (fallback) when one is an error.
  Choice NoFit(Entry& e, const Snapshot& snapshot, const HeldNodes* held);
  // The choice among the entry's feasible nodes (at least one).
  Choice ChooseAmongFeasible(Entry& e, CycleState& state, const Pod& pod, const Snapshot& snapshot);
  // The full scoring over the entry's feasible nodes, when the buckets cannot answer.
  Choice ScoreAll(Entry& e, CycleState& state, const Pod& pod, const Snapshot& snapshot);

  Profile profile_;
  Parallelizer* parallelizer_;
  const Snapshot* snapshot_ = nullptr;
  StringKeyedMap<std::unique_ptr<Entry>> entries_;
  StringKeyedMap<std::unique_ptr<Column>> column_memo_;
  std::vector<Column*> cycle_columns_;  // per column of this cycle's shape
  std::vector<std::string> column_keys_;  // per column of this cycle's shape
  uint64_t clock_ = 0;
  int64_t answered_ = 0;
  int64_t fallbacks_ = 0;
  int64_t no_fit_ = 0;
  int64_t with_held_ = 0;
  int64_t held_out_ = 0;
  int64_t held_reused_ = 0;
  // Reused buffers.
  std::string key_;
  std::vector<size_t> columns_;              // score plugins with a raw column, by index
  std::vector<bool> unused_;                 // score plugins expected to Skip
  std::vector<int64_t> filter_versions_;
  std::vector<int64_t> score_versions_;       // per column
  std::vector<const FilterPlugin*> active_filters_;  // not skipped this cycle
  std::vector<const NodeInfo*> feasible_;
  NodeScoreList normalized_;
  std::vector<int32_t> live_;
  std::vector<int64_t> totals_;
  std::vector<Raw> scratch_raw_;
  std::vector<uint8_t> scratch_state_;       // 0 infeasible, 1 feasible, 2 score error
  std::vector<Status> scratch_why_;          // the rejections of a full re-evaluation
  std::string rejection_key_;
  std::vector<NodeRejections> histogram_;
  struct SatOut {
    int32_t position;
    Raw raw;
    bool score_failed;
  };
  std::vector<SatOut> sat_out_;  // held nodes out of this choice, put back after it
  Entry* held_in_map_ = nullptr;  // whose rejected_by_name holds held_names_ until the next Choose
  std::vector<std::string> held_names_;
  std::vector<Status> held_why_;  // per sat-out node, in NoFit
};

}  // namespace tessel
