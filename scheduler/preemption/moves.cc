// Moves: plans that make room for a pod by moving movable pods (see moves.h).
#include "scheduler/preemption/moves.h"

#include <algorithm>
#include <memory>
#include <tuple>

#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/framework/what_if.h"
#include "scheduler/preemption/dra_room.h"

namespace tessel::preemption {
namespace {

// Nodes tried per pod at most, closest to fitting first: each costs a dry run, and a plan that
// must move much is a poor one anyway.
constexpr size_t kMaxNodesTried = 16;

// Free DRA devices x 1000 per node, when the cluster publishes any for nodes (else empty).
struct DraFree {
  StringKeyedMap<int64_t> by_node;
  int64_t total = 0;
  int64_t At(std::string_view node) const {
    auto it = by_node.find(node);
    return it == by_node.end() ? 0 : std::max<int64_t>(it->second, 0);
  }
};
DraFree ReadDraFree(const Context& ctx) {
  DraFree out;
  if (ctx.objects == nullptr || ctx.objects->Raw(RawKind::kResourceSlice).empty()) return out;
  out.by_node = DraFreeMilliByNode(*ctx.objects);
  for (const auto& [node, milli] : out.by_node) out.total += std::max<int64_t>(milli, 0);
  return out;
}
bool UsesDraIn(const Context& ctx, const Pod& pod) { return ctx.objects != nullptr && UsesDra(pod, *ctx.objects); }

auto PlanCost(const MovePlan& p) { return std::make_tuple(p.moves.size(), p.moved_gpu_milli); }

// The cluster's free GPU milli less what the pods nominated to nodes will take (`self`, when
// nominated, holds no room against itself): moves add no room, so a plan needs this much. With
// `dra`, the free DRA devices count too, and so do the nominated pods' claims.
int64_t FreeBeyondNominated(const Context& ctx, const MovableIndex& index, const Pod* self, const DraFree* dra) {
  int64_t free = index.free_gpu_milli() + (dra != nullptr ? dra->total : 0);
  if (const NominatedPodMap* nominated = ctx.nominated()) {
    for (const auto& [node, pods] : *nominated) {
      for (const PodRef& p : pods) {
        if (self != nullptr && p->SameKey(*self)) continue;
        free -= dra != nullptr ? AskedGpuMilli(*p) : gpu::ReadGpuRequest(*p).total_milli();
      }
    }
  }
  return free;
}

// The pod as its controller would recreate it: pending, nominated nowhere. A pod with DRA
// devices comes back as a new pod (no UID of its own yet): its own claims are made again,
// unallocated (the DynamicResources plugin's RemovePod, told the running pod is gone, gives the
// replacement its template claims unallocated), and the claim the running pod holds for its
// extended resources is not taken for one an earlier attempt of the replacement left.
PodRef Pending(const Context& ctx, const Pod& running) {
  Pod p = running;
  p.node_name.clear();
  p.nominated_node_name.clear();
  if (UsesDraIn(ctx, running)) p.meta.uid.clear();
  return std::make_shared<const Pod>(std::move(p));
}

}  // namespace

bool BetterPlan(const MovePlan& a, const MovePlan& b) {
  if (PlanCost(a) != PlanCost(b)) return PlanCost(a) < PlanCost(b);
  return a.node < b.node;
}

namespace {

// A pod the plan puts on a node: the waiting pod, or a gang's member.
struct Placed {
  const Pod* pod;
  std::string node;
  const CycleState* state;  // after PreFilter
};

// Whether the `victims`, taken off their nodes with the `placed` pods on theirs, all fit
// elsewhere at once: each, largest first, on the node the gang placement heuristic prefers among
// those that take it (BetterFill: the fullest; `order` is MovableIndex::FullestFirst, so the walk
// over the nodes no earlier move went to ends at the first that fits); then every placed pod is
// checked again beside all the moves (a moved pod's new place may matter to its pod-to-pod
// rules). False when one of the victims fits nowhere, or a placed pod no longer fits. All on one
// what-if of the snapshot.
bool PlaceAgain(const Context& ctx, const std::vector<Placed>& placed, const std::vector<PreemptionVictim>& victims,
                const std::vector<const NodeInfo*>& order, const DraFree& dra_free) {
  const Framework& fw = *ctx.framework;
  WhatIf plan(ctx.snapshot, {.nominated = ctx.nominated()});
  for (const PreemptionVictim& v : victims) plan.Evict(v.pod);
  StringSet placed_nodes;
  std::vector<PodRef> placed_refs;
  for (const Placed& p : placed) {
    placed_refs.push_back(plan.Place(*p.pod, p.node));
    placed_nodes.insert(p.node);
  }

  std::vector<const PreemptionVictim*> largest_first;
  for (const PreemptionVictim& v : victims) largest_first.push_back(&v);
  std::stable_sort(largest_first.begin(), largest_first.end(), [](const PreemptionVictim* a, const PreemptionVictim* b) {
    const int64_t ga = AskedGpuMilli(*a->pod), gb = AskedGpuMilli(*b->pod);
    if (ga != gb) return ga > gb;
    if (a->pod->requests.milli_cpu != b->pod->requests.milli_cpu) {
      return a->pod->requests.milli_cpu > b->pod->requests.milli_cpu;
    }
    return a->pod->Key() < b->pod->Key();
  });

  StringSet targets;  // nodes the moves so far went to
  for (const PreemptionVictim* v : largest_first) {
    const PodRef pending = Pending(ctx, *v->pod);
    CycleState s;
    if (!fw.RunPreFilter(s, *pending).ok() || !plan.Replay(fw, s, *pending).ok()) return false;
    auto fits = [&](const NodeInfo& node) {
      return fw.MayFitAfterFreeing(s, *pending, node, Resources{}) && plan.Fits(fw, s, *pending, node).ok();
    };
    auto option_of = [&](const NodeInfo& node) {
      return FillOption{.fullness = Fullness(node), .order = ctx.snapshot->PositionOf(node.name())};
    };
    // The nodes earlier moves went to, as they are now; then the others fullest first, where
    // the first that takes the pod ends the walk (no emptier node would be chosen).
    const NodeInfo* best = nullptr;
    FillOption best_option;
    for (const std::string& name : targets) {
      const NodeInfo& node = *plan.Get(name);
      const FillOption option = option_of(node);
      if ((best == nullptr || BetterFill(option, best_option, 1)) && fits(node)) {
        best = &node;
        best_option = option;
      }
    }
    // A node with fewer free GPU milli than the pod would hold there cannot take it: an integer
    // test before any filter (in a full cluster, most of the order fails it). A pod with DRA
    // devices may take a node's free devices too, as they stood before the plan (the filters
    // then count those earlier moves took).
    const gpu::GpuRequest request = gpu::ReadGpuRequest(*pending);
    const bool dra = UsesDraIn(ctx, *pending);
    const int64_t claimed = DraDeviceMilli(*pending);
    for (const NodeInfo* node : order) {
      const int64_t free = node->gpus().total_free_milli() + (dra ? dra_free.At(node->name()) : 0);
      if (free < gpu::HeldGpuMilli(request, node->gpus().inventory()) + claimed) continue;
      if (placed_nodes.contains(node->name()) || targets.contains(node->name())) continue;
      const FillOption option = option_of(*node);
      if (best != nullptr && !BetterFill(option, best_option, 1)) break;
      if (fits(*plan.Get(node->name()))) {
        best = node;
        best_option = option;
        break;
      }
    }
    if (best == nullptr) return false;
    const std::string to = best->name();
    plan.Place(*pending, to);  // its own copy: evicted above, it comes back as `pending`
    targets.insert(to);
  }
  // Every placed pod still fits where the plan puts it, beside the others and every move: its
  // state is told of the victims gone and of every pod placed but itself.
  for (size_t i = 0; i < placed.size(); ++i) {
    const WhatIf::Mark before = plan.Checkpoint();
    plan.Evict(placed_refs[i]);  // its node without it, where it is filtered
    CycleState s = placed[i].state->Clone();
    const bool fits = plan.Replay(fw, s, *placed[i].pod, 0, placed_refs[i].get()).ok() &&
                      plan.Fits(fw, s, *placed[i].pod, *plan.Get(placed[i].node)).ok();
    plan.Rollback(before);
    if (!fits) return false;
  }
  return true;
}

// The plan that moves the pods of `candidate` (taken off candidate.node for `pod`); nullopt when
// one of them fits nowhere else once the pod runs there, or the pod no longer fits beside them.
std::optional<MovePlan> PlanMoves(const Context& ctx, const CycleState& state, const Pod& pod,
                                  const Candidate& candidate, const std::vector<const NodeInfo*>& fullest_first,
                                  const DraFree& dra_free) {
  if (!PlaceAgain(ctx, {Placed{&pod, candidate.node, &state}}, candidate.victims, fullest_first, dra_free)) {
    return std::nullopt;
  }
  MovePlan plan{.node = candidate.node, .moves = candidate.victims};
  for (const PreemptionVictim& m : plan.moves) plan.moved_gpu_milli += AskedGpuMilli(*m.pod);
  return plan;
}

}  // namespace

std::optional<GangMovePlan> PlanGangMoves(Context ctx, const std::vector<PodRef>& members,
                                          const std::vector<const CycleState*>& states, int32_t need,
                                          const std::string& topology_key, MovableIndex* index) {
  MovableIndex fresh;
  if (index == nullptr) {
    index = &fresh;
    index->Sync(ctx, "");
  }
  // Moves add no room: the cluster's free GPUs, less the nominated pods', must cover the `need`
  // smallest members (what a replica holds differs by node: with shared nodes, any free GPU).
  std::vector<int64_t> sizes;
  for (const PodRef& m : members) sizes.push_back(AskedGpuMilli(*m));
  std::sort(sizes.begin(), sizes.end());
  int64_t want = 0;
  for (size_t i = 0; i < sizes.size() && i < static_cast<size_t>(need); ++i) want += sizes[i];
  if (index->shared_nodes() > 0) want = std::min<int64_t>(want, 1);
  // Members that may take DRA devices count the nodes' free devices as room too.
  const bool dra = std::any_of(members.begin(), members.end(), [&](const PodRef& m) { return UsesDraIn(ctx, *m); });
  const DraFree dra_free = ReadDraFree(ctx);
  if (FreeBeyondNominated(ctx, *index, nullptr, dra ? &dra_free : nullptr) < want) return std::nullopt;
  // Only nodes that could hold the smallest member, now or once their movable pods are gone,
  // among those the caller screened in (one tier of the gang's flavors).
  const int64_t smallest = sizes.empty() ? 0 : sizes.front();
  const Snapshot* snapshot = ctx.snapshot;
  ctx.gang_node_screen = [&, within = std::move(ctx.gang_node_screen)](const NodeInfo& node) {
    if (within && !within(node)) return false;
    const int64_t pos = snapshot->PositionOf(node.name());
    if (pos < 0) return false;
    const MovableIndex::Node& n = index->at(static_cast<uint32_t>(pos));
    const int64_t holds = index->shared_nodes() > 0 ? 0 : smallest;
    return n.free_gpu_milli + (dra ? dra_free.At(node.name()) : 0) + n.movable_gpu_milli >= holds;
  };
  GangPreemptionPlan gang = PlanGangPreemption(ctx, members, states, need, topology_key);
  // A budget that would refuse a move would stop the plan half done: not started.
  if (!gang.feasible || gang.victims.empty() || gang.pdb_violations > 0) return std::nullopt;
  // Only pods on the members' nodes move: the plan's reprieve may leave a pod taken out for a
  // member that then went elsewhere (the check below proves the members fit without it).
  StringSet target_nodes;
  for (const GangMemberTarget& t : gang.targets) target_nodes.insert(t.node);
  std::erase_if(gang.victims, [&](const PreemptionVictim& v) { return !target_nodes.contains(v.pod->node_name); });
  if (gang.victims.empty()) return std::nullopt;
  std::vector<Placed> placed;
  for (const GangMemberTarget& t : gang.targets) {
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i]->SameKey(*t.member)) placed.push_back({members[i].get(), t.node, states[i]});
    }
  }
  if (!PlaceAgain(ctx, placed, gang.victims, index->FullestFirst(*ctx.snapshot), dra_free)) return std::nullopt;
  return GangMovePlan{.targets = std::move(gang.targets), .moves = std::move(gang.victims)};
}

void MovableIndex::Read(const Context& ctx, uint32_t pos) {
  const NodeInfo& info = *ctx.snapshot->nodes()[pos];
  Node& n = nodes_[pos];
  if (n.generation == info.generation()) return;
  free_total_ -= n.free_gpu_milli;
  if (n.movable_pods > 0) most_free_.erase({-n.free_gpu_milli, pos});
  if (n.generation != std::numeric_limits<int64_t>::min()) fullest_.erase({n.fullness, pos});
  if (n.shared) --shared_nodes_;
  n = Node{.generation = info.generation(), .free_gpu_milli = info.gpus().total_free_milli(),
           .shared = info.gpus().inventory().shared(), .fullness = Fullness(info)};
  if (n.shared) ++shared_nodes_;
  for (const PodRef& p : info.pods()) {
    std::string reason;
    if (p->meta.deletion_timestamp.has_value() || (ctx.victim_rule && !ctx.victim_rule(*p, &reason))) continue;
    ++n.movable_pods;
    n.movable_gpu_milli += AskedGpuMilli(*p);
  }
  free_total_ += n.free_gpu_milli;
  if (n.movable_pods > 0) most_free_.insert({-n.free_gpu_milli, pos});
  fullest_.insert({n.fullness, pos});
}

void MovableIndex::Sync(const Context& ctx, const std::string& rules_version) {
  const Snapshot& snapshot = *ctx.snapshot;
  if (rules_version != rules_version_ || epoch_ != snapshot.change_epoch() || nodes_.size() != snapshot.size()) {
    rules_version_ = rules_version;
    nodes_.assign(snapshot.size(), Node{});
    free_total_ = 0;
    shared_nodes_ = 0;
    most_free_.clear();
    fullest_.clear();
    for (uint32_t pos = 0; pos < snapshot.size(); ++pos) Read(ctx, pos);
  } else {
    const std::vector<uint32_t>& changes = snapshot.changes();
    for (size_t i = log_pos_; i < changes.size(); ++i) Read(ctx, changes[i]);
  }
  epoch_ = snapshot.change_epoch();
  log_pos_ = snapshot.changes().size();
}

std::vector<const NodeInfo*> MovableIndex::FullestFirst(const Snapshot& snapshot) const {
  std::vector<const NodeInfo*> nodes;
  nodes.reserve(fullest_.size());
  for (const auto& [fullness, pos] : fullest_) nodes.push_back(snapshot.nodes()[pos]);
  return nodes;
}

absl::StatusOr<std::vector<MovePlan>> FindMovePlans(const Context& ctx, const CycleState& state, const Pod& pod,
                                                    const NodeStatusMap& rejected, const MoveSearch& search,
                                                    MovableIndex* index) {
  if (std::string why; !EligibleToPreempt(ctx, pod, rejected, &why)) return absl::FailedPreconditionError(why);
  // A pod that may take DRA devices (its own claims, or an extended resource a DeviceClass
  // serves) counts the devices its claims ask for, and the nodes' free DRA devices as room.
  const bool dra = UsesDraIn(ctx, pod);
  const int64_t claimed = DraDeviceMilli(pod);
  const gpu::GpuRequest request = gpu::ReadGpuRequest(pod);
  const int64_t asked = request.total_milli() + claimed;
  if (asked == 0) return absl::FailedPreconditionError("the pod asks for no GPU");
  if (asked < search.min_gpu_milli) {
    return absl::FailedPreconditionError(
        StrCat("the pod asks for ", asked, " milli-GPU, fewer than the ", search.min_gpu_milli, " that moves are made for"));
  }
  MovableIndex fresh;  // without an index: read every node now
  if (index == nullptr) {
    index = &fresh;
    index->Sync(ctx, "");
  }
  // Moves add no room: the free GPUs of the whole cluster, less what nominated pods will take,
  // must cover the pod. In a full cluster this ends most attempts before any dry run.
  // What the pod holds differs by node only on shared ones (a replica is a fraction of a GPU):
  // with any, the screen asks only for some free GPU.
  const DraFree dra_free = ReadDraFree(ctx);
  const int64_t need = index->shared_nodes() > 0 ? 1 : asked;
  if (FreeBeyondNominated(ctx, *index, &pod, dra ? &dra_free : nullptr) < need) return std::vector<MovePlan>{};
  // Nodes where moving pods could make room, closest to fitting first (GPU milli short, then
  // snapshot order, which is by name): the index's most-free order (with DRA, its free devices
  // added), skipping those whose movable pods cannot cover the shortfall and those the filters
  // ruled out for good.
  std::vector<const NodeInfo*> nodes;
  auto consider = [&](int64_t neg_free, uint32_t pos) {
    const NodeInfo* node = ctx.snapshot->nodes()[pos];
    const int64_t short_by = gpu::HeldGpuMilli(request, node->gpus().inventory()) + claimed + neg_free;
    if (short_by > index->at(pos).movable_gpu_milli) return;
    if (auto it = rejected.find(node->name());
        it != rejected.end() && it->second.code() == Code::kUnschedulableAndUnresolvable) {
      return;
    }
    // Moves free no quota: a moved pod comes back and is charged again. Where the pod's quota
    // rejects it, room alone would not do, and the move would be a reclaim under another name.
    if (ctx.framework != nullptr && !ctx.framework->RunQuotaFilters(state, pod, *node).ok()) return;
    nodes.push_back(node);
  };
  if (dra && !dra_free.by_node.empty()) {
    std::vector<std::pair<int64_t, uint32_t>> most_free(index->most_free().begin(), index->most_free().end());
    for (auto& [neg_free, pos] : most_free) neg_free -= dra_free.At(ctx.snapshot->nodes()[pos]->name());
    std::stable_sort(most_free.begin(), most_free.end());
    for (const auto& [neg_free, pos] : most_free) {
      if (nodes.size() >= kMaxNodesTried) break;
      consider(neg_free, pos);
    }
  } else {
    for (const auto& [neg_free, pos] : index->most_free()) {
      if (nodes.size() >= kMaxNodesTried) break;
      consider(neg_free, pos);
    }
  }

  std::vector<MovePlan> candidates;  // victims chosen, not yet placed again
  std::vector<Candidate> victims_of;
  for (const NodeInfo* node : nodes) {
    std::optional<Candidate> c = SelectVictimsOnNode(ctx, state, pod, *node);
    // A budget that would refuse one of the moves would stop the plan half done: not started.
    if (!c || c->victims.empty() || c->pdb_violations > 0) continue;
    MovePlan cost{.node = c->node, .moves = c->victims};
    for (const PreemptionVictim& v : c->victims) cost.moved_gpu_milli += AskedGpuMilli(*v.pod);
    candidates.push_back(std::move(cost));
    victims_of.push_back(*std::move(c));
  }
  std::vector<size_t> order(candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return BetterPlan(candidates[a], candidates[b]); });
  std::vector<MovePlan> plans;
  if (order.empty()) return plans;
  const std::vector<const NodeInfo*> fullest_first = index->FullestFirst(*ctx.snapshot);
  for (size_t i : order) {
    if (plans.size() >= search.max_plans) break;
    if (std::optional<MovePlan> plan = PlanMoves(ctx, state, pod, victims_of[i], fullest_first, dra_free)) {
      plans.push_back(*std::move(plan));
    }
  }
  return plans;
}

}  // namespace tessel::preemption
