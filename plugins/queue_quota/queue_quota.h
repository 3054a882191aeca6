// QueueQuota (PreFilter, Filter, Reserve, victim policy): team quotas from tessel.io/v1alpha1
// Queue objects (scheduler/quota), enforced when a pod is scheduled, so quota, gang and
// placement are decided in one transaction (docs/quota.md).
//
// PreFilter maps the pod to its queue (label tessel.io/queue, else spec.namespaces; a label
// naming a queue that does not admit the pod's namespace makes the pod wait) and sums
// what every queue uses now: the pods the snapshot shows on nodes (bound and assumed), the
// pods reserved since the snapshot was taken (a gang's members are planned on one snapshot),
// and the pods nominated to nodes by an earlier preemption (cluster-wide: quota reclaimed for
// a pod is not borrowed again by another team while its victims leave).
// Per-node sums are kept by node generation, so a cycle re-reads only the nodes that changed.
// Filter rejects every node with kUnschedulable and the quota message ("queue team-a:
// nvidia.com/gpu 21 of nominal 20; ...") when the request does not fit the queue's nominal
// quota plus what its cohort can lend; it depends on the node only through the GPU count a
// shared GPU's replica stands for. Reserve checks again against what was reserved meanwhile
// and records the pod (and, when it fits only because teammates of lower priority nominated
// earlier yielded their quota, names their nominations outgrown: kOutgrownNominationsKey);
// Unreserve forgets it. It is a QuotaPlugin: a pod that it alone rejected
// waits for its team's quota, not for capacity, and is reported with reason QuotaExceeded,
// which cluster autoscalers do not act on.
//
// Preemption (owned by the preemption plugin) reaches quota through PreFilterExtensions
// (RemovePod/AddPod adjust the cycle's usage) and MayEvict (reclaim within a cohort and
// preemption within a queue, per the queues' spec.preemption). Pods without a queue are not
// limited unless args.podsWithoutQueue is Reject.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/framework/node_local.h"
#include "scheduler/framework/registry.h"
#include "scheduler/quota/quota_tracker.h"
#include "scheduler/quota/quota_usage.h"
#include "scheduler/quota/usage_decay.h"

namespace tessel::queue_quota {

// A nominated pod of the pod's own queue, of lower priority, whose quota claim yields to it.
struct YieldedClaim {
  std::string key;
  int32_t priority = 0;
  Resources charge;
};

struct QueueQuotaArgs {
  bool reject_pods_without_queue = false;  // podsWithoutQueue: Allow (false) or Reject (true)
  // usageHalfLifeSeconds: fairness over time (usage_decay.h). 0 (the default): off, shares are
  // computed on the instant. One value for the whole scheduler, as Kueue's
  // admissionFairSharing.usageHalfLifeTime and KAI-Scheduler's usage half-life are.
  int64_t usage_half_life_seconds = 0;
};
// The largest usageHalfLifeSeconds: a year.
inline constexpr int64_t kMaxUsageHalfLifeSeconds = 365 * 24 * 3600;

class QueueQuota final : public QuotaPlugin,
                         public PreFilterPlugin,
                         public FilterPlugin,
                         public NodeLocalPlugin,
                         public ReservePlugin,
                         public VictimPolicyPlugin,
                         public PendingOrderPlugin,
                         public TimekeeperPlugin,
                         public PreFilterExtensions {
 public:
  static constexpr std::string_view kName = "QueueQuota";
  using Args = QueueQuotaArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<QueueQuota>> New(Args args, Handle& handle);
  QueueQuota(Handle* handle, bool reject_unqueued, int64_t usage_half_life_seconds = 0);

  std::string_view Name() const override { return kName; }
  // Quota frees when a pod leaves a node, and changes with the Queue objects.
  uint32_t EventsToRegister() const override { return kAssignedPodDelete | kCustomObjectChange; }

  Status PreFilter(CycleState& state, const Pod& pod) override;
  const PreFilterExtensions* Extensions() const override { return this; }
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  // A single pod: its verdict on a node is the verdict of the node's kind (flavor tier, GPU milli
  // it would hold: judged in PreFilter per kind), so the key is what maps nodes to kinds and
  // that table.
  bool AppendFilterKey(const CycleState& state, const Pod& pod, std::string& key) const override;
  int64_t ResultVersion() const override { return directory_version_.load(); }
  Status Reserve(CycleState& state, const Pod& pod, const std::string& node) override;
  void Unreserve(CycleState& state, const Pod& pod, const std::string& node) override;

  Status AddPod(CycleState& state, const Pod& to_schedule, const Pod& other,
                const NodeInfo& node) const override;
  Status RemovePod(CycleState& state, const Pod& to_schedule, const Pod& other,
                   const NodeInfo& node) const override;

  // Capacity: when the preemptor's queue takes it without evicting anyone and within its
  // nominal quota (or the victim is in its own queue), a lower-priority victim is left to the
  // priority rule (kDefer), whatever the queues' policies: they govern preemption for quota.
  // Reclaim: a victim in another queue of the preemptor's cohort that borrows may be evicted
  // (reason "reclaim") when the preemptor's queue stays within its nominal quota, as its
  // spec.preemption.reclaimWithinCohort allows (Any; LowerPriority: only lower priority): of
  // that queue's pods on the victim's node, in eviction order (lowest priority, most recently
  // created first), those taken while the queue still borrows. Fair sharing: a preemptor that would itself borrow may take borrowed capacity
  // (reason "fair-share", same policy) only from a queue whose weighted dominant share stays at
  // least the preemptor's after the move (FairShare: on a tie the next largest part decides).
  // A victim in a gang is judged with its mates on every node, the preemptor's queue with its own
  // nominated pods of lower priority. A victim in the preemptor's own queue: withinQueue
  // LowerPriority allows lower priority (reason "within-queue"), Never denies. Victims in other
  // cohorts are denied; pods without a queue (victim or preemptor) defer to the priority rule.
  VictimVerdict MayEvict(const CycleState& state, const Pod& preemptor, const Pod& victim,
                         std::string* reason) const override;
  // Only reclaim within a cohort whose policy is Any may take a victim that is not lower.
  bool MayAllowAtOrAbove(const CycleState& state, const Pod& preemptor,
                         int32_t priority) const override;
  // A preemptor in no queue: every victim is left to the priority rule.
  bool DefersEvery(const CycleState& state, const Pod& preemptor) const override;

  // Which pending pod goes next among the queues' heads (pending_order.h): one its queue holds
  // within its nominal quota, then priority, then the lower weighted share where the queues'
  // paths in the tree part.
  std::string PendingGroupOf(const Pod& pod) const override;
  size_t ChooseNext(std::span<const QueuedPodInfo* const> heads,
                    absl::FunctionRef<void()> refresh_snapshot) override;

  // Fairness over time (args.usageHalfLifeSeconds > 0, else these do nothing): every queue's
  // decayed usage, advanced at each PreFilter on the handle's clock, and when it was computed;
  // Tick advances it too once kTickSteps of a half-life have passed since the last advance, so
  // that a quiet spell (nothing pending, pods ending) counts what the queues held during it, not
  // what they held before it (within one tick's share of the half-life).
  // Fair-share preemption takes a victim only when both comparisons allow it: the shares now,
  // and each side's share now plus the share its decayed usage gives (per mille,
  // QuotaTracker::ShareOfNode). So a team that used much recently yields to one that did not,
  // and decay never takes a pod that the shares now would give back.
  bool decays_usage() const { return decay_enabled_; }
  void Tick(absl::Time now, absl::FunctionRef<void()> refresh_snapshot) override;
  static constexpr int64_t kTickSteps = 64;  // ticks per half-life at most
  QueueUsage DecayedUsage() const;
  std::optional<absl::Time> DecayedAt() const;
  // A queue's decayed usage read back from its status after a restart (UsageDecay::Restore):
  // only before the first cycle; false when too late or decay is off.
  bool RestoreDecayedUsage(const std::string& queue, const Resources& decayed, absl::Time computed_at);

 private:
  struct Reserved {
    std::string queue;
    Resources charge;
    int64_t sequence = 0;
  };
  // Usage per queue of the snapshot's nodes, with the pods reserved since it was taken. Kept as
  // a running total that follows the snapshot's change log: a call costs the nodes that changed
  // since the last, not every node (it runs at every PreFilter and at every pending-order pop).
  QueueUsage SnapshotUsage(const std::shared_ptr<const QueueDirectory>& directory);
  // Charges to their queues the pods nominated to nodes (their victims are leaving), wherever
  // `pod` would go: quota a preemption reclaimed is not borrowed again elsewhere meanwhile.
  // Left out: the pod itself, its gang, and lower-priority pods of its own queue, whose charge
  // is returned (they yield to `pod`, but hold their queue's quota in other queues' cycles).
  // `charged` gets the keys of those charged; returned: those that yielded.
  std::vector<YieldedClaim> ChargeNominatedPods(const Pod& pod, const QueueDirectory& directory, const Queue& own,
                                                QuotaTracker& usage, StringSet& charged);
  // The running members of a gang (GangKeyOf) on the cycle's snapshot: a victim in a gang goes
  // with its mates on every node, so its queue loses what they charge together.
  std::vector<PodRef> GangMembers(const std::string& gang) const;

  Handle* handle_;
  const bool reject_unqueued_;
  const bool decay_enabled_;

  mutable absl::Mutex mu_;  // Unreserve runs on binder threads
  struct NodeUsage {
    int64_t generation = -1;
    QueueUsage usage;
  };
  // The kinds of node a single pod may use, judged in PreFilter: (flavor tier, GPU milli it would
  // hold there), with the charge of each kind (PlaceOn). Kept per `request` (everything the
  // kind reads of the pod and its queue), by position in nodes(), following the snapshot's change
  // log as the usage does, so that PreFilter finds them without walking the nodes.
  using NodeKind = std::pair<int64_t, int64_t>;
  struct NodeKindIndex {
    std::shared_ptr<const QueueDirectory> directory;
    ChangeLogReader log;
    uint64_t last_used = 0;
    std::vector<int64_t> generation;
    std::vector<std::optional<NodeKind>> kind;           // nullopt: not the pod's to use
    std::map<NodeKind, std::pair<int64_t, Resources>> kinds;  // nodes of each kind, its charge
  };
  using KindOf = absl::FunctionRef<std::optional<std::pair<NodeKind, Resources>>(const NodeInfo&)>;
  std::map<NodeKind, Resources> NodeKinds(const std::string& request,
                                          const std::shared_ptr<const QueueDirectory>& directory, KindOf kind_of);
  StringKeyedMap<std::unique_ptr<NodeKindIndex>> node_kinds_ ABSL_GUARDED_BY(mu_);
  uint64_t node_kinds_clock_ ABSL_GUARDED_BY(mu_) = 0;
  // SnapshotUsage's running total: each node's part by position in nodes(), following the
  // snapshot's change log, for the Queues and flavors of `usage_directory_`.
  std::shared_ptr<const QueueDirectory> usage_directory_ ABSL_GUARDED_BY(mu_);
  // Moves with usage_directory_ (every PreFilter reads the usage first): a flavored pod's filter
  // key names its queue, whose flavors decide which nodes it may use.
  std::atomic<int64_t> directory_version_ = 0;
  std::vector<NodeUsage> node_usage_ ABSL_GUARDED_BY(mu_);
  QueueUsage usage_total_ ABSL_GUARDED_BY(mu_);
  ChangeLogReader usage_log_ ABSL_GUARDED_BY(mu_);
  // Pods reserved since the snapshot of generation reserved_generation_ was taken.
  int64_t reserved_generation_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t reserved_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  StringKeyedMap<Reserved> reserved_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<UsageDecay> decay_ ABSL_GUARDED_BY(mu_);  // null: decay off
  // Running pods by gang, for the snapshot of `gangs_generation_`; built when a victim policy
  // first asks on that snapshot.
  mutable int64_t gangs_generation_ ABSL_GUARDED_BY(mu_) = -1;
  mutable StringKeyedMap<std::vector<PodRef>> gangs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel::queue_quota
