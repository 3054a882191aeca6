// Dry runs that explain a waiting pod (see explain.h).
#include "scheduler/core/explain.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "scheduler/framework/fit_error.h"
#include "scheduler/quota/flavor.h"
#include "scheduler/quota/quota_tracker.h"
#include "scheduler/quota/quota_usage.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

// Nodes whose rejection explain details, at most.
constexpr int kMaxNodeDetails = 10;

std::string Gpus(int64_t milli) {
  return StrCat(FormatResourceQuantity(kNvidiaGpu, milli), milli == 1000 ? " GPU" : " GPUs");
}

// How many pods like `pod` the free room of `node` holds (by the resources it requests).
int64_t CopiesThatFit(const Pod& pod, const NodeInfo& node) {
  const Resources free = node.Free();
  int64_t copies = -1;
  for (const auto& [name, amount] : pod.requests.Entries()) {
    if (amount <= 0) continue;
    const int64_t n = std::max<int64_t>(0, free.Get(name)) / amount;
    copies = copies < 0 ? n : std::min(copies, n);
  }
  return copies < 0 ? 1 : copies;
}

struct Trial {
  const NodeInfo* node = nullptr;
  std::vector<PodRef> victims;
};

// The fewest pods of `node` (lowest priority first, then the newest) whose going makes `pod`
// pass every filter there, beside the pods `nominated` there; nullopt when even an emptied node
// rejects it.
std::optional<Trial> TryFreeing(const Framework& fw, const Pod& pod, const NodeInfo& node,
                                const NominatedPodMap* nominated) {
  CycleState state;
  if (!fw.RunPreFilter(state, pod).ok()) return std::nullopt;
  std::vector<PodRef> candidates = node.pods();
  std::sort(candidates.begin(), candidates.end(), [](const PodRef& a, const PodRef& b) {
    if (a->PriorityValue() != b->PriorityValue()) return a->PriorityValue() < b->PriorityValue();
    if (a->meta.creation_timestamp != b->meta.creation_timestamp) {
      return a->meta.creation_timestamp > b->meta.creation_timestamp;
    }
    return a->Key() < b->Key();
  });
  NodeInfo copy = node;
  Trial trial{.node = &node};
  for (const PodRef& victim : candidates) {
    copy.RemovePod(victim->Key());
    (void)fw.RunPreFilterExtensionRemovePod(state, pod, *victim, copy);
    trial.victims.push_back(victim);
    if (fw.RunFiltersWithNominatedPods(state, pod, copy, nominated).ok()) return trial;
  }
  return std::nullopt;
}

std::string Preemptible(const Pod& preemptor, const Pod& victim) {
  if (!preemptor.MayPreempt()) return "preemptible: no, its preemptionPolicy is Never";
  if (victim.PriorityValue() >= preemptor.PriorityValue()) {
    return "preemptible: no, lower priority required";
  }
  return "preemptible: yes";
}

void ExplainGang(Scheduler& s, const Pod& pod, const gang::GangSpec& spec,
                 const std::vector<PodRef>& pending, const CycleState& state, const Framework& fw,
                 Explanation& e) {
  const std::string gang_key = spec.id.Key();
  int64_t waiting = 0;
  for (const PodRef& p : pending) waiting += s.GangKeyOf(*p) == gang_key;
  int64_t placeable = 0;
  int64_t largest = 0;
  std::string largest_on;
  for (const NodeInfo* node : s.snapshot().nodes()) {
    const int64_t free_gpus = std::max<int64_t>(0, node->Free().Get(kNvidiaGpu));
    if (free_gpus > largest || (free_gpus == largest && largest_on.empty())) {
      largest = free_gpus;
      largest_on = node->name();
    }
    if (fw.RunFilters(state, pod, *node).ok()) placeable += CopiesThatFit(pod, *node);
  }
  const int64_t need = std::max<int64_t>(spec.min_member, 1);
  placeable = std::min(placeable, std::max(need, waiting));
  e.nearest_kind = "gang";
  e.nearest_miss = StrCat("gang ", spec.id.Describe(), " needs ", need, " members of ",
                          Gpus(pod.requests.Get(kNvidiaGpu)), "; ", placeable,
                          " can be placed now; the largest free block is ",
                          Gpus(largest), largest_on.empty() ? "" : StrCat(" on ", largest_on));
  e.details.push_back(StrCat("members waiting: ", waiting, ", minMember: ", spec.min_member));
}

// The queues' usage now, summed from the snapshot's nodes.
QuotaTracker TrackerNow(Scheduler& s, const QueueDirectory& directory) {
  QueueUsage usage;
  for (const NodeInfo* node : s.snapshot().nodes()) AddNodeUsage(directory, *node, usage);
  QuotaTracker tracker(&directory);
  for (const auto& [name, amount] : usage) tracker.AddUsage(name, amount);
  return tracker;
}

// The quota figures of the queue for each governed resource the pod asks for.
void ExplainQuota(Scheduler& s, const Pod& pod, const Queue& queue, const Status& verdict,
                  Explanation& e) {
  std::shared_ptr<const QueueDirectory> directory = s.Queues();
  const QuotaTracker tracker = TrackerNow(s, *directory);
  e.nearest_kind = "quota";
  std::string first;
  std::string lent_line;  // the first resource it lends while within its nominal quota
  // A flavored queue's keys are per flavor ("nvidia.com/gpu@reserved", quota/flavor.h): each
  // flavor of a resource the pod asks for gets its line.
  for (const std::string& r : tracker.Governed(queue)) {
    const int64_t asked = pod.requests.Get(std::string(SplitQuotaKey(r).resource));
    if (asked <= 0) continue;
    const int64_t used = tracker.Usage(queue.name()).Get(r);
    const int64_t lent = tracker.Lent(queue.name()).Get(r);
    if (lent_line.empty() && lent > 0 && used + asked <= queue.nominal.Get(r)) {
      static constexpr std::string_view kPolicy[] = {"Never", "LowerPriority", "Any"};
      lent_line = StrCat("queue ", queue.name(), " is at ", FormatQuotaAmount(r, used), " of nominal ",
                         FormatQuotaAmount(r, queue.nominal.Get(r)), " ", DescribeQuotaKey(r), " and lends ",
                         FormatQuotaAmount(r, lent), " of it to cohort ", queue.cohort,
                         ": it waits for the borrowers' pods to finish (spec.preemption.reclaimWithinCohort: ",
                         kPolicy[static_cast<int>(queue.reclaim_within_cohort)], ")");
    }
    auto limit = queue.borrowing_limit.find(r);
    const std::string borrowing =
        queue.cohort.empty() ? "no cohort, so no borrowing"
        : limit == queue.borrowing_limit.end()
            ? "borrowing limit: none"
            : StrCat("borrowing limit ", FormatQuotaAmount(r, limit->second));
    std::string line = StrCat("queue ", queue.name(), " is at ", FormatQuotaAmount(r, used), " of nominal ",
                              FormatQuotaAmount(r, queue.nominal.Get(r)), " ", DescribeQuotaKey(r), ", ", borrowing);
    if (first.empty()) first = line;
    e.details.push_back(std::move(line));
  }
  e.details.push_back(StrJoin(verdict.reasons(), "; "));
  if (!lent_line.empty()) {
    e.nearest_miss = lent_line;
    return;
  }
  e.nearest_miss = StrCat(first.empty() ? StrCat("queue ", queue.name(), " is full") : first,
                          queue.cohort.empty()
                              ? ": it waits for its own pods to finish"
                              : StrCat(": it waits for its own pods to finish or for capacity in cohort ",
                                       queue.cohort));
}

// For a pod of a flavored queue: each flavor of the resource groups its request uses, in the
// queue's order, with the nodes that are in it for the pod: where it is tried (the first flavor
// whose quota takes it and that has a feasible node, node_tiers.h) and why each flavor was
// skipped (its quota, as QueueQuota checks it, or no node passing Filter).
void ExplainFlavors(Scheduler& s, const QueueDirectory& directory, const Pod& pod, const Queue& queue,
                    const NodeStatusMap& rejected, Explanation& e) {
  const QuotaTracker tracker = TrackerNow(s, directory);
  struct Seen {
    int64_t nodes = 0, feasible = 0;
    QuotaVerdict quota;                     // the charge on its first node
    std::map<std::string, int64_t> other;   // the nodes' rejections, by reason
  };
  std::map<std::string, Seen> by_flavor;
  for (const NodeInfo* node : s.snapshot().nodes()) {
    if (node->node() == nullptr) continue;
    const FlavorPlacement placement = directory.Place(queue, pod.requests, node->node()->meta.labels, &pod.tolerations);
    if (!placement.in_flavor) continue;
    std::set<std::string> flavors;  // one per group the charge uses
    for (const auto& [key, amount] : placement.charge.Entries()) {
      if (const std::string_view flavor = SplitQuotaKey(key).flavor; !flavor.empty()) flavors.emplace(flavor);
    }
    auto verdict = rejected.find(node->name());
    for (const std::string& flavor : flavors) {
      Seen& seen = by_flavor[flavor];
      if (seen.nodes++ == 0) seen.quota = tracker.Check(queue.name(), placement.charge);
      if (verdict == rejected.end()) {
        ++seen.feasible;
      } else {
        for (const std::string& reason : verdict->second.reasons()) ++seen.other[reason];
      }
    }
  }
  bool tried = false;
  for (const ResourceGroup& group : queue.resource_groups) {
    if (!group.UsedBy(pod.requests)) continue;
    for (const std::string& flavor : group.flavors) {
      const auto it = by_flavor.find(flavor);
      std::string line = StrCat("flavor ", flavor, ": ");
      if (it == by_flavor.end()) {
        StrAppend(&line, "skipped, it has no node the pod may use");
      } else if (const Seen& seen = it->second; !seen.quota.fits) {
        StrAppend(&line, "skipped, quota: ", seen.quota.reason);
      } else if (seen.feasible == 0) {
        std::vector<std::string> reasons;
        for (const auto& [reason, n] : seen.other) reasons.push_back(StrCat(n, " ", reason));
        StrAppend(&line, "skipped, no feasible node of ", seen.nodes, ": ", StrJoin(reasons, ", "));
      } else {
        StrAppend(&line, tried ? "also " : "tried: ", "fits on ", seen.feasible, " of ", Plural(seen.nodes, "node", "nodes"));
        tried = true;
      }
      e.details.push_back(std::move(line));
    }
  }
}

}  // namespace

Explanation Explain(Scheduler& s, std::string_view pod_key) {
  Explanation e;
  e.pod = std::string(pod_key);
  const std::vector<PodRef> pending = s.PendingPods();
  PodRef pod;
  for (const PodRef& p : pending) {
    if (p->Key() == pod_key) pod = p;
  }
  if (pod == nullptr) {
    if (std::optional<Cache::HeldPod> held = s.cache().Held(pod_key)) {
      e.state = "bound";
      e.node = held->node;
      e.nearest_kind = "fits";
      e.nearest_miss = StrCat("placed on ", held->node);
    } else {
      e.state = "unknown";
      e.nearest_kind = "none";
      e.nearest_miss = StrCat("the scheduler holds no pod ", pod_key,
                              " (not pending with schedulerName of one of its profiles, or gone)");
    }
    return e;
  }
  e.state = "pending";
  std::shared_ptr<const QueueDirectory> directory = s.Queues();
  const Queue* queue = directory ? directory->QueueFor(*pod).queue : nullptr;
  if (queue != nullptr) e.queue = queue->name();
  const Framework* fw = s.FrameworkFor(pod->scheduler_name);
  if (fw == nullptr) {
    e.nearest_kind = "none";
    e.nearest_miss = StrCat("no profile named ", pod->scheduler_name);
    return e;
  }
  s.RefreshSnapshot();
  const auto& nodes = s.snapshot().nodes();
  CycleState state;
  const Status pre = fw->RunPreFilter(state, *pod);
  // Room a preemption freed for a nominated pod is that pod's (unless this one is more
  // important), as a scheduling cycle filters (Scheduler::FindNodes).
  const std::shared_ptr<const Nominations> nominations = s.NominatedPods();
  const NominatedPodMap* nominated = nominations->pods.empty() ? nullptr : &nominations->pods;
  NodeStatusMap rejected;
  if (!pre.ok() && !pre.IsSkip()) {
    e.message = FormatPreFilterError(nodes.size(), pre);
    NodeReasonGroup all{.reason = StrJoin(pre.reasons(), ", ")};
    for (const NodeInfo* n : nodes) all.nodes.push_back(n->name());
    std::sort(all.nodes.begin(), all.nodes.end());
    e.reasons.push_back(std::move(all));
  } else {
    for (const NodeInfo* n : nodes) {
      Status st = fw->RunFiltersWithNominatedPods(state, *pod, *n, nominated);
      if (!st.ok()) rejected[n->name()] = std::move(st);
    }
    if (rejected.size() < nodes.size()) {
      e.nearest_kind = "fits";
      e.nearest_miss = StrCat("fits now on ", nodes.size() - rejected.size(), " of ", nodes.size(),
                              " nodes: it waits for its turn (or for the rest of its gang)");
    } else {
      e.message = FormatFitError(nodes.size(), rejected);
    }
    std::map<std::string, std::vector<std::string>> groups;
    int explained = 0;
    for (const auto& [node, status] : rejected) {
      for (const std::string& reason : status.reasons()) groups[reason].push_back(node);
      // The filters that can say more per node (which claim, request and selector): the first
      // kMaxNodeDetails nodes.
      if (explained >= kMaxNodeDetails) continue;
      const NodeInfo* info = s.snapshot().Get(node);
      std::string detail = info == nullptr ? std::string() : fw->ExplainRejection(status, state, *pod, *info);
      if (detail.empty()) continue;
      e.details.push_back(StrCat("on ", node, ": ", detail));
      ++explained;
    }
    for (auto& [reason, names] : groups) {
      std::sort(names.begin(), names.end());
      e.reasons.push_back({reason, std::move(names)});
    }
  }
  if (queue != nullptr && queue->flavored() && (pre.ok() || pre.IsSkip())) {
    ExplainFlavors(s, *directory, *pod, *queue, rejected, e);
  }
  if (e.nearest_kind == "fits") return e;

  const gang::GangBook::Resolution membership = s.gangs().Resolve(*pod);
  if (membership.membership == gang::GangBook::Membership::kGang) {
    ExplainGang(s, *pod, membership.spec, pending, state, *fw, e);
    return e;
  }
  // Some node would take it but for the quota (or the quota refused it before any node): the
  // quota is what holds it.
  const Status* quota = !pre.ok() && !pre.IsSkip() && fw->IsQuotaPlugin(pre.plugin()) ? &pre : nullptr;
  for (const auto& [node, status] : rejected) {
    if (quota == nullptr && fw->IsQuotaPlugin(status.plugin())) quota = &status;
  }
  if (queue != nullptr && quota != nullptr) {
    ExplainQuota(s, *pod, *queue, *quota, e);
    return e;
  }
  std::optional<Trial> best;
  for (const NodeInfo* n : nodes) {
    std::optional<Trial> t = TryFreeing(*fw, *pod, *n, nominated);
    if (t && (!best || t->victims.size() < best->victims.size())) best = std::move(t);
  }
  if (!best) {
    e.nearest_kind = "none";
    e.nearest_miss = "no node would take it even if emptied: a node that matches it and is big "
                     "enough must come";
    return e;
  }
  int64_t freed = 0;
  std::vector<std::string> held_by;
  for (const PodRef& v : best->victims) {
    freed += v->requests.Get(kNvidiaGpu);
    held_by.push_back(StrCat(v->Key(), ", priority ", v->PriorityValue(), ", ", Preemptible(*pod, *v)));
    e.details.push_back(StrCat("on ", best->node->name(), ": ", held_by.back()));
  }
  e.nearest_kind = "preemption";
  e.nearest_miss = StrCat("fits on ", best->node->name(), " if ",
                          freed > 0 ? Gpus(freed) : StrCat(best->victims.size(), " pod(s)"),
                          freed <= 0 ? " leave" : freed <= 1000 ? " is freed" : " are freed", " (held by ", StrJoin(held_by, "; "), ")");
  return e;
}

}  // namespace tessel
