// InterPodAffinity (PreFilter, Filter, PreScore, Score): podAffinity and podAntiAffinity, with
// kube-scheduler's semantics.
//
// Filter (required terms), from counts per topology domain computed once in PreFilter over
// every pod of the snapshot, so Filter is a few map lookups per node:
//   - affinity: every term's topologyKey is on the node and some pod matching all of the pod's
//     terms runs in the node's domain of each term. Exception: when no pod anywhere matches and
//     the pod matches its own terms, it is the first of a self-affine group and may go anywhere
//     the topology keys exist. Failing is UnschedulableAndUnresolvable (preemption frees nothing
//     that would help): "node(s) didn't match pod affinity rules".
//   - anti-affinity: no pod matching a term runs in the node's domain of that term:
//     "node(s) didn't match pod anti-affinity rules".
//   - symmetry: no existing pod whose required anti-affinity matches the incoming pod runs in
//     the node's domain of that term: "node(s) didn't satisfy existing pods anti-affinity rules".
// Score: per domain, + weight of each preferred affinity term of the pod matched by a pod there,
// - weight for preferred anti-affinity; symmetrically the existing pods' preferred terms that
// match the incoming pod, and their required affinity terms at hardPodAffinityWeight. Scores are
// rescaled to 0..100 by (s - min) * 100 / (max - min) in integers.
//
// Args: hardPodAffinityWeight (0..100, default 1), ignorePreferredTermsOfExistingPods (false).
// PreFilterExtensions (AddPod/RemovePod) update the PreFilter state for preemption's what-if
// evaluation, so a victim's departure lifts the anti-affinity it caused.
#pragma once

#include "plugins/inter_pod_affinity/affinity_terms.h"
#include "scheduler/framework/node_local.h"
#include "scheduler/framework/registry.h"

namespace tessel::inter_pod_affinity {

inline constexpr std::string_view kAffinityReason = "node(s) didn't match pod affinity rules";
inline constexpr std::string_view kAntiAffinityReason = "node(s) didn't match pod anti-affinity rules";
inline constexpr std::string_view kExistingAntiAffinityReason =
    "node(s) didn't satisfy existing pods anti-affinity rules";

// What PreFilter computes for one incoming pod.
struct PreFilterState final : StateData {
  std::vector<ResolvedTerm> affinity;       // the pod's required affinity terms
  std::vector<ResolvedTerm> anti_affinity;  // the pod's required anti-affinity terms
  bool matches_own_affinity = false;        // the pod matches all its own affinity terms
  TopologyCounts affinity_counts;           // domains holding pods that match all affinity terms
  TopologyCounts anti_affinity_counts;      // per term: domains holding pods that match it
  TopologyCounts existing_anti_affinity;    // domains whose pods' anti-affinity rejects the pod

  // Accounts `existing` (on `node`) as present (+1) or gone (-1): what-if for preemption.
  void UpdateWithPod(const Pod& incoming, const Pod& existing, const Node& node,
                     const NamespaceLabelsFn& namespace_labels, int64_t delta);
  std::unique_ptr<StateData> Clone() const override { return std::make_unique<PreFilterState>(*this); }
};

struct InterPodAffinityArgs {
  int64_t hard_pod_affinity_weight = 1;  // 0..100
  bool ignore_preferred_terms_of_existing_pods = false;
};

class InterPodAffinity final : public PreFilterPlugin,
                               public PreFilterExtensions,
                               public FilterPlugin,
                               public PreScorePlugin,
                               public ScorePlugin,
                               public NodeLocalPlugin {
 public:
  static constexpr std::string_view kName = "InterPodAffinity";
  using Args = InterPodAffinityArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<InterPodAffinity>> New(Args args, Handle& handle);
  InterPodAffinity(Args args, Handle& handle) : args_(args), handle_(handle) {}
  std::string_view Name() const override { return kName; }
  // A pod arriving can satisfy affinity; a pod leaving can lift anti-affinity (either side);
  // a new or relabelled node can bring a topology domain; a relabelled namespace can come into
  // (or leave) a namespaceSelector.
  uint32_t EventsToRegister() const override {
    return kAssignedPodAdd | kAssignedPodDelete | kNodeAdd | kNodeUpdate | kNamespaceChange;
  }
  Status PreFilter(CycleState& state, const Pod& pod) override;
  const PreFilterExtensions* Extensions() const override { return this; }
  Status AddPod(CycleState& state, const Pod& to_schedule, const Pod& other,
                const NodeInfo& node) const override;
  Status RemovePod(CycleState& state, const Pod& to_schedule, const Pod& other,
                   const NodeInfo& node) const override;
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  Status PreScore(CycleState& state, const Pod& pod,
                  const std::vector<const NodeInfo*>& feasible) override;
  ScoreResult Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  Status NormalizeScore(const CycleState& state, const Pod& pod, NodeScoreList& scores) const override;
  // Affinity reads other nodes' pods: its Filter is never cached (when it runs), and its Score is
  // cached away only for pods it does not score (PreScore skips).
  ScoreUse AppendScoreKey(const CycleState& state, const Pod& pod, std::string& key) const override;

  static constexpr std::string_view kPreScoreKey = "InterPodAffinity/PreScore";

 private:
  NamespaceLabelsFn NamespaceLabels() const;
  // PreFilter's state; null when nothing constrains the pod (no terms of its own, no existing
  // pod's anti-affinity matches it: Skip), unless `always`.
  std::unique_ptr<PreFilterState> ComputeState(const Pod& pod, bool always = false) const;
  Args args_;
  Handle& handle_;
};

}  // namespace tessel::inter_pod_affinity
