// One scheduling profile: its plugins, instantiated from the registry and the configuration,
// and the code that runs them at each extension point. The scheduling loop (core/) drives a
// Framework; plugins never call each other directly.
//
//   ASSIGN_OR_RETURN(auto fw, Framework::New(registry, resolved_profile, handle, {.parallelism = 2}));
//   CycleState state;
//   Status st = fw->RunPreFilter(state, pod);
//   FilterOutcome f = fw->FindFeasibleNodes(state, pod, snapshot);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/framework/config.h"
#include "scheduler/framework/decision_cache.h"
#include "scheduler/framework/interface.h"
#include "scheduler/framework/parallel.h"
#include "scheduler/framework/registry.h"

namespace tessel {

struct FrameworkOptions {
  int parallelism = 0;  // workers for Filter/Score; 0 = number of cores
  // Reference evaluation: every cycle runs every Filter and Score on every node, with no cache or
  // index (decision_cache.h). The optimised path must choose exactly the same nodes; the
  // differential test (tests/unit/decision_cache_test.cc) compares the two.
  bool reference = false;
};

// Which PostFilter plugins run.
struct PostFilterOptions {
  // Priority preemption alone, not the NoFitPostFilterPlugins: the pod fits on a later tier.
  bool preemption_only = false;
};

struct FilterOutcome {
  std::vector<const NodeInfo*> feasible;  // in snapshot order
  NodeStatusMap rejected;                 // node name -> why not
};

class Framework {
 public:
  static absl::StatusOr<std::unique_ptr<Framework>> New(const Registry& registry,
                                                        const ProfileConfig& profile,
                                                        Handle& handle,
                                                        FrameworkOptions options = {});

  const std::string& scheduler_name() const { return scheduler_name_; }
  Handle& handle() const { return handle_; }
  // Never null: a profile without a QueueSort plugin is rejected at construction.
  const QueueSortPlugin& queue_sort() const { return *queue_sort_; }
  // The profile's PendingOrderPlugin, if one is in it (null: the QueueSort order alone).
  PendingOrderPlugin* pending_order() const { return pending_order_; }
  // The profile's TimekeeperPlugins, in profile order.
  const std::vector<TimekeeperPlugin*>& timekeepers() const { return timekeepers_; }

  // Runs every PreFilter; stops at the first non-success (Skip marks the plugin's Filter skipped).
  Status RunPreFilter(CycleState& state, const Pod& pod) const;
  // Every Filter for one node, stopping at the first rejection.
  Status RunFilters(const CycleState& state, const Pod& pod, const NodeInfo& node) const;
  // The QuotaPlugins' filters alone on the node (Ok when the profile has none): whether quota, room
  // aside, admits the pod there. Room-making that frees no quota (moves, reservations) asks it.
  Status RunQuotaFilters(const CycleState& state, const Pod& pod, const NodeInfo& node) const;
  // Every Filter's MayFitAfterFreeing: false when one knows the pod cannot fit on `node` even
  // with `freed` given back.
  bool MayFitAfterFreeing(const CycleState& state, const Pod& pod, const NodeInfo& node,
                          const Resources& freed) const;
  // RunFilters over every node of the snapshot (in parallel when there are many); with
  // `nominated`, through RunFiltersWithNominatedPods.
  FilterOutcome FindFeasibleNodes(const CycleState& state, const Pod& pod,
                                  const std::vector<NodeInfo*>& nodes,
                                  const NominatedPodMap* nominated = nullptr) const;
  // kube-scheduler's rule for space a preemption freed: the pods nominated to this node with a
  // priority >= the pod's (other than the pod itself) count as already there. The filters run
  // on the node as it is and, if any pods are nominated there, on the node as it will be
  // (copies of the node and the state: its terminating pods gone, the nominated pods added; the
  // nominated pods' presence may also help, e.g. affinity); the pod passes only if both do, and
  // a node that fails as it is reports that rejection (kube-scheduler reports the other view's).
  // Unlike kube-scheduler, a terminating pod and the nominated pod its eviction made room for
  // are not both counted.
  Status RunFiltersWithNominatedPods(const CycleState& state, const Pod& pod, const NodeInfo& node,
                                     const NominatedPodMap* nominated) const;
  // For a node that passes as it is: whether it also passes as it will be with the pods
  // nominated there (true when there are none). Screens by the filters' arithmetic
  // (MayFitAfterFreeing) before it copies the node.
  bool FitsBesideNominatedPods(const CycleState& state, const Pod& pod, const NodeInfo& node,
                               const NominatedPodMap* nominated) const;
  // The node as it will be once its terminating pods are gone: takes them out of `node` and of
  // `state` (RemovePod). Preemption's dry run and the nominated pods' view share it.
  Status RemoveTerminatingPods(CycleState& state, const Pod& pod, NodeInfo& node) const;
  // Adds to `room` the requests of `node`'s terminating pods (what RemoveTerminatingPods frees);
  // false when the sum overflows.
  static bool AddTerminatingRequests(const NodeInfo& node, Resources& room);
  // The PreFilterExtensions of every PreFilter plugin that ran for this state (not skipped):
  // `other` joins / leaves `node` in `state` (preemption's dry run).
  Status RunPreFilterExtensionAddPod(CycleState& state, const Pod& to_schedule, const Pod& other,
                                     const NodeInfo& node) const;
  Status RunPreFilterExtensionRemovePod(CycleState& state, const Pod& to_schedule,
                                        const Pod& other, const NodeInfo& node) const;
  // Who decides, beyond priority, which pods preemption may evict for `preemptor`: the first
  // VictimPolicyPlugin of the profile that does not defer (kDefer when none decides).
  VictimVerdict RunVictimPolicies(const CycleState& state, const Pod& preemptor, const Pod& victim,
                                  std::string* reason) const;
  // Whether a VictimPolicyPlugin of the profile could allow a victim of priority >= `priority`.
  bool VictimPoliciesMayAllowAtOrAbove(const CycleState& state, const Pod& preemptor,
                                       int32_t priority) const;
  // Whether every VictimPolicyPlugin of the profile defers on every victim of `preemptor`.
  bool VictimPoliciesDeferEvery(const CycleState& state, const Pod& preemptor) const;
  // Appends what the active Filters read of the pod, as each NodeLocalPlugin declares it, and
  // their result versions: pods with equal keys get equal verdicts on every node, however its
  // pods are added or removed (the PreFilter extensions see only that node's pods). False when
  // an active Filter reads more than the pod and the node.
  bool AppendNodeLocalFilterKey(const CycleState& state, const Pod& pod, std::string& key) const;
  // Reference evaluation (FrameworkOptions::reference): no caches or indexes anywhere.
  bool reference() const { return reference_; }
  bool HasPostFilter() const { return !post_filter_.empty(); }
  PostFilterResult RunPostFilter(CycleState& state, const Pod& pod, const NodeStatusMap& rejected,
                                 PostFilterOptions options = {}) const;
  bool HasGangPostFilter() const { return !gang_post_filter_.empty(); }
  // The GangPostFilterPlugins among the postFilter plugins (no NoFitPostFilterPlugin when the
  // gang asks for preemption only), in order, until one evicted for the gang or had an eviction
  // refused; an empty result when none did (or none is enabled).
  GangPostFilterResult RunGangPostFilter(const PendingGang& gang) const;
  Status RunPreScore(CycleState& state, const Pod& pod,
                     const std::vector<const NodeInfo*>& feasible) const;
  // Weighted sum over Score plugins (each normalised to 0..100), one entry per feasible node.
  absl::StatusOr<NodeScoreList> RunScore(const CycleState& state, const Pod& pod,
                                         const std::vector<const NodeInfo*>& feasible) const;
  // After PreFilter: the node a full evaluation (FindFeasibleNodes, PreScore, Score, the best
  // total, ties to the first by name) would choose, from the decision cache (decision_cache.h);
  // kFallback when the cache cannot say (then nothing past PreFilter ran) or in reference mode.
  DecisionCache::Choice ChooseCached(CycleState& state, const Pod& pod, const Snapshot& snapshot,
                                     const DecisionCache::HeldNodes* held = nullptr,
                                     std::optional<int64_t> tier = std::nullopt) const;
  // How often the cache answered (zeros in reference mode).
  DecisionCache::Stats DecisionCacheStats() const {
    return decision_cache_ ? decision_cache_->stats() : DecisionCache::Stats{};
  }
  // Every PreAssume plugin on the pod copy about to be assumed on `node`; stops at a failure.
  Status RunPreAssume(CycleState& state, Pod& assumed, const NodeInfo& node) const;
  // Runs Reserve in order; on failure, unreserves the ones that ran (in reverse) and returns it.
  Status RunReserve(CycleState& state, const Pod& pod, const std::string& node) const;
  void RunUnreserve(CycleState& state, const Pod& pod, const std::string& node) const;
  PermitResult RunPermit(CycleState& state, const Pod& pod, const std::string& node) const;
  Status RunPreBind(CycleState& state, const Pod& pod, const std::string& node) const;
  Status RunBind(CycleState& state, const Pod& pod, const std::string& node) const;

  // Whether the named plugin is a QuotaPlugin of this profile.
  bool IsQuotaPlugin(std::string_view name) const;
  // What the plugin that made `rejection` says more about the node (ExplainingFilterPlugin), or "".
  std::string ExplainRejection(const Status& rejection, const CycleState& state, const Pod& pod,
                               const NodeInfo& node) const;
  // Whether the named plugins are some and all QuotaPlugins: only quota said no.
  bool RejectedOnlyByQuota(const std::vector<std::string>& plugin_names) const;
  // Whether more quota would lift this rejection: a QuotaPlugin's Unschedulable. Its
  // unresolvable rejections (a node outside the queue's flavors, a flavor's taint the pod does
  // not tolerate) are not a quota shortfall, and waiting for quota cannot help them.
  bool QuotaMayLift(const Status& rejection) const;
  // Union of EventsToRegister of the named PreFilter/Filter plugins (kAllEvents if unknown).
  uint32_t EventsFor(const std::vector<std::string>& plugin_names) const;
  // Of those, the events every named plugin that registered hints by the node's room
  // (EnqueueExtensions::EventsHintedByRoom); 0 when a name is unknown.
  uint32_t EventsHintedByRoom(const std::vector<std::string>& plugin_names) const;
  // What a node's room must hold for these plugins to pass the pod there (each plugin's
  // EnqueueExtensions::AddRoomNeed, merged by maximum).
  Resources RoomNeed(const std::vector<std::string>& plugin_names, const Pod& pod) const;
  // The enabled plugins of an extension point, in order ("filter", "score", ...).
  std::vector<std::string> PluginNames(std::string_view point) const;
  // A plugin by name, for plugins that cooperate (e.g. preemption reading gang state).
  Plugin* FindPlugin(std::string_view name) const;

 private:
  Framework(Handle& handle, FrameworkOptions options)
      : handle_(handle), parallelizer_(options.parallelism), reference_(options.reference) {}
  void BuildDecisionCache();

  struct WeightedScore {
    ScorePlugin* plugin;
    int64_t weight;
  };

  Handle& handle_;
  std::string scheduler_name_;
  std::vector<std::unique_ptr<Plugin>> owned_;
  const QueueSortPlugin* queue_sort_ = nullptr;
  PendingOrderPlugin* pending_order_ = nullptr;
  std::vector<TimekeeperPlugin*> timekeepers_;
  // The filters on the node as it will be with `ahead` (nominated there) added, and
  // KeepsNominatedSpread; Ok when nothing is nominated there.
  Status RunFiltersBeside(const CycleState& state, const Pod& pod, const NodeInfo& node,
                          const std::vector<PodRef>& ahead) const;
  // The filters alone on the node as it will be: its terminating pods gone, `ahead` there.
  Status RunFiltersAsItWillBe(const CycleState& state, const Pod& pod, const NodeInfo& node,
                              const std::vector<PodRef>& ahead) const;
  // A pod placed beside nominated pods must leave their own topology spread intact: those whose
  // DoNotSchedule constraints count it, and that fit on the node without it, must still fit with
  // it (kube-scheduler does not protect this; without it a preemptor evicts, again and again,
  // for room that lower-priority pods of its app then take).
  Status KeepsNominatedSpread(const Pod& pod, const NodeInfo& node, const std::vector<PodRef>& ahead) const;
  std::vector<PreFilterPlugin*> pre_filter_;
  std::vector<FilterPlugin*> filter_;
  std::vector<PostFilterPlugin*> post_filter_;
  std::vector<GangPostFilterPlugin*> gang_post_filter_;  // of post_filter_
  std::vector<PreScorePlugin*> pre_score_;
  std::vector<WeightedScore> score_;
  std::vector<PreAssumePlugin*> pre_assume_;
  std::vector<const VictimPolicyPlugin*> victim_policies_;
  std::vector<ReservePlugin*> reserve_;
  std::vector<PermitPlugin*> permit_;
  std::vector<PreBindPlugin*> pre_bind_;
  std::vector<BindPlugin*> bind_;
  mutable Parallelizer parallelizer_;
  bool reference_;
  std::unique_ptr<DecisionCache> decision_cache_;  // mutable state, used by the scheduling thread
};

}  // namespace tessel
