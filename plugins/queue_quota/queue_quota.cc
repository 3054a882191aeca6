#include "plugins/queue_quota/queue_quota.h"

#include <algorithm>
#include <set>

#include "plugins/queue_quota/pending_order.h"
#include "scheduler/framework/node_tiers.h"
#include "scheduler/framework/plugin_util.h"
#include "scheduler/util/least_recently_used.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"

namespace tessel::queue_quota {
namespace {

// What one cycle knows about the pod's queue: the usage it sees (adjusted by preemption's dry
// run) and the verdict for each charge the pod may make on the snapshot's nodes.
struct QuotaCycle {
  QuotaCycle(std::shared_ptr<const QueueDirectory> dir, const Queue* q)
      : directory(std::move(dir)), queue(q), base(directory.get()), tracker(directory.get()) {}

  std::shared_ptr<const QueueDirectory> directory;  // keeps `queue` and the trackers valid
  const Queue* queue;
  QuotaTracker base;     // usage when the cycle began
  QuotaTracker tracker;  // usage the cycle sees now (preemption removes victims from it)
  // Every queue's decayed usage when the cycle began (args.usageHalfLifeSeconds), else none.
  std::optional<QuotaTracker> decayed;
  Resources request;     // the pod's charge without GPUs (with what its DRA claims charge)
  int64_t dra_gpu_milli = 0;  // the nvidia.com/gpu its DRA claims charge (dra_charge.h)
  gpu::GpuRequest gpu;
  std::vector<Toleration> tolerations;  // for a flavor's node taints
  // Everything PlaceOn and GpuMilliOn read of the pod and its queue, so that two pods with the
  // same key have the same kind of node on every node: the GPU request and, for a flavored
  // queue, the queue, the tolerations and the charge's resources (NodeKinds' index, the filter key).
  std::string kind_key;
  int64_t reserved_sequence = 0;  // reservations up to this one are in `base`
  StringSet nominated;            // nominated pods charged in `base` (see ChargeNominatedPods)
  // What the queue's nominated pods of lower priority charge: they yield to the pod here (left
  // out of `base`), but every other queue's cycle counts them.
  Resources yielded;
  std::vector<YieldedClaim> yielded_pods;  // each of them (`yielded` is their charges summed)
  // Pods of the snapshot that preemption's dry run took out of `tracker` (RemovePod, undone by
  // AddPod): the victims already chosen for the pod's unit, which a victim policy does not count
  // again.
  StringSet removed;
  // The pod's scheduling unit (node_tiers.h): its members' keys, and which of them AddPod
  // charged since (placed in a plan or a dry run). Empty: the pod is judged alone.
  std::vector<std::string> unit;
  std::vector<bool> unit_added;
  std::vector<Resources> unit_charged;  // what AddPod charged for each member added
  std::optional<size_t> self;  // the pod's own place in `unit`, if it is a member
  // By flavor tier: each member's least charge on a node of the tier (a replica of a
  // time-sliced GPU charges less than a whole one). Where the members other than the pod will
  // go is not known yet: they fit if they fit at their least charge (Reserve checks the gang as
  // placed), and borrow unless they fit without borrowing at this node's charge too, so a gang
  // whose members could land on kinds of node that borrow is not taken for one that does not.
  std::map<int64_t, std::vector<Resources>> least_unit_charges;
  // And each member's most charge on a node of the tier: preemption for quota judges the
  // members still to place at it (UnitCharge).
  std::map<int64_t, std::vector<Resources>> most_unit_charges;
  // By (flavor tier, the GPU milli the pod would hold): the charge and its verdict; with a
  // unit, each member's charge on that kind of node and the verdict on the members not yet
  // added, together. A flat queue has one tier, 0.
  struct Verdict {
    Resources charge;
    QuotaVerdict verdict;
    std::vector<Resources> unit_charges;
    QuotaVerdict unit_verdict;
  };
  std::map<std::pair<int64_t, int64_t>, Verdict> verdicts;

  // `usage` as the other queues' cycles see it: with the queue's nominated pods of lower
  // priority. Preemption for quota judges the queue by it, since that is what it holds once
  // they are placed: judged without them, a queue's share was below what the others count, and
  // a queue it took from by fair sharing took the room back by the same rule.
  QuotaTracker AsOthersSee(const QuotaTracker& usage) const {
    QuotaTracker out = usage;
    if (!yielded.IsZero()) out.AddUsage(queue->name(), yielded);
    return out;
  }
  Resources ChargeFor(int64_t gpu_milli) const {
    Resources r = request;
    r.Set(kNvidiaGpu, gpu_milli + dra_gpu_milli);
    return r;
  }
  int64_t GpuMilliOn(const NodeInfo& node) const {
    return gpu.needs_devices() ? HeldGpuMilliOn(gpu, &node) : 0;
  }
  // Where the pod's charge goes on `node`: for a flavored queue, the node's flavors (or why
  // the pod may not use the node); for a flat queue, tier 0 and the charge as it is.
  FlavorPlacement PlaceOn(const NodeInfo& node) const {
    if (!queue->flavored()) return FlavorPlacement{.charge = ChargeFor(GpuMilliOn(node))};
    static const StringMap kNoLabels;
    return directory->Place(*queue, ChargeFor(GpuMilliOn(node)),
                            node.node() != nullptr ? node.node()->meta.labels : kNoLabels, &tolerations);
  }
  // The pod's verdict on `node`, judged with its unit: it fits when the pod fits and the
  // unit's members not yet placed fit together; it borrows when either borrows. One verdict
  // for Filter and for the flavor tiers, so a gang's flavor and quota are its total's.
  QuotaVerdict VerdictOn(const NodeInfo& node, const FlavorPlacement& placement) const {
    auto it = verdicts.find({placement.tier, GpuMilliOn(node)});
    if (it == verdicts.end()) return tracker.Check(queue->name(), placement.charge);
    const Verdict& v = it->second;
    if (!v.verdict.fits || unit.empty()) return v.verdict;
    QuotaVerdict together = v.unit_verdict;
    together.borrows |= v.verdict.borrows;
    if (!together.fits) {
      const auto rest = std::count(unit_added.begin(), unit_added.end(), false);
      StrAppend(&together.reason, " (the ", rest, " members of its gang still to place, together)");
    }
    return together;
  }
  void Refresh() {
    for (auto& [key, v] : verdicts) {
      v.verdict = tracker.Check(queue->name(), v.charge);
      if (unit.empty()) continue;
      const std::vector<Resources>& least = least_unit_charges.at(key.first);
      Resources at_least, here;
      for (size_t i = 0; i < unit.size(); ++i) {
        if (unit_added[i]) continue;
        (void)at_least.Add(i == self ? v.unit_charges[i] : least[i]);
        (void)here.Add(v.unit_charges[i]);
      }
      v.unit_verdict = tracker.Check(queue->name(), at_least);
      const QuotaVerdict all_here = tracker.Check(queue->name(), here);
      v.unit_verdict.borrows |= all_here.borrows || !all_here.fits;
    }
  }
  // What the pod's unit holds once placed: the pod's own charge here when it is judged alone,
  // else every member at the most a node of the flavor would charge it. A gang reclaims, shares
  // and preempts by priority as a whole: judged by one member's charge, a gang whose queue ends
  // above its nominal quota took the room as "within nominal", and the queue it took from could
  // reclaim it right back. At the most, because a gang's plan may move members between nodes
  // until it is made (its reprieve fits them again): judged at the rates of the nodes first
  // planned, a gang "reclaimed" for members on time-sliced GPUs, was placed on whole ones, and
  // ended above its nominal quota.
  const std::vector<Resources>* MostUnitCharges(const FlavorPlacement& placement) const {
    auto it = most_unit_charges.find(placement.tier);
    return unit.empty() || it == most_unit_charges.end() || it->second.size() != unit.size() ? nullptr : &it->second;
  }
  Resources UnitCharge(const FlavorPlacement& placement) const {
    const std::vector<Resources>* most = MostUnitCharges(placement);
    if (most == nullptr) return placement.charge;
    Resources total;
    if (!self.has_value()) (void)total.Add(placement.charge);
    for (const Resources& m : *most) (void)total.Add(m);
    return total;
  }
  // `usage` without what AddPod charged for the members placed so far (in UnitCharge instead).
  QuotaTracker UnitAside(QuotaTracker usage, const FlavorPlacement& placement) const {
    if (MostUnitCharges(placement) == nullptr) return usage;
    for (size_t i = 0; i < unit.size(); ++i) {
      if (unit_added[i]) usage.SubUsage(queue->name(), unit_charged[i]);
    }
    return usage;
  }
  // Notes that a member of the unit was charged (AddPod) or uncharged (RemovePod).
  void MarkUnit(const Pod& other, bool added, const Resources& charge) {
    for (size_t i = 0; i < unit.size(); ++i) {
      if (unit[i] != other.Key()) continue;
      unit_added[i] = added;
      unit_charged[i] = added ? charge : Resources();
    }
  }
};

using QuotaState = CopyableState<QuotaCycle>;

// A flavored queue's flavor order as strict node tiers (framework/node_tiers.h): the pod takes
// the first flavor with a feasible node. With whenCanBorrow: TryNextFlavor, the nodes where it
// would borrow come after every flavor where it would not.
class FlavorTiers final : public NodeTiers {
 public:
  FlavorTiers(bool preempt_first, bool borrowing_last)
      : preempt_first_(preempt_first), borrowing_last_(borrowing_last) {}
  std::unique_ptr<StateData> Clone() const override { return std::make_unique<FlavorTiers>(*this); }
  std::optional<int64_t> TierOf(const CycleState& state, const NodeInfo& node) const override {
    const QuotaCycle* cycle = state.ReadValue<QuotaCycle>(QueueQuota::kName);
    if (cycle == nullptr) return std::nullopt;
    const FlavorPlacement placement = cycle->PlaceOn(node);
    if (!placement.in_flavor) return std::nullopt;
    if (!borrowing_last_ || !cycle->VerdictOn(node, placement).borrows) return placement.tier;
    return kBorrowingTiers + placement.tier;
  }
  bool PreemptFirst() const override { return preempt_first_; }
  // A flavor's borrowing tier holds the same flavor's nodes where the unit would not borrow: a
  // gang that borrows on the flavor anyway may spread over both (it borrows less, not more).
  bool Holds(int64_t rank, int64_t lower) const override {
    return borrowing_last_ && rank >= kBorrowingTiers && lower == rank - kBorrowingTiers;
  }
  std::optional<std::vector<int64_t>> Ranks(const CycleState& state) const override {
    const QuotaCycle* cycle = state.ReadValue<QuotaCycle>(QueueQuota::kName);
    if (cycle == nullptr || !cycle->unit.empty()) return std::nullopt;
    std::vector<int64_t> ranks;  // each kind of node's, as TierOf gives it (verdicts hold every kind)
    for (const auto& [kind, v] : cycle->verdicts) {
      ranks.push_back(borrowing_last_ && v.verdict.borrows ? kBorrowingTiers + kind.first : kind.first);
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    return ranks;
  }

 private:
  // Above every flavor tier (kMaxFlavorsPerGroup ^ kMaxResourceGroups).
  static constexpr int64_t kBorrowingTiers = int64_t{1} << 40;
  bool preempt_first_;
  bool borrowing_last_;
};

// Eviction order among one queue's pods: lowest priority, then most recently created, first.
bool EvictedBefore(const Pod* a, const Pod* b) {
  if (a->PriorityValue() != b->PriorityValue()) return a->PriorityValue() < b->PriorityValue();
  if (a->meta.creation_timestamp != b->meta.creation_timestamp) {
    return a->meta.creation_timestamp > b->meta.creation_timestamp;
  }
  return a->Key() < b->Key();
}

}  // namespace

absl::StatusOr<QueueQuotaArgs> QueueQuota::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"podsWithoutQueue", "usageHalfLifeSeconds"}));
  ASSIGN_OR_RETURN(const std::string unqueued, reader.String("podsWithoutQueue", "Allow"));
  if (unqueued != "Allow" && unqueued != "Reject") {
    return reader.Error("podsWithoutQueue", StrCat("\"", unqueued, "\" is not one of Allow, Reject"));
  }
  ASSIGN_OR_RETURN(const int64_t half_life,
                   reader.Int("usageHalfLifeSeconds", 0, 0, kMaxUsageHalfLifeSeconds));
  return Args{.reject_pods_without_queue = unqueued == "Reject", .usage_half_life_seconds = half_life};
}

absl::StatusOr<std::unique_ptr<QueueQuota>> QueueQuota::New(Args args, Handle& handle) {
  return std::make_unique<QueueQuota>(&handle, args.reject_pods_without_queue,
                                      args.usage_half_life_seconds);
}

QueueQuota::QueueQuota(Handle* handle, bool reject_unqueued, int64_t usage_half_life_seconds)
    : handle_(handle), reject_unqueued_(reject_unqueued), decay_enabled_(usage_half_life_seconds > 0) {
  if (decay_enabled_) decay_ = std::make_unique<UsageDecay>(absl::Seconds(usage_half_life_seconds));
}

void QueueQuota::Tick(absl::Time now, absl::FunctionRef<void()> refresh_snapshot) {
  if (!decay_enabled_) return;
  {
    absl::MutexLock lock(&mu_);
    const std::optional<absl::Time> last = decay_->computed_at();
    if (last.has_value() && now - *last < decay_->half_life() / kTickSteps) return;
  }
  std::shared_ptr<const QueueDirectory> directory = handle_->Queues();
  if (directory == nullptr) return;
  refresh_snapshot();
  const QueueUsage usage = SnapshotUsage(directory);
  absl::MutexLock lock(&mu_);
  decay_->Advance(now, usage);
}

QueueUsage QueueQuota::DecayedUsage() const {
  absl::MutexLock lock(&mu_);
  return decay_ != nullptr ? decay_->decayed() : QueueUsage{};
}

std::optional<absl::Time> QueueQuota::DecayedAt() const {
  absl::MutexLock lock(&mu_);
  return decay_ != nullptr ? decay_->computed_at() : std::nullopt;
}

bool QueueQuota::RestoreDecayedUsage(const std::string& queue, const Resources& decayed,
                                     absl::Time computed_at) {
  absl::MutexLock lock(&mu_);
  return decay_ != nullptr && decay_->Restore(queue, decayed, computed_at);
}

QueueUsage QueueQuota::SnapshotUsage(const std::shared_ptr<const QueueDirectory>& directory) {
  const Snapshot& snapshot = handle_->snapshot();
  const std::vector<NodeInfo*>& nodes = snapshot.nodes();
  absl::MutexLock lock(&mu_);
  // One node's part of the total, taken out and counted again when its generation moved.
  auto recount = [&](size_t i) {
    NodeUsage& entry = node_usage_[i];
    if (entry.generation == nodes[i]->generation()) return;
    for (const auto& [queue, amount] : entry.usage) {
      auto it = usage_total_.find(queue);
      it->second.Sub(amount);
      if (it->second.IsZero()) usage_total_.erase(it);
    }
    entry.usage.clear();
    AddNodeUsage(*directory, *nodes[i], entry.usage);
    for (const auto& [queue, amount] : entry.usage) (void)usage_total_[queue].Add(amount);
    entry.generation = nodes[i]->generation();
  };
  if (usage_directory_ != directory) {  // the queues changed: every node's sums may differ
    usage_directory_ = directory;
    ++directory_version_;
    usage_log_.Restart();
  }
  auto reset = [&]() {
    node_usage_.assign(nodes.size(), NodeUsage());
    usage_total_.clear();
  };
  usage_log_.Read(snapshot, node_usage_.size(), reset, recount);
  QueueUsage total = usage_total_;
  if (reserved_generation_ == snapshot.generation()) {
    for (const auto& [key, r] : reserved_) (void)total[r.queue].Add(r.charge);
  }
  return total;
}

Status QueueQuota::PreFilter(CycleState& state, const Pod& pod) {
  std::shared_ptr<const QueueDirectory> directory = handle_->Queues();
  const QueueDirectory::Lookup lookup =
      directory ? directory->QueueFor(pod) : QueueDirectory::Lookup{};
  if (!lookup.missing.empty()) {
    return Status::Unresolvable(StrCat("the pod's label ", kQueueLabel, " names Queue \"",
                                       lookup.missing, "\", which does not exist"));
  }
  if (!lookup.refused.empty()) return Status::Unresolvable(lookup.refused);
  if (lookup.queue == nullptr) {
    if (!reject_unqueued_) return Status::Skip();
    return Status::Unresolvable(StrCat("no Queue lists namespace \"", pod.meta.namespace_,
                                       "\" and the pod has no ", kQueueLabel,
                                       " label; only pods in a queue are scheduled"));
  }
  QuotaCycle cycle(directory, lookup.queue);
  const QueueUsage usage = SnapshotUsage(directory);
  for (const auto& [queue, amount] : usage) cycle.base.AddUsage(queue, amount);
  {
    absl::MutexLock lock(&mu_);
    if (decay_ != nullptr) {
      decay_->Advance(handle_->clock().Now(), usage);
      cycle.decayed.emplace(directory.get());
      for (const auto& [queue, amount] : decay_->decayed()) cycle.decayed->AddUsage(queue, amount);
    }
    cycle.reserved_sequence = reserved_sequence_;
    if (reserved_generation_ == handle_->snapshot().generation()) {
      if (auto it = reserved_.find(pod.Key()); it != reserved_.end()) {
        cycle.base.SubUsage(it->second.queue, it->second.charge);  // a retry of this very pod
      }
    }
  }
  cycle.yielded_pods = ChargeNominatedPods(pod, *directory, *lookup.queue, cycle.base, cycle.nominated);
  for (const YieldedClaim& c : cycle.yielded_pods) (void)cycle.yielded.Add(c.charge);
  cycle.tracker = cycle.base;
  cycle.request = pod.requests;
  cycle.request.Set(kNvidiaGpu, 0);
  cycle.request.Set(kNvidiaGpuShared, 0);
  (void)cycle.request.Add(pod.dra_charge);
  cycle.dra_gpu_milli = pod.dra_charge.Get(kNvidiaGpu);
  cycle.request.Set(kNvidiaGpu, 0);
  cycle.gpu = gpu::ReadGpuRequest(pod);
  cycle.tolerations = pod.tolerations;
  cycle.kind_key = lookup.queue->flavored() ? "F" : "-";
  AppendGpuRequest(cycle.gpu, cycle.kind_key);
  if (lookup.queue->flavored()) {
    AppendKeyString(lookup.queue->name(), cycle.kind_key);
    AppendTolerations(cycle.tolerations, cycle.kind_key);
    AppendResources(cycle.ChargeFor(0), cycle.kind_key);
  }
  // The charges the pod may make: one per kind of node (its flavors, and the GPU amount: a
  // replica of a shared GPU holds 1000 / replicas), so Filter looks its verdict up instead of
  // checking per node.
  // With a unit, each member's charge on each kind of node, under the flavor the node is in.
  const std::vector<PodRef>* unit = SchedulingUnitOf(state);
  if (unit != nullptr) {
    for (const PodRef& m : *unit) {
      if (m->Key() == pod.Key()) cycle.self = cycle.unit.size();
      cycle.unit.push_back(m->Key());
    }
    cycle.unit_added.assign(unit->size(), false);
    cycle.unit_charged.assign(unit->size(), Resources());
  }
  auto unit_charges = [&](const NodeInfo* node) {
    static const StringMap kNoLabels;
    const StringMap& labels = node != nullptr && node->node() != nullptr ? node->node()->meta.labels : kNoLabels;
    std::vector<Resources> out;
    for (const PodRef& m : unit != nullptr ? *unit : std::vector<PodRef>()) {
      const Resources charge = QuotaCharge(*m, node);
      out.push_back(directory->Place(*lookup.queue, charge, labels, &m->tolerations).charge);
    }
    return out;
  };
  if (unit == nullptr && (cycle.gpu.needs_devices() || lookup.queue->flavored())) {
    // A single pod: its kinds of node from the index. A flat queue's kind is the GPU milli alone
    // (its charge follows from it).
    const bool flavored = lookup.queue->flavored();
    const std::map<NodeKind, Resources> kinds =
        NodeKinds(cycle.kind_key, directory, [&](const NodeInfo& node) -> std::optional<std::pair<NodeKind, Resources>> {
          FlavorPlacement placement = cycle.PlaceOn(node);
          if (!placement.in_flavor) return std::nullopt;
          return std::make_pair(NodeKind{placement.tier, cycle.GpuMilliOn(node)}, std::move(placement.charge));
        });
    for (const auto& [kind, charge] : kinds) cycle.verdicts[kind].charge = flavored ? charge : cycle.ChargeFor(kind.second);
  } else if (cycle.gpu.needs_devices() || lookup.queue->flavored()) {
    for (const NodeInfo* node : handle_->snapshot().nodes()) {
      const FlavorPlacement placement = cycle.PlaceOn(*node);
      if (!placement.in_flavor) continue;
      const auto key = std::make_pair(placement.tier, cycle.GpuMilliOn(*node));
      if (cycle.verdicts.contains(key)) continue;
      QuotaCycle::Verdict& v = cycle.verdicts[key];  // its verdicts come from Refresh below
      v.charge = placement.charge;
      v.unit_charges = unit_charges(node);
    }
  } else {
    QuotaCycle::Verdict& v = cycle.verdicts[{0, 0}];
    v.charge = cycle.ChargeFor(0);
    v.unit_charges = unit_charges(nullptr);
  }
  // Charges on kinds of node differ in their GPUs only (under the flavor's name when flavored).
  auto scalars = [](const Resources& r) {
    int64_t total = 0;
    for (const auto& [name, amount] : r.scalar) total += amount;
    return total;
  };
  for (const auto& [key, v] : cycle.verdicts) {
    auto [least, fresh] = cycle.least_unit_charges.try_emplace(key.first, v.unit_charges);
    auto most = cycle.most_unit_charges.try_emplace(key.first, v.unit_charges).first;
    if (fresh) continue;
    for (size_t i = 0; i < v.unit_charges.size(); ++i) {
      if (scalars(v.unit_charges[i]) < scalars(least->second[i])) least->second[i] = v.unit_charges[i];
      if (scalars(v.unit_charges[i]) > scalars(most->second[i])) most->second[i] = v.unit_charges[i];
    }
  }
  cycle.Refresh();
  const bool flavored = lookup.queue->flavored();
  const Queue& queue = *lookup.queue;
  state.Write(kName, std::make_unique<QuotaState>(std::move(cycle)));
  if (flavored) {
    state.Write(kNodeTiersKey,
                std::make_unique<FlavorTiers>(queue.when_can_preempt == WhenCanPreempt::kPreempt,
                                              queue.when_can_borrow == WhenCanBorrow::kTryNextFlavor));
  }
  return Status::Ok();
}

namespace {

// Whether `charge` on top of `held` takes `queue` beyond a limit of its own: above its nominal
// quota without a cohort (resources it lists), above nominal plus borrowing limit with one.
bool BeyondOwnLimits(const Queue& queue, Resources held, const Resources& charge) {
  (void)held.Add(charge);
  for (const auto& [r, amount] : held.Entries()) {
    if (queue.cohort.empty()) {
      const bool listed = std::find(queue.listed.begin(), queue.listed.end(), r) != queue.listed.end();
      if (listed && amount > queue.nominal.Get(r)) return true;
    } else if (auto limit = queue.borrowing_limit.find(r); limit != queue.borrowing_limit.end()) {
      if (amount > queue.nominal.Get(r) + limit->second) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<YieldedClaim> QueueQuota::ChargeNominatedPods(const Pod& pod, const QueueDirectory& directory,
                                                          const Queue& own, QuotaTracker& usage, StringSet& charged) {
  const std::shared_ptr<const Nominations> nominations = handle_->NominatedPods();
  const NominatedPodMap& nominated = nominations->pods;
  std::vector<YieldedClaim> yielded;
  if (nominated.empty()) return yielded;
  const std::string gang = handle_->GangKeyOf(pod);
  absl::MutexLock lock(&mu_);
  const bool same_snapshot = reserved_generation_ == handle_->snapshot().generation();
  for (const auto& [node_name, pods] : nominated) {
    const NodeInfo* node = handle_->snapshot().Get(node_name);
    if (node == nullptr) continue;
    for (const PodRef& p : pods) {
      if (p->Key() == pod.Key() || (!gang.empty() && handle_->GangKeyOf(*p) == gang)) continue;
      if (same_snapshot && reserved_.contains(p->Key())) continue;  // charged as reserved
      const Queue* queue = directory.QueueFor(*p).queue;
      if (queue == nullptr) continue;
      // A teammate of lower priority yields, as on a node (if the pod is placed only so, its
      // nomination is dropped: Reserve); another team's claim holds while its own queue's
      // limits admit it: one beyond its nominal quota and borrowing limit can never be placed.
      // (Judged by the cohort's room instead, the claim would come and go with the usage of
      // other queues, which a preemption's victims change: the claim of a reclaim under way
      // was dropped, and one dropped came back once its queue's pods were evicted.)
      const Resources charge = QueueCharge(directory, *queue, *p, *node);
      if (queue == &own && p->PriorityValue() < pod.PriorityValue()) {
        yielded.push_back({.key = p->Key(), .priority = p->PriorityValue(), .charge = charge});
        continue;
      }
      if (queue != &own && BeyondOwnLimits(*queue, usage.Usage(queue->name()), charge)) continue;
      usage.AddUsage(queue->name(), charge);
      charged.insert(p->Key());
    }
  }
  return yielded;
}

Status QueueQuota::Filter(const CycleState& state, const Pod&, const NodeInfo& node) const {
  const QuotaCycle* cycle = state.ReadValue<QuotaCycle>(kName);
  if (cycle == nullptr) return Status::Ok();  // no queue
  const FlavorPlacement placement = cycle->PlaceOn(node);
  if (!placement.in_flavor) return Status::Unresolvable(placement.why);
  const QuotaVerdict verdict = cycle->VerdictOn(node, placement);
  return verdict.fits ? Status::Ok() : Status::Unschedulable(verdict.reason);
}

bool QueueQuota::AppendFilterKey(const CycleState& state, const Pod&, std::string& key) const {
  const QuotaCycle* cycle = state.ReadValue<QuotaCycle>(kName);
  if (cycle == nullptr) return true;  // no queue: Filter passes every node
  if (!cycle->unit.empty()) return false;  // a unit's verdict reads its members still to place
  // What maps a node to its kind (the queue's flavors through ResultVersion), then the verdict
  // of each kind of the snapshot's nodes, borrowing included (a flavored queue's tiers read it).
  key += cycle->kind_key;
  for (const auto& [kind, v] : cycle->verdicts) {
    AppendKeyInt(kind.first, key);
    AppendKeyInt(kind.second, key);
    key += v.verdict.fits ? '+' : '-';
    key += v.verdict.borrows ? 'b' : '.';
    if (!v.verdict.fits) AppendKeyString(v.verdict.reason, key);
  }
  return true;
}

std::map<QueueQuota::NodeKind, Resources> QueueQuota::NodeKinds(const std::string& request,
                                                                const std::shared_ptr<const QueueDirectory>& directory,
                                                                KindOf kind_of) {
  const Snapshot& snapshot = handle_->snapshot();
  const std::vector<NodeInfo*>& nodes = snapshot.nodes();
  absl::MutexLock lock(&mu_);
  constexpr size_t kMaxRequests = 64;  // the least recently used is dropped beyond
  if (node_kinds_.size() >= kMaxRequests && !node_kinds_.contains(request)) {
    EraseLeastRecentlyUsed(node_kinds_, [](const NodeKindIndex& index) { return index.last_used; });
  }
  std::unique_ptr<NodeKindIndex>& slot = node_kinds_[request];
  if (slot == nullptr) slot = std::make_unique<NodeKindIndex>();
  NodeKindIndex& index = *slot;
  index.last_used = ++node_kinds_clock_;
  auto recount = [&](size_t i) {
    if (index.generation[i] == nodes[i]->generation()) return;
    if (const std::optional<NodeKind>& old = index.kind[i]; old.has_value()) {
      if (--index.kinds[*old].first == 0) index.kinds.erase(*old);
    }
    std::optional<std::pair<NodeKind, Resources>> now = kind_of(*nodes[i]);
    index.kind[i].reset();
    if (now.has_value()) {
      index.kind[i] = now->first;
      auto& [count, charge] = index.kinds[now->first];
      if (count++ == 0) charge = std::move(now->second);
    }
    index.generation[i] = nodes[i]->generation();
  };
  if (index.directory != directory) {  // the queues or flavors changed: every node's kind may
    index.directory = directory;
    index.log.Restart();
  }
  auto reset = [&] {
    index.generation.assign(nodes.size(), -1);
    index.kind.assign(nodes.size(), std::nullopt);
    index.kinds.clear();
  };
  index.log.Read(snapshot, index.generation.size(), reset, recount);
  std::map<NodeKind, Resources> out;
  for (const auto& [kind, entry] : index.kinds) out.emplace(kind, entry.second);
  return out;
}

Status QueueQuota::Reserve(CycleState& state, const Pod& pod, const std::string& node_name) {
  const QuotaCycle* cycle = state.ReadValue<QuotaCycle>(kName);
  if (cycle == nullptr) return Status::Ok();
  const NodeInfo* node = handle_->snapshot().Get(node_name);
  const FlavorPlacement placement = node != nullptr ? cycle->PlaceOn(*node)
                                                    : FlavorPlacement{.charge = cycle->ChargeFor(cycle->gpu.total_milli())};
  if (!placement.in_flavor) return Status::Unschedulable(placement.why);
  const Resources& charge = placement.charge;
  absl::MutexLock lock(&mu_);
  const int64_t generation = handle_->snapshot().generation();
  if (reserved_generation_ != generation) {
    reserved_.clear();  // the snapshot shows them now (assumed in the cache)
    reserved_generation_ = generation;
  }
  // Pods reserved after this cycle's PreFilter on the same snapshot: a gang's other members.
  QuotaTracker now = cycle->tracker;
  for (const auto& [key, r] : reserved_) {
    if (r.sequence > cycle->reserved_sequence && key != pod.Key()) now.AddUsage(r.queue, r.charge);
  }
  const QuotaVerdict verdict = now.Check(cycle->queue->name(), charge);
  if (!verdict.fits) return Status::Unschedulable(verdict.reason);
  // Placed only because teammates of lower priority yielded their nominations' quota: the claims
  // it needed, the least important first, are outgrown. Left standing, every other queue's cycle
  // would still count them, and keep from the other queues quota that the claims can no longer be
  // placed in (composition seed 7487: a preemptor evicted a third time for quota such a claim held).
  if (!cycle->yielded_pods.empty()) {
    QuotaTracker with_claims = cycle->AsOthersSee(now);
    std::vector<YieldedClaim> claims = cycle->yielded_pods;
    std::stable_sort(claims.begin(), claims.end(),
                     [](const YieldedClaim& a, const YieldedClaim& b) { return a.priority < b.priority; });
    std::vector<std::string> outgrown;
    for (const YieldedClaim& c : claims) {
      if (with_claims.Check(cycle->queue->name(), charge).fits) break;
      with_claims.SubUsage(cycle->queue->name(), c.charge);
      outgrown.push_back(c.key);
    }
    if (!outgrown.empty()) state.WriteValue(kOutgrownNominationsKey, std::move(outgrown));
  }
  reserved_[pod.Key()] =
      Reserved{.queue = cycle->queue->name(), .charge = charge, .sequence = ++reserved_sequence_};
  return Status::Ok();
}

void QueueQuota::Unreserve(CycleState&, const Pod& pod, const std::string&) {
  absl::MutexLock lock(&mu_);
  reserved_.erase(pod.Key());
}

std::string QueueQuota::PendingGroupOf(const Pod& pod) const { return queue_quota::PendingGroupOf(pod); }

size_t QueueQuota::ChooseNext(std::span<const QueuedPodInfo* const> heads,
                              absl::FunctionRef<void()> refresh_snapshot) {
  std::shared_ptr<const QueueDirectory> directory = handle_->Queues();
  if (directory == nullptr) return 0;
  QuotaTracker usage(directory.get());
  const bool any_queued = std::any_of(heads.begin(), heads.end(), [&](const QueuedPodInfo* head) {
    return directory->QueueFor(*head->pod).queue != nullptr;
  });
  if (!any_queued) return queue_quota::ChooseNextPending(heads, *directory, usage, nullptr);  // by priority
  refresh_snapshot();
  for (const auto& [queue, amount] : SnapshotUsage(directory)) usage.AddUsage(queue, amount);
  std::optional<QuotaTracker> decayed;
  {
    absl::MutexLock lock(&mu_);
    if (decay_ != nullptr) {
      decayed.emplace(directory.get());
      for (const auto& [queue, amount] : decay_->decayed()) decayed->AddUsage(queue, amount);
    }
  }
  return queue_quota::ChooseNextPending(heads, *directory, usage, decayed ? &*decayed : nullptr);
}

Status QueueQuota::AddPod(CycleState& state, const Pod&, const Pod& other,
                          const NodeInfo& node) const {
  QuotaCycle* cycle = state.ReadMutableValue<QuotaCycle>(kName);
  if (cycle == nullptr || !ChargesQuota(other) || cycle->nominated.contains(other.Key())) {
    return Status::Ok();  // not charged, or charged already (a nominated pod, everywhere)
  }
  const Queue* queue = cycle->directory->QueueFor(other).queue;
  if (queue == nullptr) return Status::Ok();
  const Resources charge = QueueCharge(*cycle->directory, *queue, other, node);
  cycle->tracker.AddUsage(queue->name(), charge);
  cycle->removed.erase(other.Key());
  cycle->MarkUnit(other, true, charge);
  cycle->Refresh();
  return Status::Ok();
}

Status QueueQuota::RemovePod(CycleState& state, const Pod&, const Pod& other,
                             const NodeInfo& node) const {
  QuotaCycle* cycle = state.ReadMutableValue<QuotaCycle>(kName);
  if (cycle == nullptr || !ChargesQuota(other) || cycle->nominated.contains(other.Key())) {
    return Status::Ok();
  }
  const Queue* queue = cycle->directory->QueueFor(other).queue;
  if (queue == nullptr) return Status::Ok();
  cycle->tracker.SubUsage(queue->name(), QueueCharge(*cycle->directory, *queue, other, node));
  cycle->removed.insert(other.Key());
  cycle->MarkUnit(other, false, Resources());
  cycle->Refresh();
  return Status::Ok();
}

std::vector<PodRef> QueueQuota::GangMembers(const std::string& gang) const {
  const Snapshot& snapshot = handle_->snapshot();
  absl::MutexLock lock(&mu_);
  if (gangs_generation_ != snapshot.generation()) {
    gangs_.clear();
    for (const NodeInfo* node : snapshot.nodes()) {
      for (const PodRef& p : node->pods()) {
        if (!ChargesQuota(*p)) continue;
        if (std::string key = handle_->GangKeyOf(*p); !key.empty()) gangs_[std::move(key)].push_back(p);
      }
    }
    gangs_generation_ = snapshot.generation();
  }
  auto it = gangs_.find(gang);
  return it == gangs_.end() ? std::vector<PodRef>() : it->second;
}

namespace {

// Where a queue within its nominal quota reclaims: the nearest cohort above it with a child
// subtree (other than its own) that borrows a resource the preemptor wants beyond that
// subtree's quota. Capacity goes back to the subtree that lent it, nearest first; kNone when
// nobody borrows.
int ReclaimLevel(const QuotaTracker& usage, const CohortTree& tree, int queue_node, const Resources& want) {
  int below = queue_node;
  for (int level = tree.node(queue_node).parent; level != CohortTree::kNone;
       below = level, level = tree.node(level).parent) {
    for (int child : tree.node(level).children) {
      if (child == below) continue;
      for (const auto& [r, amount] : usage.BorrowedOfNode(child).Entries()) {
        if (want.Get(r) > 0) return level;
      }
    }
  }
  return CohortTree::kNone;
}

}  // namespace

bool QueueQuota::MayAllowAtOrAbove(const CycleState& state, const Pod& preemptor, int32_t) const {
  const QuotaCycle* cycle = state.ReadValue<QuotaCycle>(kName);
  if (cycle == nullptr) return false;  // no queue: it defers on every victim
  // MayEvict compares spec.priority ("lower"); a preemptor without it is not judged here.
  if (!preemptor.priority.has_value()) return true;
  // Within the queue and with reclaim policy LowerPriority only lower victims are allowed.
  return !cycle->queue->cohort.empty() && cycle->queue->reclaim_within_cohort == ReclaimPolicy::kAny;
}

bool QueueQuota::DefersEvery(const CycleState& state, const Pod&) const {
  return state.ReadValue<QuotaCycle>(kName) == nullptr;  // as MayEvict's first answer
}

VictimVerdict QueueQuota::MayEvict(const CycleState& state, const Pod& preemptor,
                                   const Pod& victim, std::string* reason) const {
  const QuotaCycle* cycle = state.ReadValue<QuotaCycle>(kName);
  if (cycle == nullptr) return VictimVerdict::kDefer;  // the preemptor is in no queue
  const Queue* own = cycle->queue;
  const Queue* theirs = cycle->directory->QueueFor(victim).queue;
  if (theirs == nullptr) return VictimVerdict::kDefer;
  const NodeInfo* node = handle_->snapshot().Get(victim.node_name);
  if (node == nullptr) return VictimVerdict::kDeny;
  const bool lower = victim.PriorityValue() < preemptor.PriorityValue();
  const FlavorPlacement placement = cycle->PlaceOn(*node);
  if (!placement.in_flavor) return VictimVerdict::kDeny;  // the preemptor may not use the node
  const Resources& want = placement.charge;
  // A gang is judged by what its members take together (QuotaCycle::UnitCharge).
  const Resources unit = cycle->UnitCharge(placement);
  // Preemption for capacity follows priority, as kube-scheduler's: when the preemptor's queue
  // takes it without evicting anyone, within its nominal quota (or the victim is a teammate),
  // quota has no say. A borrowing preemptor never evicts by priority alone from another queue:
  // that queue could reclaim the room right back.
  // Within nominal counts the queue's nominations that yield to this pod (QuotaCycle::AsOthersSee).
  if (lower && cycle->base.Check(own->name(), unit).fits &&
      (theirs == own || cycle->AsOthersSee(cycle->base).WithinNominal(own->name(), unit))) {
    return VictimVerdict::kDefer;
  }
  // Otherwise quota is what the preemptor lacks, and the queues' preemption policies decide.
  if (theirs == own) {
    if (own->within_queue != WithinQueuePolicy::kLowerPriority || !lower) return VictimVerdict::kDeny;
    if (reason != nullptr) *reason = "within-queue";
    return VictimVerdict::kAllow;
  }
  if (own->cohort.empty() || theirs->cohort.empty()) return VictimVerdict::kDeny;
  if (own->reclaim_within_cohort == ReclaimPolicy::kNever) return VictimVerdict::kDeny;
  if (own->reclaim_within_cohort == ReclaimPolicy::kLowerPriority && !lower) {
    return VictimVerdict::kDeny;
  }
  // Within its nominal quota the preemptor reclaims what others borrow, from the nearest
  // subtree that borrows (ReclaimLevel). Above it, it borrows too, and takes borrowed capacity
  // only where the two subtrees meet, from the victim's side when that side's weighted dominant
  // share stays at least the preemptor's side's after the move (DRF at every level of the
  // tree, Kueue's LessThanOrEqualToFinalShare: hungry subtrees converge to shares by weight).
  // The preemptor's queue is judged by what it holds once its nominated pods are placed too,
  // and its unit (the members the plan placed so far set aside: `unit` counts them).
  const QuotaTracker own_now = cycle->UnitAside(cycle->AsOthersSee(cycle->tracker), placement);
  const bool reclaim = own_now.WithinNominal(own->name(), unit);
  const CohortTree& tree = cycle->directory->tree();
  const int own_node = tree.QueueNode(own->name());
  const int their_node = tree.QueueNode(theirs->name());
  if (own_node == CohortTree::kNone || their_node == CohortTree::kNone) return VictimVerdict::kDeny;
  const int meet = tree.CommonAncestor(own_node, their_node);
  if (meet == CohortTree::kNone) return VictimVerdict::kDeny;  // another tree
  if (reclaim && meet != ReclaimLevel(cycle->base, tree, own_node, want)) return VictimVerdict::kDeny;
  // The two subtrees whose shares are compared: the children of `meet` that hold each queue.
  const int own_side = tree.ChildToward(meet, own_node);
  const int their_side = tree.ChildToward(meet, their_node);
  // With usage decay on, the comparison is asked twice: with the shares now, and with each
  // side's share now plus the share its decayed usage gives (per mille, on its dominant part:
  // the one that used more recently counts as holding more). A victim goes only when both allow
  // it: decay may keep a pod from being taken, never take one that the shares now would hand
  // back (summed alone, a team with no past took beyond its share now, and the next preemption
  // by the instant shares took it back: more evictions than with decay off).
  const int64_t own_past = cycle->decayed ? cycle->decayed->ShareOfNode(own_side) : 0;
  const int64_t their_past = cycle->decayed ? cycle->decayed->ShareOfNode(their_side) : 0;
  FairShare own_share_after;
  if (!reclaim) {
    QuotaTracker after = own_now;
    after.AddUsage(own->name(), unit);
    own_share_after = after.FairShareOfNode(own_side);
  }

  // The victim's queue gives back what it borrows: walk its pods on this node in eviction
  // order, taking those that relieve what the preemptor needs while the queue still borrows it
  // (Kueue's rule: a queue that borrows may lose any pod, so a lender gets its whole nominal
  // back even when pod sizes do not divide; the last one may take the queue below nominal).
  // When sharing, the queue also stays at or above its nominal and above the preemptor's share.
  // The walk starts from the usage the cycle sees now: victims already chosen for the
  // preemptor's unit on other nodes (a gang's plan) are gone from it and not walked again.
  std::vector<const Pod*> mates;
  for (const PodRef& p : node->pods()) {
    if (cycle->directory->QueueFor(*p).queue == theirs && !cycle->removed.contains(p->Key())) mates.push_back(p.get());
  }
  std::sort(mates.begin(), mates.end(), EvictedBefore);
  // A pod in a gang goes with its mates on every node (preemption evicts a gang whole), so it
  // is judged by what they charge together: judged by its own charge, a gang on two nodes took
  // its queue below its nominal quota, and the queue reclaimed the room right back. Each gang
  // is decided once, where its first member comes in the walk.
  std::map<std::string, bool, std::less<>> gang_taken;
  auto charge_of = [&](const Pod& p, const std::string& gang) {
    if (gang.empty()) return QueueCharge(*cycle->directory, *theirs, p, *node);
    Resources together;
    for (const PodRef& m : GangMembers(gang)) {
      const NodeInfo* where = handle_->snapshot().Get(m->node_name);
      if (where == nullptr || cycle->removed.contains(m->Key()) || cycle->directory->QueueFor(*m).queue != theirs) continue;
      (void)together.Add(QueueCharge(*cycle->directory, *theirs, *m, *where));
    }
    return together;
  };
  const std::vector<std::string> governed = cycle->tracker.Governed(*own);  // sorted
  QuotaTracker theirs_after = cycle->tracker;
  for (const Pod* p : mates) {
    const std::string gang = handle_->GangKeyOf(*p);
    if (auto decided = gang_taken.find(gang); decided != gang_taken.end()) {
      if (p->Key() != victim.Key()) continue;
      if (!decided->second) return VictimVerdict::kDeny;
      if (reason != nullptr) *reason = reclaim ? "reclaim" : "fair-share";
      return VictimVerdict::kAllow;
    }
    const Resources charge = charge_of(*p, gang);
    const Resources used = theirs_after.Usage(theirs->name());
    bool keeps_nominal = true;
    bool relieves = false;
    for (const auto& [r, amount] : charge.Entries()) {
      if (want.Get(r) <= 0 || !std::binary_search(governed.begin(), governed.end(), r)) continue;
      if (used.Get(r) - amount < theirs->nominal.Get(r)) keeps_nominal = false;
      if (used.Get(r) > theirs->nominal.Get(r)) relieves = true;
    }
    bool take = relieves;
    if (take && !reclaim) {
      // Fair sharing takes only what the victim's side borrows where the queues meet: a side
      // within its subtree quota holds its own. (Two sides that both borrow nothing there have
      // shares of 0; with 0 >= 0 each could take the other's pods back and forth.)
      bool side_borrows = false;
      for (const auto& [r, amount] : theirs_after.BorrowedOfNode(their_side).Entries()) side_borrows |= want.Get(r) > 0;
      QuotaTracker trial = theirs_after;
      trial.SubUsage(theirs->name(), charge);
      const FairShare their_share_after = trial.FairShareOfNode(their_side);
      take = keeps_nominal && side_borrows && FairShare::Compare(their_share_after, own_share_after) >= 0 &&
             (!cycle->decayed ||
              FairShare::Compare(their_share_after.Plus(their_past), own_share_after.Plus(own_past)) >= 0);
    }
    if (!gang.empty()) gang_taken.emplace(gang, take);
    if (p->Key() == victim.Key()) {
      if (!take) return VictimVerdict::kDeny;
      if (reason != nullptr) *reason = reclaim ? "reclaim" : "fair-share";
      return VictimVerdict::kAllow;
    }
    if (take) theirs_after.SubUsage(theirs->name(), charge);
  }
  return VictimVerdict::kDeny;  // not on its node (stale)
}

}  // namespace tessel::queue_quota
