// PodTopologySpread (PreFilter, Filter, PreScore, Score): topologySpreadConstraints with
// kube-scheduler's semantics.
//
// A constraint counts, per domain (value of topologyKey on eligible nodes), the pods in the
// incoming pod's namespace that its labelSelector selects (terminating pods excluded). A node
// is eligible when it has every constraint's topologyKey and passes the inclusion policies:
// nodeAffinityPolicy Honor (default) = the pod's nodeSelector/required node affinity holds;
// nodeTaintsPolicy Honor (default Ignore) = the pod tolerates its NoSchedule/NoExecute taints.
//
// Filter (DoNotSchedule constraints): on node N in domain D,
//   count(D) + (1 if the pod selects itself) - min(count over eligible domains) <= maxSkew,
// where the minimum is 0 while there are fewer eligible domains than minDomains. A node without
// the topologyKey is UnschedulableAndUnresolvable. Counts are computed once per cycle in
// PreFilter, so Filter is a lookup per constraint.
// Score (ScheduleAnyway constraints): fewer matching pods in a node's domains scores higher;
// each constraint weighs ln(#domains + 2) (fixed point, integers) as kube-scheduler does.
//
// Pods without constraints get the default constraints (ScheduleAnyway zone maxSkew 5 and
// hostname maxSkew 3, or the args' defaultConstraints with defaultingType List), selecting the
// pods controlled by the same ReplicaSet, StatefulSet or ReplicationController. kube-scheduler
// also uses the selectors of Services that select the pod; Tessel has no Service informer.
#pragma once

#include <optional>
#include <vector>

#include "scheduler/framework/node_local.h"
#include "scheduler/framework/registry.h"
#include "scheduler/util/strings.h"

namespace tessel::pod_topology_spread {

inline constexpr std::string_view kReason = "node(s) didn't match pod topology spread constraints";
inline constexpr std::string_view kMissingLabelReason =
    "node(s) didn't match pod topology spread constraints (missing required label)";
inline constexpr std::string_view kHostnameKey = "kubernetes.io/hostname";
inline constexpr std::string_view kZoneKey = "topology.kubernetes.io/zone";

// A constraint as the plugin applies it (defaults filled in, selector resolved).
struct Constraint {
  int32_t max_skew = 1;
  std::string topology_key;
  int32_t min_domains = 1;
  NodeInclusionPolicy node_affinity_policy = NodeInclusionPolicy::kHonor;
  NodeInclusionPolicy node_taints_policy = NodeInclusionPolicy::kIgnore;
  std::optional<LabelSelector> selector;
  // Set for default constraints: the pods controlled by this owner (instead of `selector`).
  std::string controller_uid;

  bool Selects(const Pod& pod) const;
  // The node counts as a domain of this constraint for `pod` (inclusion policies).
  bool Includes(const Pod& pod, const Node& node) const;
};

// The pods on a node that `c` counts for a pod of namespace `ns`.
int64_t CountMatching(const std::vector<PodRef>& pods, const Constraint& c, std::string_view ns);

// round(ln(n) * 1'000'000), computed in integers (n >= 1).
int64_t LnMicro(int64_t n);

struct PreFilterState final : StateData {
  std::vector<Constraint> constraints;
  std::vector<StringKeyedMap<int64_t>> counts;  // per constraint: eligible domain -> pods
  std::vector<int64_t> min_counts;              // per constraint: the smallest count (0 if none)

  // Accounts `existing` (on `node`) as present (+1) or gone (-1): what-if for preemption.
  void UpdateWithPod(const Pod& incoming, const Pod& existing, const Node& node, int64_t delta);
  void RecomputeMinimum(size_t i);
  std::unique_ptr<StateData> Clone() const override { return std::make_unique<PreFilterState>(*this); }
};

struct PodTopologySpreadArgs {
  enum class Defaulting { kSystem, kList };
  Defaulting defaulting = Defaulting::kSystem;
  std::vector<TopologySpreadConstraint> default_constraints;  // used with kList
};

class PodTopologySpread final : public PreFilterPlugin,
                                public PreFilterExtensions,
                                public FilterPlugin,
                                public PreScorePlugin,
                                public ScorePlugin,
                                public NodeLocalPlugin {
 public:
  static constexpr std::string_view kName = "PodTopologySpread";
  static constexpr std::string_view kPreScoreKey = "PodTopologySpread/PreScore";
  using Args = PodTopologySpreadArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<PodTopologySpread>> New(Args args, Handle& handle);
  PodTopologySpread(Args args, Handle& handle) : args_(std::move(args)), handle_(handle) {}
  std::string_view Name() const override { return kName; }
  // Pods arriving (a domain's minimum rises) or leaving, and nodes appearing or relabelled
  // (new domains, new labels) can all lower a node's skew.
  uint32_t EventsToRegister() const override {
    return kAssignedPodAdd | kAssignedPodDelete | kNodeAdd | kNodeUpdate;
  }
  Status PreFilter(CycleState& state, const Pod& pod) override;
  // Preemption's what-if: a victim leaving (or a reprieved one returning) changes the counts.
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
  // Spreading reads other nodes' pods: its Filter is never cached (when it runs), and its Score
  // is cached away only for pods it does not score (no ScheduleAnyway constraint).
  ScoreUse AppendScoreKey(const CycleState& state, const Pod& pod, std::string& key) const override;

  // The constraints of `pod` with this `when` value: its own, else the defaults.
  std::vector<Constraint> ConstraintsFor(const Pod& pod,
                                         TopologySpreadConstraint::WhenUnsatisfiable when) const;

 private:
  // PreFilter's state; null when the pod has no DoNotSchedule constraint (Skip).
  std::unique_ptr<PreFilterState> ComputeState(const Pod& pod) const;
  Args args_;
  Handle& handle_;
};

}  // namespace tessel::pod_topology_spread
