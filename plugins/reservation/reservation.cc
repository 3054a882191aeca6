#include "plugins/reservation/reservation.h"

#include <algorithm>
#include <compare>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "scheduler/framework/framework.h"
#include "scheduler/framework/node_tiers.h"
#include "scheduler/framework/what_if.h"
#include "scheduler/framework/plugin_util.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/util/api_time.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"

namespace tessel::reservation {
namespace {

// A waiting pod is retried at least every 5 minutes (the queue's longest wait); one that has not
// failed for twice that is gone, placed, or waits for something else than room.
constexpr absl::Duration kLease = absl::Minutes(10);

// What the PreFilter leaves for Filter: what the pod takes of a node's room, and the priority
// levels whose reservations apply to it.
struct PodState final : StateData {
  Resources take;
  std::vector<int32_t> levels;  // ascending
  std::unique_ptr<StateData> Clone() const override { return std::make_unique<PodState>(*this); }
};

// What the profile's filters ask of a node's room for `pod` (their AddRoomNeed: the requests
// NodeResourcesFit checks, GpuShare's GPU units or milli), as the queue's room hints read it.
Resources NeedOf(const Framework* fw, const Pod& pod) {
  return fw == nullptr ? pod.requests : fw->RoomNeed(fw->PluginNames("filter"), pod);
}

// The room of the node emptied: whether it could ever hold `need`.
bool CouldHold(const NodeInfo& node, const Resources& need) {
  Resources capacity = node.allocatable();
  gpu::AddGpuRoom(gpu::GpuDevices(node.gpus().inventory()), capacity);
  return need.FitsIn(capacity);
}

// At worst a fraction takes a whole free GPU, and whole GPUs take their milli.
Resources WorstTake(Resources take) {
  const int64_t units = take.Get(gpu::kRoomGpuUnits);
  const int64_t milli = take.Get(gpu::kRoomGpuMilli);
  if (milli > 0 && units < gpu::kMilliPerGpu) take.Set(gpu::kRoomGpuUnits, gpu::kMilliPerGpu);
  if (units > milli) take.Set(gpu::kRoomGpuMilli, units);
  return take;
}

// Calls f(name, need, room, take) for every resource `need` asks for.
template <typename F>
void ForEachNeeded(const Resources& need, const Resources& room, const Resources& take, F f) {
  auto one = [&](std::string_view name, int64_t n, int64_t r, int64_t t) {
    if (n > 0) f(name, n, r, t);
  };
  one("cpu", need.milli_cpu, room.milli_cpu, take.milli_cpu);
  one("memory", need.memory, room.memory, take.memory);
  one("ephemeral-storage", need.ephemeral_storage, room.ephemeral_storage, take.ephemeral_storage);
  one("pods", need.pods, room.pods, take.pods);
  for (const auto& [name, amount] : need.scalar) one(name, amount, room.Get(name), take.Get(name));
}

// Whether taking `take` out of `room` leaves less than `need` in a resource the need asks for.
bool Crowds(const Resources& need, const Resources& room, const Resources& take) {
  bool crowds = false;
  ForEachNeeded(need, room, take, [&](std::string_view, int64_t n, int64_t r, int64_t t) {
    if (t > 0 && static_cast<__int128>(r) - t < n) crowds = true;
  });
  return crowds;
}

bool IsGpu(std::string_view name) {
  return name == gpu::kRoomGpuUnits || name == gpu::kRoomGpuMilli || name.starts_with("nvidia.com/gpu");
}

// How far a node's room is from `need`: GPUs first, then cpu, memory and the rest (saturating).
struct Shortfall {
  int64_t gpu = 0, cpu = 0, memory = 0, other = 0;
  auto operator<=>(const Shortfall&) const = default;
};
int64_t SaturatingAdd(int64_t a, int64_t b) { return b > std::numeric_limits<int64_t>::max() - a ? std::numeric_limits<int64_t>::max() : a + b; }
Shortfall ShortfallOf(const Resources& need, const Resources& room) {
  Shortfall s;
  ForEachNeeded(need, room, Resources(), [&](std::string_view name, int64_t n, int64_t r, int64_t) {
    const int64_t gap = r >= n ? 0 : static_cast<int64_t>(std::min<__int128>(
                                         static_cast<__int128>(n) - r, std::numeric_limits<int64_t>::max()));
    int64_t& sum = IsGpu(name) ? s.gpu : name == "cpu" ? s.cpu : name == "memory" ? s.memory : s.other;
    sum = SaturatingAdd(sum, gap);
  });
  return s;
}
// What `after` adds to `before` (after covers before in every part: needs only grow).
Shortfall Growth(const Shortfall& after, const Shortfall& before) {
  return {after.gpu - before.gpu, after.cpu - before.cpu, after.memory - before.memory, after.other - before.other};
}
Shortfall Sum(const Shortfall& a, const Shortfall& b) {
  return {SaturatingAdd(a.gpu, b.gpu), SaturatingAdd(a.cpu, b.cpu), SaturatingAdd(a.memory, b.memory),
          SaturatingAdd(a.other, b.other)};
}

// Nodes for `members`, each in turn (docs/defrag.md, "Gangs"): the candidate where the shortfall
// of what is reserved there grows least; ties go to a node already chosen, then by name. Nothing
// when a member has no candidate that could hold it beside what is already reserved there.
struct Assignment {
  Shortfall total;
  std::vector<ReservedNode> nodes;  // in the order first chosen
};
std::optional<Assignment> Assign(const std::vector<MemberCandidates>& members) {
  Assignment a;
  std::map<std::string_view, size_t> chosen;  // node -> its index in a.nodes
  for (const MemberCandidates& m : members) {
    std::optional<std::tuple<Shortfall, bool, std::string_view>> best;
    const NodeInfo* best_node = nullptr;
    Resources best_after;
    for (const NodeInfo* node : m.nodes) {
      auto it = chosen.find(node->name());
      const Resources before = it == chosen.end() ? Resources() : a.nodes[it->second].need;
      Resources after = before;
      if (!after.Add(m.need).ok() || !CouldHold(*node, after)) continue;
      const Resources room = node->Room();
      std::tuple<Shortfall, bool, std::string_view> candidate{
          Growth(ShortfallOf(after, room), ShortfallOf(before, room)), it == chosen.end(), node->name()};
      if (best.has_value() && !(candidate < *best)) continue;
      best = candidate;
      best_node = node;
      best_after = std::move(after);
    }
    if (!best.has_value()) return std::nullopt;
    a.total = Sum(a.total, std::get<0>(*best));
    auto [it, added] = chosen.emplace(best_node->name(), a.nodes.size());
    if (added) a.nodes.push_back(ReservedNode{.node = std::string(best_node->name())});
    a.nodes[it->second].pods.push_back(m.pod);
    a.nodes[it->second].need = std::move(best_after);
  }
  return a;
}

std::string NodeList(const std::vector<ReservedNode>& nodes) {
  std::vector<std::string_view> names;
  for (const ReservedNode& n : nodes) names.push_back(n.node);
  return StrCat(nodes.size() == 1 ? "node " : "nodes ", StrJoin(names, ", "), nodes.size() == 1 ? " is" : " are");
}

std::string HolderName(const Held& held) { return held.gang ? StrCat("gang ", held.holder) : held.holder; }

int64_t GpuMilli(const Pod& pod) { return gpu::ReadGpuRequest(pod).total_milli(); }

int64_t Seconds(absl::Duration d) { return absl::ToInt64Seconds(d); }

}  // namespace

absl::StatusOr<ReservationArgs> Reservation::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"waitSeconds", "minPodGpus"}));
  Args args;
  ASSIGN_OR_RETURN(args.wait_seconds, reader.Int("waitSeconds", args.wait_seconds, 0,
                                                 std::numeric_limits<int32_t>::max()));
  ASSIGN_OR_RETURN(args.min_pod_gpus, reader.Int("minPodGpus", args.min_pod_gpus, 0, 1024));
  return args;
}

absl::StatusOr<std::unique_ptr<Reservation>> Reservation::New(Args args, Handle& handle) {
  return std::make_unique<Reservation>(handle, args);
}

Status Reservation::PreFilter(CycleState& state, const Pod& pod) {
  if (wait_ == absl::ZeroDuration()) return Status::Skip();
  Refresh(handle_.clock().Now());
  if (held_.empty()) return Status::Skip();
  const int32_t priority = handle_.PriorityOf(pod);
  std::optional<std::string> gang;  // the pod's gang key, looked up once a gang holds a level
  auto s = std::make_unique<PodState>();
  for (const auto& [level, held] : held_) {
    if (level < priority) continue;
    if (held.gang) {
      if (!gang.has_value()) gang = handle_.GangKeyOf(pod);
      if (held.holder == *gang) continue;
    } else if (held.holder == pod.Key()) {
      continue;
    }
    s->levels.push_back(level);
  }
  if (s->levels.empty()) return Status::Skip();
  s->take = WorstTake(NeedOf(handle_.FrameworkFor(pod.scheduler_name), pod));
  state.Write(kName, std::move(s));
  return Status::Ok();
}

Status Reservation::Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  const auto* s = state.Read<PodState>(kName);
  // A pod nominated here was promised this room (its preemption's victims, or the pods moved
  // for it, leave for it): a reservation does not take it back, or the pod would evict again.
  if (s == nullptr || pod.nominated_node_name == node.name()) return Status::Ok();
  auto it = by_node_.find(node.name());
  if (it == by_node_.end()) return Status::Ok();
  const auto& [held, reserved] = it->second;
  if (!std::binary_search(s->levels.begin(), s->levels.end(), held->priority)) return Status::Ok();
  if (!Crowds(reserved->need, node.Room(), s->take)) return Status::Ok();
  return Status::Unschedulable(
      StrCat("node ", reserved->node, " is reserved for ", HolderName(*held), " (waiting since ",
             FormatRfc3339(held->since), ", reserved after ",
             Seconds(held->reserved - held->since), " s)"));
}

bool Reservation::AppendFilterKey(const CycleState& state, const Pod& pod, std::string& key) const {
  const auto* s = state.Read<PodState>(kName);
  if (s == nullptr) return true;
  AppendKeyString(pod.nominated_node_name, key);
  AppendResources(s->take, key);
  for (int32_t level : s->levels) AppendKeyInt(level, key);
  return true;
}

PostFilterResult Reservation::PostFilter(CycleState& state, const Pod& pod, const NodeStatusMap& filtered) {
  PostFilterResult result{.status = Status::Unschedulable("no reservation")};
  if (wait_ == absl::ZeroDuration() || GpuMilli(pod) < min_gpu_milli_) return result;
  const absl::Time now = handle_.clock().Now();
  Refresh(now);
  const Framework* fw = handle_.FrameworkFor(pod.scheduler_name);
  const std::string key = pod.Key();
  // Held back by its quota: room will not help, so the attempt renews nothing and the pod
  // waits (and holds a level's head) no more.
  if (fw != nullptr && !QuotaAdmitsSomewhere(*fw, state, pod)) {
    Forget(key, kQuotaExceeded);
    return result;
  }
  const int32_t priority = handle_.PriorityOf(pod);
  const Waiter& waiter = NoteFailure(key, pod.meta.uid, priority, now);
  if (auto it = held_.find(priority); it != held_.end()) {
    if (it->second.holder != key) return result;  // one reservation per level
    // Asked again on every tier of a flavored pod (each run sees the other tiers' nodes as
    // unresolvable): the node is kept unless the pod's own filters turn it away.
    const std::string& node = it->second.nodes.front().node;
    const std::string_view lost = fw == nullptr ? std::string_view() : LostNode(*fw, state, pod, node);
    if (lost.empty()) {
      result.status = Status::Unschedulable(StrCat("node ", node, " is reserved for the pod"));
      return result;
    }
    Release(it, lost);  // look for another node below
  }
  if (!pod.nominated_node_name.empty() || !MayReserve(key, waiter, now)) return result;
  MemberCandidates candidates{.pod = key, .need = NeedOf(fw, pod)};
  for (const auto& [name, status] : filtered) {
    const NodeInfo* node = handle_.snapshot().Get(name);
    if (status.code() != Code::kUnschedulable || !Reservable(node, candidates.need)) continue;
    if (fw != nullptr && !fw->RunQuotaFilters(state, pod, *node).ok()) continue;  // room would not do
    candidates.nodes.push_back(node);
  }
  std::optional<Assignment> chosen = Assign({candidates});
  if (!chosen.has_value()) return result;
  const std::string message =
      StrCat(NodeList(chosen->nodes), " reserved for the pod after it waited ", Seconds(now - waiter.since), " s");
  if (ClusterApi* api = handle_.api()) api->RecordEvent(pod, "Normal", "Reserved", message);
  Make(Held{.holder = key, .uid = pod.meta.uid, .priority = priority, .nodes = std::move(chosen->nodes),
            .since = waiter.since, .reserved = now});
  result.status = Status::Unschedulable(message);
  return result;
}

std::string_view Reservation::LostNode(const Framework& fw, const CycleState& state, const Pod& pod,
                                       const std::string& name) const {
  const NodeInfo* node = handle_.snapshot().Get(name);
  if (node == nullptr) return kNoFit;
  if (!fw.RunQuotaFilters(state, pod, *node).ok()) return kQuotaExceeded;
  return fw.RunFilters(state, pod, *node).code() == Code::kUnschedulableAndUnresolvable ? kNoFit : std::string_view();
}

bool Reservation::QuotaAdmitsSomewhere(const Framework& fw, const CycleState& state, const Pod& pod) const {
  for (const NodeInfo* node : handle_.snapshot().nodes()) {
    if (fw.RunQuotaFilters(state, pod, *node).ok()) return true;
  }
  return false;
}

GangPostFilterResult Reservation::PostFilterGang(const PendingGang& gang) {
  GangPostFilterResult result;
  if (wait_ == absl::ZeroDuration() || gang.members.empty() || gang.states.size() != gang.members.size()) {
    return result;
  }
  const Pod& head = *gang.members.front();
  const Framework* fw = handle_.FrameworkFor(head.scheduler_name);
  const std::string key = handle_.GangKeyOf(head);
  if (fw == nullptr || key.empty()) return result;
  int64_t gpu_milli = 0;
  for (const PodRef& m : gang.members) gpu_milli += GpuMilli(*m);
  if (gpu_milli < min_gpu_milli_) return result;
  const absl::Time now = handle_.clock().Now();
  Refresh(now);
  for (size_t i = 0; i < gang.members.size(); ++i) {
    if (!QuotaAdmitsSomewhere(*fw, *gang.states[i], *gang.members[i])) {
      Forget(key, kQuotaExceeded);  // held back by its quota, as a pod (PostFilter)
      return result;
    }
  }
  const int32_t priority = handle_.PriorityOf(head);
  const Waiter& waiter = NoteFailure(key, "", priority, now);
  if (auto it = held_.find(priority); it != held_.end()) {
    if (it->second.holder != key) return result;  // one reservation per level
    // A member its reserved node now turns away for good (cordoned, tainted): reserve anew.
    bool turned_away = false;
    for (const ReservedNode& r : it->second.nodes) {
      const NodeInfo* node = handle_.snapshot().Get(r.node);
      for (size_t i = 0; node != nullptr && i < gang.members.size(); ++i) {
        if (std::find(r.pods.begin(), r.pods.end(), gang.members[i]->Key()) == r.pods.end()) continue;
        turned_away |= fw->RunFilters(*gang.states[i], *gang.members[i], *node).code() ==
                       Code::kUnschedulableAndUnresolvable;
      }
    }
    if (!turned_away) {
      result.message = StrCat(NodeList(it->second.nodes), " reserved for the gang.");
      return result;
    }
    Release(it, kNoFit);
  }
  for (const PodRef& m : gang.members) {
    if (!m->nominated_node_name.empty()) return result;  // a preemption promised it room
  }
  if (!MayReserve(key, waiter, now)) return result;
  // The members' candidates, split by tier (a flavored queue's flavor) and topology domain: the
  // gang is placed within one of each. Tiers in the walk every way of making room takes, lowest
  // first: the first tier with an assignment, as the planner places the gang; within it the
  // domain with the least to wait for.
  const std::vector<MemberCandidates> all = GangCandidates(*fw, gang);
  if (all.empty() || !QuotaHolds(*fw, gang, all)) return result;  // room alone would not do
  const TierWalk walk(*gang.states.front(), handle_.snapshot().nodes());
  std::optional<Assignment> chosen;
  for (const TierWalk::Tier& tier : walk.tiers()) {
    std::map<std::string, std::vector<MemberCandidates>> domains;
    for (size_t i = 0; i < all.size(); ++i) {
      for (const NodeInfo* node : all[i].nodes) {
        if (tier.screen && !tier.screen(*node)) continue;
        std::string domain;
        if (!gang.topology_key.empty()) {
          const Node* n = node->node();
          auto label = n->meta.labels.find(gang.topology_key);
          if (label == n->meta.labels.end()) continue;
          domain = label->second;
        }
        std::vector<MemberCandidates>& members = domains[domain];
        if (members.empty()) {
          for (const MemberCandidates& m : all) members.push_back({.pod = m.pod, .need = m.need});
        }
        members[i].nodes.push_back(node);
      }
    }
    for (const auto& [domain, members] : domains) {
      std::optional<Assignment> a = Assign(members);
      if (a.has_value() && (!chosen.has_value() || a->total < chosen->total)) chosen = std::move(a);
    }
    if (chosen.has_value()) break;
  }
  if (!chosen.has_value()) return result;
  result.message = StrCat(NodeList(chosen->nodes), " reserved for the gang after it waited ",
                          Seconds(now - waiter.since), " s.");
  if (ClusterApi* api = handle_.api()) api->RecordEvent(head, "Normal", "Reserved", result.message);
  Make(Held{.holder = key, .gang = true, .priority = priority, .nodes = std::move(chosen->nodes),
            .since = waiter.since, .reserved = now});
  return result;
}

std::vector<MemberCandidates> Reservation::GangCandidates(const Framework& fw, const PendingGang& gang) const {
  std::vector<MemberCandidates> out;
  const size_t need = std::min<size_t>(static_cast<size_t>(std::max(gang.need, 0)), gang.members.size());
  for (size_t i = 0; i < need; ++i) {
    const Pod& member = *gang.members[i];
    MemberCandidates c{.pod = member.Key(), .need = NeedOf(&fw, member)};
    for (const NodeInfo* node : handle_.snapshot().nodes()) {
      if (!Reservable(node, c.need)) continue;
      const Status status = fw.RunFilters(*gang.states[i], member, *node);
      if (!status.ok() && fw.IsQuotaPlugin(status.plugin())) return {};  // room will not help
      if (status.ok() || status.code() == Code::kUnschedulable) c.nodes.push_back(node);
    }
    if (c.nodes.empty()) return {};
    out.push_back(std::move(c));
  }
  return out;
}

bool Reservation::QuotaHolds(const Framework& fw, const PendingGang& gang,
                             const std::vector<MemberCandidates>& candidates) const {
  // Each member alone passed its filters; together they may not fit the queue. The last one is
  // filtered by the quota plugins with the others added to its cycle state, as the gang planner
  // adds members placed before it.
  if (candidates.size() < 2) return true;
  const size_t last = candidates.size() - 1;
  WhatIf plan(&handle_.snapshot());
  for (size_t j = 0; j < last; ++j) plan.Place(*gang.members[j], candidates[j].nodes.front()->name());
  CycleState state = gang.states[last]->Clone();
  if (!plan.Replay(fw, state, *gang.members[last]).ok()) return false;
  return fw.RunQuotaFilters(state, *gang.members[last], *plan.Get(candidates[last].nodes.front()->name())).ok();
}

Status Reservation::Reserve(CycleState& /*state*/, const Pod& pod, const std::string& /*node*/) {
  if (waiters_.empty()) return Status::Ok();
  Forget(pod.Key(), kPlaced);
  if (const std::string gang = handle_.GangKeyOf(pod); !gang.empty()) Forget(gang, kPlaced);
  return Status::Ok();
}

ReservationFigures Reservation::figures() const {
  absl::MutexLock lock(&mu_);
  return figures_;
}

const Reservation::Waiter& Reservation::NoteFailure(const std::string& key, const std::string& uid,
                                                    int32_t priority, absl::Time now) {
  auto it = waiters_.find(key);
  if (it != waiters_.end() && (it->second.uid != uid || it->second.priority != priority)) {
    Forget(key, kExpired);  // another pod under the name, or another level: a new wait
    it = waiters_.end();
  }
  if (it == waiters_.end()) {
    it = waiters_.emplace(key, Waiter{.uid = uid, .priority = priority, .since = now, .last_failed = now}).first;
    by_level_[priority].emplace(now, key);
  } else {
    by_last_failure_.erase({it->second.last_failed, key});
    it->second.last_failed = now;
  }
  by_last_failure_.emplace(now, key);
  return it->second;
}

void Reservation::Forget(const std::string& key, std::string_view reason) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  const Waiter w = it->second;
  waiters_.erase(it);
  by_last_failure_.erase({w.last_failed, key});
  if (auto level = by_level_.find(w.priority); level != by_level_.end()) {
    level->second.erase({w.since, key});
    if (level->second.empty()) by_level_.erase(level);
  }
  if (auto held = held_.find(w.priority); held != held_.end() && held->second.holder == key) {
    Release(held, reason);
  }
}

void Reservation::Refresh(absl::Time now) {
  while (!by_last_failure_.empty() && by_last_failure_.begin()->first + kLease <= now) {
    const std::string key = by_last_failure_.begin()->second;
    Forget(key, kExpired);
  }
  for (auto it = held_.begin(); it != held_.end();) {
    auto next = std::next(it);
    for (const ReservedNode& r : it->second.nodes) {
      const NodeInfo* node = handle_.snapshot().Get(r.node);
      if (node == nullptr || node->node() == nullptr || !CouldHold(*node, r.need)) {
        Release(it, kNoFit);
        break;
      }
    }
    it = next;
  }
}

bool Reservation::IsHead(const std::string& key, const Waiter& w) const {
  auto level = by_level_.find(w.priority);
  return level != by_level_.end() && !level->second.empty() && level->second.begin()->second == key;
}

bool Reservation::MayReserve(const std::string& key, const Waiter& w, absl::Time now) const {
  return now - w.since >= wait_ && IsHead(key, w);
}

bool Reservation::Reservable(const NodeInfo* node, const Resources& need) const {
  return node != nullptr && node->node() != nullptr && !by_node_.contains(node->name()) && CouldHold(*node, need);
}

void Reservation::Make(Held held) {
  auto it = held_.insert_or_assign(held.priority, std::move(held)).first;
  for (const ReservedNode& r : it->second.nodes) by_node_[r.node] = {&it->second, &r};
  ++version_;
  absl::MutexLock lock(&mu_);
  figures_.active = static_cast<int64_t>(held_.size());
  ++figures_.made;
}

void Reservation::Release(std::map<int32_t, Held>::iterator it, std::string_view reason) {
  for (const ReservedNode& r : it->second.nodes) by_node_.erase(r.node);
  held_.erase(it);
  ++version_;
  absl::MutexLock lock(&mu_);
  figures_.active = static_cast<int64_t>(held_.size());
  ++figures_.released[std::string(reason)];
}

}  // namespace tessel::reservation
