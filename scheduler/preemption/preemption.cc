// Victim selection for priority preemption (see preemption.h).
#include "scheduler/preemption/preemption.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

#include "scheduler/framework/node_local.h"
#include "scheduler/preemption/disruption.h"
#include "scheduler/framework/what_if.h"
#include "scheduler/util/strings.h"

namespace tessel::preemption {
namespace {

// spec.priority when the pod carries it (every pod admitted by an API server does); else the
// context's resolution through its PriorityClass.
int32_t PriorityOf(const Context& ctx, const Pod& pod) {
  if (pod.priority.has_value()) return *pod.priority;
  return ctx.priority_of ? ctx.priority_of(pod) : pod.PriorityValue();
}

// Where the walk over `nodes` starts for this pod: stable for a seed and a pod, spread over the
// nodes across pods (kube-scheduler draws it at random).
uint32_t CandidateOffset(uint64_t seed, const Pod& pod, size_t nodes) {
  uint64_t h = 1469598103934665603ull ^ seed;  // FNV-1a over the UID (else namespace/name)
  auto mix = [&h](std::string_view text) {
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  };
  if (!pod.meta.uid.empty()) {
    mix(pod.meta.uid);
  } else {
    mix(pod.meta.namespace_);
    mix("/");
    mix(pod.meta.name);
  }
  return static_cast<uint32_t>(h % nodes);
}

bool Terminating(const Pod& pod) { return pod.meta.deletion_timestamp.has_value(); }

std::string GangOf(const Context& ctx, const Pod& pod) {
  return ctx.gang_of ? ctx.gang_of(pod) : std::string();
}

// Running pods by gang key, built on the first lookup: a cluster whose nodes hold no gang
// member, or a preemption that finds no pod it may evict, never walks every pod.
class GangIndex {
 public:
  explicit GangIndex(const Context& ctx) : ctx_(&ctx) {}
  const std::vector<PodRef>* Find(std::string_view gang) const {
    if (!index_.has_value()) {
      index_.emplace();
      for (const NodeInfo* info : ctx_->snapshot->nodes()) {
        for (const PodRef& p : info->pods()) {
          std::string key = GangOf(*ctx_, *p);
          if (!key.empty()) (*index_)[key].push_back(p);
        }
      }
    }
    auto it = index_->find(gang);
    return it == index_->end() ? nullptr : &it->second;
  }

 private:
  const Context* ctx_;
  mutable std::optional<StringKeyedMap<std::vector<PodRef>>> index_;
};

// Whether `victim` may be evicted for `preemptor`, and the reason to report.
bool MayEvict(const Context& ctx, const CycleState& state, const Pod& preemptor, const Pod& victim,
              std::string* reason) {
  if (victim.SameKey(preemptor)) return false;  // the pod itself
  if (ctx.may_disrupt_now && !ctx.may_disrupt_now(victim)) return false;
  if (ctx.victim_rule) return ctx.victim_rule(victim, reason);
  std::string policy_reason;
  switch (ctx.framework->RunVictimPolicies(state, preemptor, victim, &policy_reason)) {
    case VictimVerdict::kDeny:
      return false;
    case VictimVerdict::kAllow:
      *reason = policy_reason.empty() ? std::string("VictimPolicy") : policy_reason;
      return true;
    case VictimVerdict::kDefer:
      break;
  }
  if (PriorityOf(ctx, victim) >= PriorityOf(ctx, preemptor)) return false;
  *reason = std::string(kLowerPriority);
  return true;
}

// The disruptions each budget still allows, taken victim by victim (kube-scheduler's
// filterPodsWithPDBViolation): a pod the budget already counts as disrupted takes nothing.
class BudgetsLeft {
 public:
  explicit BudgetsLeft(const std::vector<PodDisruptionBudget>& pdbs) : pdbs_(&pdbs) {
    for (const PodDisruptionBudget& b : pdbs) allowed_.push_back(b.disruptions_allowed);
  }
  // Takes `pod`'s disruption from every budget covering it; true when one of them had none left.
  bool Take(const Pod& pod) {
    bool violates = false;
    for (size_t i = 0; i < pdbs_->size(); ++i) {
      const PodDisruptionBudget& b = (*pdbs_)[i];
      if (!b.Covers(pod)) continue;
      if (std::find(b.disrupted_pods.begin(), b.disrupted_pods.end(), pod.meta.name) != b.disrupted_pods.end()) {
        continue;
      }
      if (--allowed_[i] < 0) violates = true;
    }
    return violates;
  }

 private:
  const std::vector<PodDisruptionBudget>* pdbs_;
  std::vector<int64_t> allowed_;
};

// Pods that are evicted together: one pod, or a gang's members (here: on the node evaluated).
struct Unit {
  std::vector<PreemptionVictim> here;
  std::vector<PreemptionVictim> elsewhere;
  int32_t priority = std::numeric_limits<int32_t>::min();  // of its most important pod
  absl::Time start = absl::InfiniteFuture();                // earliest start among its pods
};

// kube-scheduler's MoreImportantPod, for units: higher priority, then started earlier.
bool MoreImportant(const Unit& a, const Unit& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.start < b.start;
}

bool MoreImportantVictim(const Context& ctx, const PreemptionVictim& a, const PreemptionVictim& b) {
  const int32_t pa = PriorityOf(ctx, *a.pod), pb = PriorityOf(ctx, *b.pod);
  if (pa != pb) return pa > pb;
  const absl::Time sa = StartOf(*a.pod), sb = StartOf(*b.pod);
  if (sa != sb) return sa < sb;
  return a.pod->Key() < b.pod->Key();
}

void Note(const Context& ctx, Unit& u, const PodRef& p) {
  u.priority = std::max(u.priority, PriorityOf(ctx, *p));
  u.start = std::min(u.start, StartOf(*p));
}

// The units of eligible victims on `node`. Pods in `exclude` (a gang's members placed by this
// plan) and pods already chosen (`gone`) are never victims. `node_local` turns false when the
// answer read more than the node's pods: a gang's mates, a PriorityClass (candidate_memo.h).
std::vector<Unit> EligibleUnits(const Context& ctx, const CycleState& state, const Pod& pod,
                                const NodeInfo& node, const GangIndex& gangs,
                                const StringSet& exclude, const StringSet& gone, bool& node_local) {
  std::vector<Unit> units;
  StringSet gangs_seen;
  for (const PodRef& p : node.pods()) {
    // A terminating pod is leaving already (the dry run counts its room as free): no victim.
    if (Terminating(*p) || (!exclude.empty() && exclude.contains(p->Key()))) continue;
    node_local = node_local && p->priority.has_value();
    // A pod that may not be evicted is no victim alone, and keeps its gang from being one (it is
    // among the members walked below unless it is gone): asked first, it spares the gang lookup.
    std::string reason;
    const bool may_evict = MayEvict(ctx, state, pod, *p, &reason);
    if (!may_evict && gone.empty()) continue;
    const std::string gang = GangOf(ctx, *p);
    if (gang.empty()) {
      if (!may_evict) continue;
      Unit u;
      u.here.push_back({p, std::move(reason)});
      Note(ctx, u, p);
      units.push_back(std::move(u));
      continue;
    }
    node_local = false;
    if (!gangs_seen.insert(gang).second) continue;
    // The whole gang, or none of it.
    const std::vector<PodRef>* members = gangs.Find(gang);
    if (members == nullptr) continue;
    Unit u;
    bool all = true;
    for (const PodRef& m : *members) {
      if (gone.contains(m->Key()) || Terminating(*m)) continue;
      std::string reason;
      if (exclude.contains(m->Key()) || !MayEvict(ctx, state, pod, *m, &reason)) {
        all = false;
        break;
      }
      (m->node_name == node.name() ? u.here : u.elsewhere).push_back({m, std::move(reason)});
      Note(ctx, u, m);
    }
    if (all && !u.here.empty()) units.push_back(std::move(u));
  }
  std::stable_sort(units.begin(), units.end(), MoreImportant);
  return units;
}

// kube-scheduler's filterPodsWithPDBViolation, per unit: walking the units most important first,
// a unit violates when one of its pods finds a covering budget exhausted.
std::vector<bool> ViolatingUnits(const std::vector<PodDisruptionBudget>& pdbs,
                                 const std::vector<Unit>& units) {
  BudgetsLeft left(pdbs);
  std::vector<bool> out;
  for (const Unit& u : units) {
    bool violates = false;
    for (const auto* list : {&u.here, &u.elsewhere}) {
      for (const PreemptionVictim& v : *list) violates |= left.Take(*v.pod);
    }
    out.push_back(violates);
  }
  return out;
}

// The dry run for `pod` on the plan's node `node_name`: a transaction on `plan`, rolled back
// whatever it finds. `node_local` (out, when given): whether the answer read nothing but the
// node's pods.
std::optional<Candidate> SelectVictims(const Context& ctx, const CycleState& state, const Pod& pod,
                                       const std::string& node_name, const GangIndex& gangs,
                                       WhatIf& plan, const StringSet& exclude,
                                       const StringSet& gone, bool rejected_as_is,
                                       bool* node_local = nullptr) {
  const Framework& fw = *ctx.framework;
  const NodeInfo& node = *plan.Get(node_name);
  bool local = true;
  std::vector<Unit> units = EligibleUnits(ctx, state, pod, node, gangs, exclude, gone, local);
  if (node_local != nullptr) *node_local = local;
  const bool leaving = std::any_of(node.pods().begin(), node.pods().end(),
                                   [](const PodRef& p) { return Terminating(*p); });
  // Nothing to take out: the dry run would filter the node exactly as the cycle just did.
  if (units.empty() && !leaving && rejected_as_is) return std::nullopt;
  // The dry run below removes every eligible victim and the terminating pods first: when the
  // filters' arithmetic says even that room cannot hold the pod, no copy is made.
  Resources freed;
  bool summed = Framework::AddTerminatingRequests(node, freed);  // an overflow screens nothing out
  for (const Unit& u : units) {
    for (const PreemptionVictim& v : u.here) summed = summed && freed.Add(v.pod->requests).ok();
  }
  if (summed && !fw.MayFitAfterFreeing(state, pod, node, freed)) return std::nullopt;
  const std::vector<PodRef> terminating = [&] {
    std::vector<PodRef> out;
    for (const PodRef& p : node.pods()) {
      if (Terminating(*p)) out.push_back(p);
    }
    return out;
  }();
  // The reprieve's arithmetic asks about the node as the dry run found it: the plan changes its
  // own copy of a node it changed before, so that one is kept aside.
  std::optional<NodeInfo> kept_aside;
  if (summed && plan.Changed(node_name)) kept_aside.emplace(node);
  const NodeInfo& at_start = kept_aside.has_value() ? *kept_aside : node;
  struct RollBack {
    WhatIf& plan;
    WhatIf::Mark mark;
    ~RollBack() { plan.Rollback(mark); }
  } roll_back{plan, plan.Checkpoint()};
  CycleState s = state.Clone();
  // The node as it will be once its terminating pods are gone: their room goes to the pods
  // nominated here (RunFiltersWithNominatedPods adds those at least as important) and then to
  // this pod, so a preemptor never evicts for room that is being freed already. A node where
  // that room is enough is a candidate without victims: the pod is nominated there and waits.
  if (leaving) {
    const WhatIf::Mark before = plan.Now();
    for (const PodRef& p : terminating) plan.Evict(p);
    if (!plan.Replay(fw, s, pod, before).ok()) return std::nullopt;
  }
  // Takes a unit's victims out of (or puts them back into) the plan, and tells the pod's state
  // of the victims here and of gang members elsewhere (whose nodes the dry run does not filter).
  auto apply = [&](const Unit& u, bool adding) -> bool {
    const WhatIf::Mark before = plan.Now();
    for (const PreemptionVictim& v : u.here) {
      if (adding) {
        plan.Place(v.pod);
      } else {
        plan.Evict(v.pod);
      }
    }
    if (!plan.Replay(fw, s, pod, before).ok()) return false;
    for (const PreemptionVictim& v : u.elsewhere) {
      const NodeInfo* where = plan.Get(v.pod->node_name);
      if (where == nullptr) continue;
      const Status st = adding ? fw.RunPreFilterExtensionAddPod(s, pod, *v.pod, *where)
                               : fw.RunPreFilterExtensionRemovePod(s, pod, *v.pod, *where);
      if (!st.ok()) return false;
    }
    return true;
  };
  auto remove = [&](const Unit& u) { return apply(u, /*adding=*/false); };
  auto add = [&](const Unit& u) { return apply(u, /*adding=*/true); };
  auto fits = [&] { return plan.Fits(fw, s, pod, *plan.Get(node_name)).ok(); };

  for (const Unit& u : units) {
    if (!remove(u)) return std::nullopt;
  }
  if (!fits()) return std::nullopt;

  // Reprieve: budget-protected units first, then the others, each most important first.
  const std::vector<bool> violating = ViolatingUnits(ctx.pdbs, units);
  std::vector<const Unit*> evicted;
  for (bool pass_violating : {true, false}) {
    for (size_t i = 0; i < units.size(); ++i) {
      if (violating[i] != pass_violating) continue;
      // Its room taken back, the pod may not fit by the filters' arithmetic alone: then the
      // unit stays out without a filter run (the run would say no).
      Resources kept_out = freed;
      for (const PreemptionVictim& v : units[i].here) kept_out.Sub(v.pod->requests);
      if (!summed || fw.MayFitAfterFreeing(state, pod, at_start, kept_out)) {
        if (!add(units[i])) return std::nullopt;
        if (fits()) {  // reprieved
          freed = kept_out;
          continue;
        }
        if (!remove(units[i])) return std::nullopt;
      }
      evicted.push_back(&units[i]);
    }
  }
  Candidate c{.node = node_name};
  for (const Unit* u : evicted) {
    c.victims.insert(c.victims.end(), u->here.begin(), u->here.end());
  }
  std::sort(c.victims.begin(), c.victims.end(),
            [&](const auto& a, const auto& b) { return MoreImportantVictim(ctx, a, b); });
  std::vector<PreemptionVictim> elsewhere;
  for (const Unit* u : evicted) elsewhere.insert(elsewhere.end(), u->elsewhere.begin(), u->elsewhere.end());
  std::sort(elsewhere.begin(), elsewhere.end(),
            [&](const auto& a, const auto& b) { return MoreImportantVictim(ctx, a, b); });
  c.victims.insert(c.victims.end(), elsewhere.begin(), elsewhere.end());
  c.pdb_violations = CountPdbViolations(ctx.pdbs, c.victims);
  return c;
}

struct Summary {
  int64_t highest = std::numeric_limits<int64_t>::min();
  int64_t sum = 0;
  absl::Time start_of_highest = absl::InfinitePast();  // earliest start among the highest
};

Summary Summarize(const Context& ctx, const Candidate& c) {
  Summary s;
  for (const PreemptionVictim& v : c.victims) {
    const int64_t p = PriorityOf(ctx, *v.pod);
    // Shifted to be positive, as kube-scheduler does, so that more victims never sum less.
    s.sum += p + (int64_t{1} << 31);
    s.highest = std::max(s.highest, p);
  }
  bool first = true;
  for (const PreemptionVictim& v : c.victims) {
    if (PriorityOf(ctx, *v.pod) != s.highest) continue;
    const absl::Time t = StartOf(*v.pod);
    if (first || t < s.start_of_highest) s.start_of_highest = t;
    first = false;
  }
  return s;
}

}  // namespace

std::string PreemptionMessage(const Pod& preemptor, int32_t priority, std::string_view node,
                              const PreemptionVictim& victim) {
  std::string message = StrCat("preempted by ", preemptor.Key(), " (priority ", priority, ")");
  if (!node.empty()) StrAppend(&message, " on node ", node);
  if (!victim.reason.empty()) StrAppend(&message, " (", victim.reason, ")");
  return message;
}

namespace {

std::string Ordinal(int n) {
  const int tens = n % 100;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : n % 10 == 1              ? "st"
                       : n % 10 == 2              ? "nd"
                       : n % 10 == 3              ? "rd"
                                                  : "th";
  return StrCat(n, suffix);
}

}  // namespace

absl::Status EvictVictim(Handle& handle, const PreemptionVictim& victim, std::string_view message,
                         DisruptionKind kind) {
  ClusterApi* api = handle.api();
  if (api == nullptr) return absl::OkStatus();
  const bool move = kind == DisruptionKind::kMove;
  DisruptionLedger* ledger = handle.disruptions();
  const absl::Time now = handle.clock().Now();
  const std::string workload = WorkloadKey(*victim.pod);
  std::string told(message);
  if (ledger != nullptr) {
    const int nth = ledger->Count(workload, kind, now - kDisruptionMemory) + 1;
    StrAppend(&told, " (its ", Ordinal(nth), move ? " move" : " preemption", " in ",
              absl::FormatDuration(kDisruptionMemory), ")");
  }
  absl::Status st = api->Evict(*victim.pod, told);
  if (st.ok()) {
    api->RecordEvent(*victim.pod, "Normal", move ? "Moved" : "Preempted", told);
    api->MarkDisruptionTarget(*victim.pod, move ? "ConsolidationByScheduler" : "PreemptionByScheduler", told);
    handle.PodEvicted(*victim.pod);
    if (ledger != nullptr) ledger->Record(workload, kind, now);
  }
  return st;
}

Context ContextFor(const Handle& handle, const Framework* fw) {
  const Handle* h = &handle;
  return Context{.framework = fw,
                 .snapshot = &handle.snapshot(),
                 .pdbs = handle.PodDisruptionBudgets(),
                 .nominations = handle.NominatedPods(),
                 .gang_of = [h](const Pod& p) { return h->GangKeyOf(p); },
                 .priority_of = [h](const Pod& p) { return h->PriorityOf(p); },
                 .priority_floor = handle.PriorityFloor(),
                 .seed = handle.seed(),
                 .objects = handle.Objects()};
}

EvictionOutcome EvictInOrder(Handle& handle, const std::vector<PodDisruptionBudget>& pdbs,
                             std::vector<PreemptionVictim> victims,
                             const std::function<std::string(const PreemptionVictim&)>& message_of,
                             DisruptionKind kind) {
  EvictionOutcome out;
  // A plan its budgets refuse as they stand is not started: the eviction API would refuse one
  // of its victims after the others were gone, evicted for nothing.
  if (CountPdbViolations(pdbs, victims) > 0) {
    out.refused = true;
    return out;
  }
  for (const PreemptionVictim& v : EvictionOrder(pdbs, std::move(victims))) {
    absl::Status st = EvictVictim(handle, v, message_of(v), kind);
    if (st.ok() || absl::IsNotFound(st)) {  // NotFound: already gone, as good as evicted
      out.evicted.push_back(v);
      continue;
    }
    if (absl::IsResourceExhausted(st)) {
      out.refused = true;
    } else {
      out.error = absl::Status(st.code(), StrCat("evicting pod ", v.pod->Key(), ": ", st.message()));
    }
    break;
  }
  return out;
}

bool EligibleToPreempt(const Context& ctx, const Pod& pod, const NodeStatusMap& rejected,
                       std::string* why) {
  if (!pod.MayPreempt()) {
    *why = "not eligible due to preemptionPolicy=Never.";
    return false;
  }
  if (pod.nominated_node_name.empty()) return true;
  if (auto it = rejected.find(pod.nominated_node_name);
      it != rejected.end() && it->second.code() == Code::kUnschedulableAndUnresolvable) {
    return true;  // its nominated node cannot take it any more: look elsewhere
  }
  if (const NodeInfo* node = ctx.snapshot->Get(pod.nominated_node_name)) {
    for (const PodRef& p : node->pods()) {
      // Any terminating pod: its room is being freed. (kube-scheduler waits only for pods of
      // lower priority, its only victims; a queue's reclaim may have evicted any priority, and
      // whether a policy would allow it again changes as the victims' charges go.)
      if (p->meta.deletion_timestamp.has_value()) {
        *why = "not eligible due to a terminating pod on the nominated node.";
        return false;
      }
    }
  }
  return true;
}

std::optional<Candidate> SelectVictimsOnNode(const Context& ctx, const CycleState& state,
                                             const Pod& pod, const NodeInfo& node) {
  const GangIndex gangs(ctx);
  WhatIf plan(ctx.snapshot, {.nominated = ctx.nominated()});
  return SelectVictims(ctx, state, pod, node.name(), gangs, plan, {}, {}, /*rejected_as_is=*/false);
}

bool BetterCandidate(const Context& ctx, const Candidate& a, const Candidate& b) {
  if (a.pdb_violations != b.pdb_violations) return a.pdb_violations < b.pdb_violations;
  const Summary sa = Summarize(ctx, a), sb = Summarize(ctx, b);
  if (sa.highest != sb.highest) return sa.highest < sb.highest;
  if (sa.sum != sb.sum) return sa.sum < sb.sum;
  if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
  if (sa.start_of_highest != sb.start_of_highest) return sa.start_of_highest > sb.start_of_highest;
  return a.node < b.node;
}

size_t CandidateLimits::For(size_t nodes) const {
  size_t n = nodes * static_cast<size_t>(std::max(min_percentage, 0)) / 100;
  n = std::max(n, static_cast<size_t>(std::max(min_absolute, 0)));
  return std::min(n, nodes);
}

namespace {

// What of the budgets a dry run reads: which pods each covers and what it allows.
void AppendBudgets(const std::vector<PodDisruptionBudget>& pdbs, std::string& key) {
  for (const PodDisruptionBudget& b : pdbs) {
    AppendKeyString(b.meta.namespace_, key);
    AppendKeyString(b.meta.name, key);
    AppendKeyInt(b.disruptions_allowed, key);
    for (const std::string& d : b.disrupted_pods) AppendKeyString(d, key);
    key += b.selector.has_value() ? '+' : '-';
    if (!b.selector.has_value()) continue;
    for (const auto& [k, v] : b.selector->match_labels) {
      AppendKeyString(k, key);
      AppendKeyString(v, key);
    }
    for (const LabelSelectorRequirement& r : b.selector->match_expressions) {
      AppendKeyString(r.key, key);
      AppendKeyInt(static_cast<int64_t>(r.op), key);
      for (const std::string& v : r.values) AppendKeyString(v, key);
    }
    key += ';';
  }
}

// The memo's table for this preemptor when its dry runs read of it only what its node-local
// Filters read and its priority (candidate_memo.h); null otherwise.
CandidateMemo::Table* MemoTableFor(const Context& ctx, const CycleState& state, const Pod& pod,
                                   int32_t priority) {
  if (ctx.memo == nullptr || ctx.nominations == nullptr ||
      !ctx.framework->VictimPoliciesDeferEvery(state, pod)) {
    return nullptr;
  }
  std::string key;
  if (!ctx.framework->AppendNodeLocalFilterKey(state, pod, key)) return nullptr;
  key += '#';
  AppendKeyInt(priority, key);
  AppendKeyInt(static_cast<int64_t>(reinterpret_cast<intptr_t>(ctx.framework)), key);
  AppendBudgets(ctx.pdbs, key);
  return &ctx.memo->For(key, ctx.snapshot->size());
}

// Whether the pod is among those nominated to `node` (it does not count itself there).
bool NominatedHere(const Context& ctx, const Pod& pod, const NodeInfo& node) {
  auto it = ctx.nominations->pods.find(node.name());
  return it != ctx.nominations->pods.end() &&
         std::any_of(it->second.begin(), it->second.end(), [&](const PodRef& p) { return p->SameKey(pod); });
}

}  // namespace

std::vector<Candidate> FindCandidates(const Context& ctx, const CycleState& state, const Pod& pod,
                                      const NodeStatusMap& rejected) {
  const std::vector<NodeInfo*>& nodes = ctx.snapshot->nodes();
  if (nodes.empty()) return {};
  const int32_t priority = PriorityOf(ctx, pod);
  const VictimIndex::Query query{
      .priority = priority,
      .floor = ctx.priority_floor,
      .any_priority = ctx.framework->VictimPoliciesMayAllowAtOrAbove(state, pod, priority)};
  const bool indexed = ctx.index != nullptr && ctx.index->InStepWith(*ctx.snapshot);
  if (indexed && !ctx.index->MayHaveVictims(query)) return {};
  const GangIndex gangs(ctx);
  WhatIf plan(ctx.snapshot, {.nominated = ctx.nominated()});  // each dry run rolled back
  const size_t wanted = ctx.limits.For(nodes.size());
  const uint32_t offset = wanted >= nodes.size() ? 0 : CandidateOffset(ctx.seed, pod, nodes.size());
  CandidateMemo::Table* memo = MemoTableFor(ctx, state, pod, query.priority);
  std::vector<Candidate> out;
  size_t non_violating = 0;
  auto visit = [&](uint32_t pos) {
    const NodeInfo& node = *nodes[pos];
    auto it = rejected.find(node.name());
    if (it != rejected.end() && it->second.code() == Code::kUnschedulableAndUnresolvable) return true;
    // Every node was rejected by the cycle's filters (FindCandidates runs when none fits).
    // Not where the pod is nominated itself: an equal preemptor's answer counted it there.
    CandidateMemo::Table* table = memo != nullptr && !NominatedHere(ctx, pod, node) ? memo : nullptr;
    const uint64_t version = table == nullptr ? 0 : ctx.nominations->VersionOf(node.name());
    const std::optional<Candidate>* kept = table == nullptr ? nullptr : table->Find(node, version);
    std::optional<Candidate> c;
    if (kept != nullptr) {
      c = *kept;
    } else {
      bool node_local = false;
      c = SelectVictims(ctx, state, pod, node.name(), gangs, plan, {}, {}, /*rejected_as_is=*/true, &node_local);
      if (table != nullptr && node_local) table->Keep(node, version, c);
    }
    if (table != nullptr) ctx.memo->Count(kept != nullptr);
    if (!c) return true;
    non_violating += c->pdb_violations == 0;
    out.push_back(*std::move(c));
    return non_violating == 0 || out.size() < wanted;  // kube-scheduler's DryRunPreemption
  };
  if (indexed) {
    ctx.index->ForEachFrom(offset, query, visit);
  } else {
    for (size_t k = 0; k < nodes.size(); ++k) {
      if (!visit(static_cast<uint32_t>((offset + k) % nodes.size()))) break;
    }
  }
  std::sort(out.begin(), out.end(),
            [&](const Candidate& a, const Candidate& b) { return BetterCandidate(ctx, a, b); });
  return out;
}

int64_t CountPdbViolations(const std::vector<PodDisruptionBudget>& pdbs,
                           const std::vector<PreemptionVictim>& victims) {
  BudgetsLeft left(pdbs);
  int64_t violations = 0;
  for (const PreemptionVictim& v : victims) violations += left.Take(*v.pod);
  return violations;
}

std::vector<PreemptionVictim> EvictionOrder(const std::vector<PodDisruptionBudget>& pdbs,
                                            std::vector<PreemptionVictim> victims) {
  std::stable_partition(victims.begin(), victims.end(), [&](const PreemptionVictim& v) {
    return std::any_of(pdbs.begin(), pdbs.end(),
                       [&](const PodDisruptionBudget& b) { return b.Covers(*v.pod); });
  });
  return victims;
}

namespace {

// Member after member, the best candidate node among `nodes` (see preemption.h), on `plan`:
// the victims chosen evicted, the members placed.
GangPreemptionPlan PlanOnNodes(const Context& ctx, const std::vector<PodRef>& members,
                               const std::vector<const CycleState*>& states, int32_t need,
                               const std::vector<NodeInfo*>& nodes, WhatIf& plan_on) {
  GangPreemptionPlan plan;
  const Framework& fw = *ctx.framework;
  const GangIndex gangs(ctx);
  StringSet placed_keys, gone;
  int32_t placed = 0;
  for (size_t i = 0; i < members.size() && placed < need; ++i) {
    const Pod& member = *members[i];
    CycleState s = states[i]->Clone();
    if (!plan_on.Replay(fw, s, member).ok()) continue;
    std::optional<Candidate> best;
    // Each member's search stops after as many candidates as a single pod's (CandidateLimits).
    const size_t wanted = std::max<size_t>(ctx.limits.For(nodes.size()), 1);
    size_t found = 0;
    for (const NodeInfo* snap_node : nodes) {
      auto c = SelectVictims(ctx, s, member, snap_node->name(), gangs, plan_on, placed_keys, gone,
                             /*rejected_as_is=*/false);
      if (!c) continue;
      if (!best || BetterCandidate(ctx, *c, *best)) best = std::move(c);
      if (++found >= wanted) break;
    }
    if (!best) continue;
    for (PreemptionVictim& v : best->victims) {
      if (!gone.insert(v.pod->Key()).second) continue;
      plan_on.Evict(v.pod);
      plan.victims.push_back(std::move(v));
    }
    plan_on.Place(member, best->node);
    placed_keys.insert(member.Key());
    plan.targets.push_back({members[i], best->node});
    ++placed;
  }
  plan.feasible = placed >= need;
  return plan;
}

// Where `need` members fit on `plan` (the victims evicted there), on the nodes the plan touched
// (no further eviction); nullopt when they do not. Each member takes the node the gang placement
// heuristic prefers (BetterFill: the fullest that fits). The members' placements are rolled
// back: the plan is left as it was given.
std::optional<std::vector<GangMemberTarget>> FitWith(const Context& ctx, WhatIf& plan,
                                                     const std::vector<PodRef>& members,
                                                     const std::vector<const CycleState*>& states,
                                                     int32_t need, const std::vector<std::string>& touched) {
  const Framework& fw = *ctx.framework;
  const WhatIf::Mark start = plan.Checkpoint();
  std::vector<GangMemberTarget> targets;
  for (size_t i = 0; i < members.size() && static_cast<int32_t>(targets.size()) < need; ++i) {
    CycleState s = states[i]->Clone();
    if (!plan.Replay(fw, s, *members[i]).ok()) continue;
    const NodeInfo* best = nullptr;
    FillOption best_option;
    for (const std::string& name : touched) {
      const NodeInfo* node = plan.Get(name);
      if (node == nullptr) continue;
      const FillOption option{.fullness = Fullness(*node), .order = ctx.snapshot->PositionOf(name)};
      if (best != nullptr && !BetterFill(option, best_option, 1)) continue;
      if (!plan.Fits(fw, s, *members[i], *node).ok()) continue;
      best = node;
      best_option = option;
    }
    if (best == nullptr) continue;
    plan.Place(*members[i], best->name());
    targets.push_back({members[i], best->name()});
  }
  plan.Rollback(start);
  if (static_cast<int32_t>(targets.size()) < need) return std::nullopt;
  return targets;
}

// The gang's reprieve: victims chosen for one member may be unneeded once later members freed
// room elsewhere (a whole gang evicted frees every node it ran on). Victim units (a pod, or a
// gang) are put back most important first; each stays if the members still fit.
void Reprieve(const Context& ctx, const std::vector<PodRef>& members,
              const std::vector<const CycleState*>& states, int32_t need, GangPreemptionPlan& plan) {
  std::vector<std::string> touched;
  // Not nodes outside the plan's screen, where only a victim's gang mates ran.
  auto touch = [&](const std::string& node) {
    if (std::find(touched.begin(), touched.end(), node) != touched.end()) return;
    const NodeInfo* info = ctx.gang_node_screen ? ctx.snapshot->Get(node) : nullptr;
    if (info == nullptr || ctx.gang_node_screen(*info)) touched.push_back(node);
  };
  for (const PreemptionVictim& v : plan.victims) touch(v.pod->node_name);
  for (const GangMemberTarget& t : plan.targets) touch(t.node);
  // Units, most important first.
  std::vector<std::vector<PreemptionVictim>> units;
  StringKeyedMap<size_t> unit_of_gang;
  for (const PreemptionVictim& v : plan.victims) {
    const std::string gang = GangOf(ctx, *v.pod);
    if (gang.empty()) {
      units.push_back({v});
      continue;
    }
    auto [it, fresh] = unit_of_gang.emplace(gang, units.size());
    if (fresh) units.emplace_back();
    units[it->second].push_back(v);
  }
  auto top = [&](const std::vector<PreemptionVictim>& u) {
    return *std::min_element(u.begin(), u.end(), [&](const auto& a, const auto& b) {
      return MoreImportantVictim(ctx, a, b);
    });
  };
  std::stable_sort(units.begin(), units.end(), [&](const auto& a, const auto& b) {
    return MoreImportantVictim(ctx, top(a), top(b));
  });
  // Every victim evicted on a plan, then units put back one at a time: a unit stays back
  // (reprieved) if the members still fit, else the plan rolls back to before it.
  WhatIf plan_on(ctx.snapshot, {.nominated = ctx.nominated()});
  for (const PreemptionVictim& v : plan.victims) plan_on.Evict(v.pod);
  std::vector<bool> kept(units.size(), false);
  for (size_t u = 0; u < units.size(); ++u) {
    const WhatIf::Mark before = plan_on.Checkpoint();
    for (const PreemptionVictim& v : units[u]) plan_on.Place(v.pod);
    std::optional<std::vector<GangMemberTarget>> fit = FitWith(ctx, plan_on, members, states, need, touched);
    if (!fit) {
      plan_on.Rollback(before);
      continue;
    }
    kept[u] = true;
    std::vector<PreemptionVictim> rest;
    for (size_t k = 0; k < units.size(); ++k) {
      if (!kept[k]) rest.insert(rest.end(), units[k].begin(), units[k].end());
    }
    plan.victims = std::move(rest);
    plan.targets = *std::move(fit);
  }
}

}  // namespace

GangPreemptionPlan PlanGangPreemption(const Context& ctx, const std::vector<PodRef>& members,
                                      const std::vector<const CycleState*>& states, int32_t need,
                                      const std::string& topology_key) {
  // Compact gangs: the plan is made within each domain of the label, and the best one wins.
  std::map<std::string, std::vector<NodeInfo*>> domains;
  if (topology_key.empty() && !ctx.gang_node_screen) {
    domains.emplace("", ctx.snapshot->nodes());
  } else {
    for (NodeInfo* n : ctx.snapshot->nodes()) {
      if (ctx.gang_node_screen && !ctx.gang_node_screen(*n)) continue;
      if (topology_key.empty()) {
        domains[""].push_back(n);
        continue;
      }
      auto it = n->node()->meta.labels.find(topology_key);
      if (it != n->node()->meta.labels.end()) domains[it->second].push_back(n);
    }
  }
  std::optional<GangPreemptionPlan> best;
  std::optional<Candidate> best_cost;
  int32_t most = 0;
  for (const auto& [domain, nodes] : domains) {
    WhatIf plan_on(ctx.snapshot, {.nominated = ctx.nominated()});
    GangPreemptionPlan plan = PlanOnNodes(ctx, members, states, need, nodes, plan_on);
    most = std::max(most, static_cast<int32_t>(plan.targets.size()));
    if (!plan.feasible) continue;
    if (!plan.victims.empty()) Reprieve(ctx, members, states, need, plan);
    plan.pdb_violations = CountPdbViolations(ctx.pdbs, plan.victims);
    // The domains compared as candidates are (fewest budget violations, least important victims).
    Candidate cost{.node = domain, .victims = plan.victims, .pdb_violations = plan.pdb_violations};
    if (!best || BetterCandidate(ctx, cost, *best_cost)) {
      best = std::move(plan);
      best_cost = std::move(cost);
    }
  }
  if (best) return *std::move(best);
  GangPreemptionPlan none;
  none.message = StrCat("preemption: evicting lower-priority pods would make room for ", most,
                        " of the ", need, " members still needed",
                        topology_key.empty() ? "" : StrCat(" within one ", topology_key, " domain"));
  return none;
}

}  // namespace tessel::preemption
