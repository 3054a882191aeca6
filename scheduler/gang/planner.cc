// The gang planner (see planner.h for the algorithm).
#include "scheduler/gang/planner.h"

#include <algorithm>
#include <map>
#include <span>
#include <unordered_map>

#include "scheduler/api/quantity.h"
#include "scheduler/api/storage.h"
#include "scheduler/framework/fit_error.h"
#include "scheduler/framework/node_tiers.h"
#include "scheduler/framework/what_if.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/util/strings.h"

namespace tessel::gang {
namespace {

void AppendTerm(std::string& k, const NodeSelectorTerm& term) {
  for (const auto* list : {&term.match_expressions, &term.match_fields}) {
    for (const NodeSelectorRequirement& r : *list) {
      StrAppend(&k, r.key, "~", static_cast<int>(r.op), "~", StrJoin(r.values, ","), ";");
    }
    k += "/";
  }
}

void AppendSelector(std::string& k, const std::optional<LabelSelector>& selector) {
  if (!selector.has_value()) {
    k += "nil;";
    return;
  }
  for (const auto& [key, value] : selector->match_labels) StrAppend(&k, key, "=", value, ",");
  for (const LabelSelectorRequirement& r : selector->match_expressions) {
    StrAppend(&k, r.key, "~", static_cast<int>(r.op), "~", StrJoin(r.values, ","), ",");
  }
  k += ";";
}

void AppendPodTerm(std::string& k, const PodAffinityTerm& t) {
  AppendSelector(k, t.label_selector);
  StrAppend(&k, StrJoin(t.namespaces, ","), "/");
  if (t.namespace_selector.has_value()) AppendSelector(k, t.namespace_selector);
  StrAppend(&k, t.topology_key, ";");
}

void AppendPodRules(std::string& k, const PodAffinityRules& rules) {
  for (const PodAffinityTerm& t : rules.required) AppendPodTerm(k, t);
  k += "/";
  for (const WeightedPodAffinityTerm& t : rules.preferred) {
    StrAppend(&k, t.weight, ":");
    AppendPodTerm(k, t.term);
  }
  k += "|";
}

// Whether the pod has rules about other pods (affinity, anti-affinity, spread): then where
// one member goes changes where the next may go.
bool HasPodRules(const Pod& p) {
  return !p.pod_affinity.empty() || !p.pod_anti_affinity.empty() ||
         !p.topology_spread_constraints.empty();
}

// Pods with the same key are interchangeable for every plugin Tessel ships: they ask for the
// same resources on the same nodes, with the same rules about other pods. Labels are part of
// the key when some selector could tell the members apart (a pod in the cluster or a member
// with pod rules): then a member's labels decide which rules it triggers.
std::string ShapeKey(const Pod& p, bool labels_matter) {
  std::string k = StrCat(p.scheduler_name, "|", p.PriorityValue(), "|", p.requests.DebugString(), "|");
  for (const auto& [key, value] : p.node_selector) StrAppend(&k, key, "=", value, ",");
  k += "|";
  for (const Toleration& t : p.tolerations) {
    StrAppend(&k, t.key, "~", static_cast<int>(t.op), "~", t.value, "~",
              t.effect ? static_cast<int>(*t.effect) : -1, "~", t.toleration_seconds.value_or(-1),
              ";");
  }
  k += "|";
  if (p.node_affinity.required.has_value()) {
    k += "R";
    for (const NodeSelectorTerm& term : *p.node_affinity.required) AppendTerm(k, term);
  }
  for (const PreferredSchedulingTerm& term : p.node_affinity.preferred) {
    StrAppend(&k, "P", term.weight);
    AppendTerm(k, term.preference);
  }
  k += "|";
  for (const auto& [key, value] : p.meta.annotations) {
    if (key.rfind("tessel.io/", 0) == 0) StrAppend(&k, key, "=", value, ",");
  }
  // Members with their own claims (one PVC per worker, a DRA ResourceClaim each) are not
  // interchangeable: the volume and DRA plugins' PreFilter state belongs to one pod's claims.
  k += "|";
  for (const PodVolume& v : p.volumes) StrAppend(&k, ClaimNameOf(p, v), ",");
  k += "|";
  for (const PodResourceClaim& c : p.resource_claims) {
    StrAppend(&k, c.name, "=", c.resource_claim_name, "/", c.resource_claim_template_name, "/",
              c.generated_claim_name.value_or("?"), ",");
  }
  k += "|";
  AppendPodRules(k, p.pod_affinity);
  AppendPodRules(k, p.pod_anti_affinity);
  for (const TopologySpreadConstraint& c : p.topology_spread_constraints) {
    StrAppend(&k, c.max_skew, "~", c.topology_key, "~", static_cast<int>(c.when_unsatisfiable), "~",
              c.min_domains.value_or(-1), "~",
              c.node_affinity_policy ? static_cast<int>(*c.node_affinity_policy) : -1, "~",
              c.node_taints_policy ? static_cast<int>(*c.node_taints_policy) : -1, "~");
    AppendSelector(k, c.label_selector);
  }
  if (labels_matter) {
    k += "|";
    for (const auto& [key, value] : p.meta.labels) StrAppend(&k, key, "=", value, ",");
    StrAppend(&k, "|", p.meta.namespace_);
  }
  return k;
}

struct Shape {
  PodRef representative;
  std::vector<PodRef> members;
  int64_t gpu_milli = 0;
};

struct Attempt {
  std::vector<MemberPlacement> placements;
  std::vector<bool> used;
  Code code = Code::kSuccess;
  std::string error;
  std::vector<std::string> rejecting;
  bool quota_may_help = false;  // some rejection more quota would lift (Framework::QuotaMayLift)
  std::string fit_error;  // why the first shape that fit nowhere was refused
  std::string limit_reason;  // the first rejection that stopped members on a feasible node
  // The first shape's PreFilter state when it ranks nodes in strict tiers (node_tiers.h).
  std::shared_ptr<const CycleState> tiers;
  int32_t nodes_used() const { return static_cast<int32_t>(std::count(used.begin(), used.end(), true)); }
};

void AddRejecting(std::vector<std::string>& out, const std::string& plugin) {
  if (std::find(out.begin(), out.end(), plugin) == out.end()) out.push_back(plugin);
}

// A rejection that limited the attempt: its plugin, and whether more quota would lift it.
void NoteRejection(const PlanInput& in, Attempt& a, const Status& st) {
  AddRejecting(a.rejecting, st.plugin());
  a.quota_may_help = a.quota_may_help || in.framework->QuotaMayLift(st);
}

// A Filter refused one more member on a node that took others: the plan was limited by it.
void NoteLimit(const PlanInput& in, Attempt& a, const Status& st) {
  if (st.ok()) return;
  NoteRejection(in, a, st);
  if (a.limit_reason.empty()) a.limit_reason = st.Message();
}

// How many of `members` (one shape's, still to place) the node can host: they are placed on
// the node in the plan one after another, and the shape's cycle state told (AddPod), until a
// Filter refuses (noted in `a`); then the plan is rolled back. Each is a member of its own, so
// a plugin that judges the gang as a whole (QueueQuota) sees one member fewer still to place.
int32_t Capacity(const PlanInput& in, WhatIf& plan, const CycleState& state, const PodRef& rep,
                 std::span<const PodRef> members, const std::string& node, Attempt& a) {
  const WhatIf::Mark mark = plan.Checkpoint();
  CycleState probe_state = state.Clone();
  int32_t n = 0;
  for (const PodRef& member : members) {
    if (Status st = plan.Fits(*in.framework, probe_state, *rep, *plan.Get(node)); !st.ok()) {
      NoteLimit(in, a, st);
      break;
    }
    auto probe = std::make_shared<Pod>(*member);
    probe->node_name = node;
    const WhatIf::Mark before = plan.Now();
    plan.Place(std::move(probe));
    if (!plan.Replay(*in.framework, probe_state, *rep, before).ok()) break;
    ++n;
  }
  plan.Rollback(mark);
  return n;
}

// One shape's members into the plan, after the members placed before them. `state` is the
// shape's PreFilter state; it learns of every member placed (AddPod), so each member is
// filtered against all the members before it, its own shape's and the others'. Each member's
// own state (for PreAssume, Reserve, Permit and binding) is a copy of `base`, the PreFilter
// state before any member was added: Reserve plugins count the gang's other reservations
// themselves.
void PlaceShape(const PlanInput& in, const Shape& shape, const CycleState& base, CycleState& state,
                bool interacting, WhatIf& plan, Attempt& a) {
  const Framework& fw = *in.framework;
  const PodRef& rep = shape.representative;
  size_t next = 0;
  bool first_round = true;
  // Members with rules about each other change which nodes fit as they are placed: when the
  // nodes found at first are used up, the rest is evaluated again (while it makes progress).
  while (next < shape.members.size()) {
    const size_t placed_before = next;
    FilterOutcome outcome = fw.FindFeasibleNodes(state, *rep, plan.nodes(), plan.nominated());
    for (const auto& [node, st] : outcome.rejected) {
      if (st.code() == Code::kError) {
        a.code = Code::kError;
        a.error = st.Message();
        return;
      }
      if (first_round) NoteRejection(in, a, st);
    }
    if (outcome.feasible.empty()) {
      if (first_round && a.fit_error.empty()) {
        a.fit_error = FormatFitError(plan.nodes().size(), outcome.rejected);
      }
      return;
    }
    first_round = false;
    const size_t n = outcome.feasible.size();
    std::vector<int64_t> score(n, 0);
    if (n > 1) {
      CycleState score_state = state.Clone();
      Status ps = fw.RunPreScore(score_state, *rep, outcome.feasible);
      if (!ps.ok()) {
        a.code = Code::kError;
        a.error = ps.Message();
        return;
      }
      absl::StatusOr<NodeScoreList> scores = fw.RunScore(score_state, *rep, outcome.feasible);
      if (!scores.ok()) {
        a.code = Code::kError;
        a.error = std::string(scores.status().message());
        return;
      }
      for (size_t i = 0; i < n; ++i) score[i] = (*scores)[i].score;
    }
    int32_t remaining = static_cast<int32_t>(shape.members.size() - next);
    std::vector<size_t> index(n);
    std::vector<std::string> names(n);
    std::vector<FillOption> option(n);
    for (size_t i = 0; i < n; ++i) {
      index[i] = plan.IndexOf(outcome.feasible[i]);
      names[i] = outcome.feasible[i]->name();
      // Capacity is the planner's measure of how full a node is for this shape; its ties keep
      // score then snapshot order (no fullness), as the replay digests were recorded.
      option[i] = FillOption{.capacity = Capacity(in, plan, state, rep, std::span(shape.members).subspan(next), names[i], a),
                             .score = score[i],
                             .order = static_cast<int64_t>(index[i])};
    }
    std::vector<bool> done(n, false);
    while (remaining > 0) {
      // Fill whole nodes (BetterFill: the gang placement heuristic every plan shares).
      std::optional<size_t> best;
      for (size_t i = 0; i < n; ++i) {
        if (done[i] || option[i].capacity <= 0) continue;
        if (!best || BetterFill(option[i], option[*best], remaining)) best = i;
      }
      if (!best) break;
      done[*best] = true;
      const int32_t take = std::min(option[*best].capacity, remaining);
      for (int32_t k = 0; k < take; ++k) {
        const PodRef& member = shape.members[next];
        const NodeInfo& node = *plan.Get(names[*best]);
        // Every member is filtered where it goes: the members placed since the capacities were
        // found (on other nodes too) may have changed what fits here.
        if (Status st = plan.Fits(fw, state, *member, node); !st.ok()) {
          NoteLimit(in, a, st);
          break;
        }
        auto member_state = std::make_shared<CycleState>(base.Clone());
        Pod assumed = *member;
        assumed.node_name = node.name();
        Status pa = fw.RunPreAssume(*member_state, assumed, node);
        if (!pa.ok()) {
          if (pa.code() == Code::kError) {
            a.code = Code::kError;
            a.error = pa.Message();
            return;
          }
          break;
        }
        const WhatIf::Mark before = plan.Now();
        plan.Place(std::make_shared<const Pod>(assumed));
        if (Status st = plan.Replay(fw, state, *rep, before); !st.ok()) {
          a.code = Code::kError;
          a.error = st.Message();
          return;
        }
        a.used[index[*best]] = true;
        a.placements.push_back(MemberPlacement{.pod = member,
                                               .assumed = std::move(assumed),
                                               .node = names[*best],
                                               .state = std::move(member_state)});
        ++next;
        --remaining;
      }
    }
    if (!interacting || next == placed_before) return;
  }
}

Attempt Place(const PlanInput& in, const std::vector<Shape>& shapes, WhatIf& plan,
              bool interacting) {
  const Framework& fw = *in.framework;
  Attempt a;
  a.used.assign(plan.nodes().size(), false);
  // The members the gang needs are judged as one (node_tiers.h): its flavor and its quota.
  const size_t needed = std::min(in.members.size(), static_cast<size_t>(in.min_to_place));
  const SchedulingUnit unit = std::make_shared<const std::vector<PodRef>>(
      in.members.begin(), in.members.begin() + static_cast<std::ptrdiff_t>(needed));
  for (const Shape& shape : shapes) {
    const PodRef& rep = shape.representative;
    CycleState state;
    SetSchedulingUnit(state, unit);
    Status pre = fw.RunPreFilter(state, *rep);
    const CycleState base = state.Clone();
    // The members placed so far (earlier shapes) are in the plan; the shape's state learns of
    // them as if they were bound.
    if (pre.ok()) pre = plan.Replay(fw, state, *rep);
    if (!pre.ok()) {
      if (pre.code() == Code::kError) {
        a.code = Code::kError;
        a.error = pre.Message();
        return a;
      }
      // As for a single pod: a quota plugin's PreFilter rejection is the queue's quota.
      AddRejecting(a.rejecting, pre.plugin());
      a.quota_may_help = a.quota_may_help || fw.IsQuotaPlugin(pre.plugin());
      if (a.fit_error.empty()) a.fit_error = FormatPreFilterError(plan.nodes().size(), pre);
      continue;
    }
    if (a.tiers == nullptr && TierWalk(state, {}).tiered()) a.tiers = std::make_shared<const CycleState>(base.Clone());
    PlaceShape(in, shape, base, state, interacting, plan, a);
    if (a.code == Code::kError) return a;
  }
  return a;
}

std::vector<Shape> GroupShapes(const std::vector<PodRef>& members, bool labels_matter) {
  std::vector<Shape> shapes;
  std::map<std::string, size_t> by_key;
  for (const PodRef& m : members) {
    auto [it, fresh] = by_key.emplace(ShapeKey(*m, labels_matter), shapes.size());
    if (fresh) {
      shapes.push_back(Shape{.representative = m, .members = {}, .gpu_milli = gpu::ReadGpuRequest(*m).total_milli()});
    }
    shapes[it->second].members.push_back(m);
  }
  // Bigger shapes first: they are the hardest to fit once smaller ones have cut nodes up.
  std::stable_sort(shapes.begin(), shapes.end(), [](const Shape& a, const Shape& b) {
    if (a.gpu_milli != b.gpu_milli) return a.gpu_milli > b.gpu_milli;
    if (a.representative->requests.milli_cpu != b.representative->requests.milli_cpu) {
      return a.representative->requests.milli_cpu > b.representative->requests.milli_cpu;
    }
    return a.representative->requests.memory > b.representative->requests.memory;
  });
  return shapes;
}

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return StrCat(n, " ", n == 1 ? one : many);
}

std::string Needs(const PlanInput& in, const std::vector<Shape>& shapes) {
  // (in.min_to_place is at least 1 here; min_member tells whether members already run.)
  std::string shape = DescribeMemberShape(*shapes.front().representative);
  if (shapes.size() > 1) StrAppend(&shape, " (and ", shapes.size() - 1, " other pod shapes)");
  const bool more = in.min_to_place < in.min_member;
  return StrCat(in.gang, " needs ", std::max<int32_t>(in.min_to_place, 1), more ? " more" : "",
                " × ", shape);
}

// Free GPU milli and CPU milli over the nodes, after the attempt.
std::pair<int64_t, int64_t> FreeOf(const std::vector<NodeInfo*>& nodes) {
  int64_t gpu = 0, cpu = 0;
  for (const NodeInfo* n : nodes) {
    gpu += n->gpus().total_free_milli();
    cpu += n->Free().milli_cpu;
  }
  return {gpu, cpu};
}

bool HasMinResources(const std::vector<NodeInfo*>& nodes, const Resources& min) {
  if (min.IsZero()) return true;
  Resources free;
  for (const NodeInfo* n : nodes) (void)free.Add(n->Free());
  // GPUs are held per device: count whole free devices' milli for nvidia.com/gpu.
  int64_t gpu = 0;
  for (const NodeInfo* n : nodes) gpu += n->gpus().total_free_milli();
  if (gpu > 0 || free.Get(kNvidiaGpu) == 0) free.Set(kNvidiaGpu, std::max(gpu, free.Get(kNvidiaGpu)));
  return min.FitsIn(free);
}

}  // namespace

std::string DescribeMemberShape(const Pod& pod) {
  const gpu::GpuRequest gpu = gpu::ReadGpuRequest(pod);
  switch (gpu.kind) {
    case gpu::GpuRequest::Kind::kWhole:
      return Plural(gpu.count, "GPU", "GPUs");
    case gpu::GpuRequest::Kind::kFraction:
      return StrCat(gpu.milli, " milli-GPU");
    case gpu::GpuRequest::Kind::kReplicas:
      return Plural(gpu.count, "GPU replica", "GPU replicas");
    case gpu::GpuRequest::Kind::kNone:
      break;
  }
  std::vector<std::string> parts;
  for (const auto& [name, amount] : pod.requests.Entries()) {
    if (name == kPods) continue;
    parts.push_back(StrCat(name, " ", FormatResourceQuantity(name, amount)));
  }
  return parts.empty() ? "no resources" : StrJoin(parts, ", ");
}

// The plan on `all` (PlanGang's, without strict tiers). `tiers` gets the state that ranks the
// nodes in tiers, if the members' plugins do.
GangPlan PlanOn(const PlanInput& in, const std::vector<Shape>& shapes, bool interacting,
                const std::vector<NodeInfo*>& all, std::shared_ptr<const CycleState>* tiers);

GangPlan PlanGang(const PlanInput& input) {
  // Members beyond minMember (min_to_place 0) are planned like a gang of one.
  PlanInput in = input;
  in.min_to_place = std::max<int32_t>(in.min_to_place, 1);
  GangPlan plan;
  if (in.members.empty()) {
    plan.code = Code::kUnschedulable;
    plan.message = StrCat(in.gang, " has no pending members to place");
    return plan;
  }
  // Members with rules about other pods see each other; any selector in the cluster (a pod's,
  // a nominated pod's, a member's) may tell members apart by their labels.
  const bool interacting = std::any_of(in.members.begin(), in.members.end(),
                                       [](const PodRef& m) { return HasPodRules(*m); });
  bool labels_matter = interacting || in.snapshot->pods_with_affinity() > 0;
  if (in.nominated != nullptr) {
    for (const auto& [node, pods] : *in.nominated) {
      for (const PodRef& p : pods) labels_matter |= HasPodRules(*p);
    }
  }
  const std::vector<Shape> shapes = GroupShapes(in.members, labels_matter);
  std::shared_ptr<const CycleState> tier_state;
  plan = PlanOn(in, shapes, interacting, in.snapshot->nodes(), &tier_state);
  if (tier_state == nullptr || plan.code == Code::kError) return plan;
  const TierWalk walk(*tier_state, in.snapshot->nodes());
  if (!walk.tiered()) return plan;
  auto in_tier = [&tier_state](GangPlan p, std::optional<int64_t> tier) {
    p.tiers = tier_state;
    if (p.feasible) p.tier = tier;
    return p;
  };
  // Strict tiers (a queue's flavors): the whole gang in the first tier that takes it, compact
  // placement within that tier (the walk every way of making room takes, node_tiers.h).
  // Members placed after the gang join the tier its running members use, whatever has room: the
  // first that holds every one of their nodes (a flavor's borrowing tier holds its other nodes),
  // else the first running member's.
  std::vector<const NodeInfo*> running;
  for (const std::string& name : in.running_nodes) {
    const NodeInfo* node = in.snapshot->Get(name);
    if (node != nullptr && walk.TierOf(*node).has_value()) running.push_back(node);
  }
  if (!running.empty()) {
    const TierWalk::Tier* tier = nullptr;
    for (const TierWalk::Tier& t : walk.tiers()) {
      if (std::all_of(running.begin(), running.end(), [&t](const NodeInfo* n) { return t.screen(*n); })) {
        tier = &t;
        break;
      }
    }
    if (tier == nullptr) tier = walk.Find(*walk.TierOf(*running.front()));
    GangPlan within = PlanOn(in, shapes, interacting, tier == nullptr ? std::vector<NodeInfo*>() : tier->nodes, nullptr);
    if (!within.feasible && within.code != Code::kError) {
      within.message = StrCat(within.message, " (in the tier of nodes its running members use)");
    }
    return in_tier(std::move(within), tier == nullptr ? walk.TierOf(*running.front()) : tier->rank);
  }
  if (walk.tiers().size() <= 1) {  // one tier: the plan on every node is the plan on it
    return in_tier(std::move(plan), walk.tiers().empty() ? std::nullopt : walk.tiers().front().rank);
  }
  std::optional<GangPlan> first_refusal;
  for (const TierWalk::Tier& tier : walk.tiers()) {
    GangPlan within = PlanOn(in, shapes, interacting, tier.nodes, nullptr);
    if (within.feasible || within.code == Code::kError) return in_tier(std::move(within), tier.rank);
    if (!first_refusal) first_refusal = std::move(within);
  }
  if (!first_refusal) return in_tier(std::move(plan), std::nullopt);
  first_refusal->message = StrCat(first_refusal->message, " (in its first tier of nodes; no other tier takes it whole)");
  for (const std::string& p : plan.rejecting_plugins) AddRejecting(first_refusal->rejecting_plugins, p);
  first_refusal->quota_may_help = first_refusal->quota_may_help || plan.quota_may_help;
  return in_tier(*std::move(first_refusal), std::nullopt);
}

GangPlan PlanOn(const PlanInput& in, const std::vector<Shape>& shapes, bool interacting,
                const std::vector<NodeInfo*>& all, std::shared_ptr<const CycleState>* tiers) {
  GangPlan plan;

  if (in.topology_key.empty()) {
    if (!HasMinResources(all, in.min_resources)) {
      plan.code = Code::kUnschedulable;
      plan.message = StrCat(Needs(in, shapes), "; spec.minResources (",
                            in.min_resources.DebugString(), ") is more than the cluster has free");
      return plan;
    }
    WhatIf plan_on(in.snapshot, {.scope = &all, .nominated = in.nominated});
    Attempt a = Place(in, shapes, plan_on, interacting);
    if (tiers != nullptr) *tiers = a.tiers;
    plan.rejecting_plugins = a.rejecting;
    plan.quota_may_help = a.quota_may_help;
    if (a.code == Code::kError) {
      plan.code = Code::kError;
      plan.message = StrCat(in.gang, ": ", a.error);
      return plan;
    }
    const int32_t placed = static_cast<int32_t>(a.placements.size());
    plan.nodes_used = a.nodes_used();
    if (placed >= in.min_to_place) {
      plan.feasible = true;
      plan.placements = std::move(a.placements);
      return plan;
    }
    plan.code = Code::kUnschedulable;
    plan.limit_reason = a.limit_reason;
    const bool quota_only = plan.QuotaOnly(*in.framework);
    plan.message = placed > 0   ? StrCat(Needs(in, shapes), "; ", Plural(plan.nodes_used, "node", "nodes"),
                                         " can host ", Plural(placed, "member", "members"))
                   : quota_only ? StrCat(Needs(in, shapes), "; its quota does not admit it: ", a.fit_error)
                                : StrCat(Needs(in, shapes), "; no node can host one: ", a.fit_error);
    return plan;
  }

  // Compact placement: one domain of the topology label.
  std::map<std::string, std::vector<NodeInfo*>> domains;
  for (NodeInfo* n : all) {
    auto it = n->node()->meta.labels.find(in.topology_key);
    if (it != n->node()->meta.labels.end()) domains[it->second].push_back(n);
  }
  if (domains.empty()) {
    plan.code = Code::kUnschedulable;
    plan.message = StrCat(Needs(in, shapes), " within one ", in.topology_key,
                          " domain; no node has the label ", in.topology_key);
    return plan;
  }
  struct Candidate {
    std::string domain;
    Attempt attempt;
    std::pair<int64_t, int64_t> free;
  };
  std::optional<Candidate> best;
  for (const auto& [domain, nodes] : domains) {
    if (!HasMinResources(nodes, in.min_resources)) {
      plan.too_small.push_back(DomainFit{.domain = domain, .members = 0});
      continue;
    }
    WhatIf plan_on(in.snapshot, {.scope = &nodes, .nominated = in.nominated});
    Attempt a = Place(in, shapes, plan_on, interacting);
    if (tiers != nullptr && *tiers == nullptr) *tiers = a.tiers;
    for (const std::string& p : a.rejecting) AddRejecting(plan.rejecting_plugins, p);
    plan.quota_may_help = plan.quota_may_help || a.quota_may_help;
    if (a.code == Code::kError) {
      plan.code = Code::kError;
      plan.message = StrCat(in.gang, ": ", a.error);
      return plan;
    }
    const int32_t placed = static_cast<int32_t>(a.placements.size());
    if (placed < in.min_to_place) {
      if (plan.limit_reason.empty()) plan.limit_reason = a.limit_reason;
      plan.too_small.push_back(DomainFit{.domain = domain, .members = placed});
      continue;
    }
    Candidate c{domain, std::move(a), FreeOf(plan_on.nodes())};
    // More members placed first; then the domain left fullest (pack), then by name.
    auto better = [](const Candidate& x, const Candidate& y) {
      if (x.attempt.placements.size() != y.attempt.placements.size()) {
        return x.attempt.placements.size() > y.attempt.placements.size();
      }
      return x.free < y.free;
    };
    if (!best || better(c, *best)) best = std::move(c);
  }
  if (best) {
    plan.feasible = true;
    plan.domain = best->domain;
    plan.nodes_used = best->attempt.nodes_used();
    plan.placements = std::move(best->attempt.placements);
    return plan;
  }
  plan.code = Code::kUnschedulable;
  std::vector<std::string> small;
  for (const DomainFit& d : plan.too_small) {
    small.push_back(StrCat(d.domain, " (", Plural(d.members, "member", "members"), ")"));
  }
  plan.message = StrCat(Needs(in, shapes), " within one ", in.topology_key,
                        " domain; every domain is too small: ", StrJoin(small, ", "));
  return plan;
}

}  // namespace tessel::gang
