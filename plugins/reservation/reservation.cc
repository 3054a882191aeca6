#include "plugins/reservation/reservation.h"

#include <algorithm>
#include <compare>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "scheduler/framework/framework.h"
#include "scheduler/framework/plugin_util.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/util/status_macros.h"

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
Shortfall ShortfallOf(const Resources& need, const Resources& room) {
  Shortfall s;
  auto add = [](int64_t& sum, int64_t gap) {
    sum = gap > std::numeric_limits<int64_t>::max() - sum ? std::numeric_limits<int64_t>::max() : sum + gap;
  };
  ForEachNeeded(need, room, Resources(), [&](std::string_view name, int64_t n, int64_t r, int64_t) {
    const int64_t gap = r >= n ? 0 : static_cast<int64_t>(std::min<__int128>(
                                         static_cast<__int128>(n) - r, std::numeric_limits<int64_t>::max()));
    if (IsGpu(name)) return add(s.gpu, gap);
    if (name == "cpu") return add(s.cpu, gap);
    if (name == "memory") return add(s.memory, gap);
    add(s.other, gap);
  });
  return s;
}

int64_t Seconds(absl::Duration d) { return absl::ToInt64Seconds(d); }

}  // namespace

absl::StatusOr<ReservationArgs> Reservation::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"waitSeconds"}));
  Args args;
  ASSIGN_OR_RETURN(args.wait_seconds, reader.Int("waitSeconds", args.wait_seconds, 0,
                                                 std::numeric_limits<int32_t>::max()));
  return args;
}

absl::StatusOr<std::unique_ptr<Reservation>> Reservation::New(Args args, Handle& handle) {
  return std::make_unique<Reservation>(handle, absl::Seconds(args.wait_seconds));
}

Status Reservation::PreFilter(CycleState& state, const Pod& pod) {
  if (wait_ == absl::ZeroDuration()) return Status::Skip();
  Refresh(handle_.clock().Now());
  if (held_.empty()) return Status::Skip();
  const int32_t priority = handle_.PriorityOf(pod);
  auto s = std::make_unique<PodState>();
  for (const auto& [level, held] : held_) {
    if (level >= priority && held.holder != pod.Key()) s->levels.push_back(level);
  }
  if (s->levels.empty()) return Status::Skip();
  s->take = WorstTake(NeedOf(handle_.FrameworkFor(pod.scheduler_name), pod));
  state.Write(kName, std::move(s));
  return Status::Ok();
}

Status Reservation::Filter(const CycleState& state, const Pod& /*pod*/, const NodeInfo& node) const {
  const auto* s = state.Read<PodState>(kName);
  if (s == nullptr) return Status::Ok();
  auto it = by_node_.find(node.name());
  if (it == by_node_.end()) return Status::Ok();
  const Held& held = *it->second;
  if (!std::binary_search(s->levels.begin(), s->levels.end(), held.priority)) return Status::Ok();
  if (!Crowds(held.need, node.Room(), s->take)) return Status::Ok();
  return Status::Unschedulable(
      StrCat("node ", held.node, " is reserved for ", held.holder, " (waiting since ",
             absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", held.since, absl::UTCTimeZone()), ", reserved after ",
             Seconds(held.reserved - held.since), " s)"));
}

bool Reservation::AppendFilterKey(const CycleState& state, const Pod& /*pod*/, std::string& key) const {
  const auto* s = state.Read<PodState>(kName);
  if (s == nullptr) return true;
  AppendResources(s->take, key);
  for (int32_t level : s->levels) AppendKeyInt(level, key);
  return true;
}

PostFilterResult Reservation::PostFilter(CycleState& /*state*/, const Pod& pod, const NodeStatusMap& filtered) {
  PostFilterResult result{.status = Status::Unschedulable("no reservation")};
  if (wait_ == absl::ZeroDuration()) return result;
  const absl::Time now = handle_.clock().Now();
  Refresh(now);
  const int32_t priority = handle_.PriorityOf(pod);
  const Waiter& waiter = NoteFailure(pod, priority, now);
  const absl::Time since = waiter.since;
  if (auto it = held_.find(priority); it != held_.end()) {
    if (it->second.holder != pod.Key()) return result;  // one reservation per level
    auto on_node = filtered.find(it->second.node);
    if (on_node == filtered.end() || on_node->second.code() != Code::kUnschedulableAndUnresolvable) {
      result.status = Status::Unschedulable(StrCat("node ", it->second.node, " is reserved for the pod"));
      return result;
    }
    Release(it, kNoFit);  // the node turned it away for good: look for another one below
  }
  if (!pod.nominated_node_name.empty() || now - since < wait_ || !IsHead(pod.Key(), waiter)) return result;
  const Resources need = NeedOf(handle_.FrameworkFor(pod.scheduler_name), pod);
  std::string node = ClosestNode(pod, need, filtered);
  if (node.empty()) return result;
  const std::string message = StrCat("node ", node, " is reserved for the pod after it waited ",
                                     Seconds(now - since), " s");
  if (ClusterApi* api = handle_.api()) api->RecordEvent(pod, "Normal", "Reserved", message);
  Make(Held{.holder = pod.Key(), .uid = pod.meta.uid, .priority = priority, .node = std::move(node),
            .since = since, .reserved = now, .need = need});
  result.status = Status::Unschedulable(message);
  return result;
}

Status Reservation::Reserve(CycleState& /*state*/, const Pod& pod, const std::string& /*node*/) {
  Forget(pod.Key(), kPlaced);
  return Status::Ok();
}

ReservationFigures Reservation::figures() const {
  absl::MutexLock lock(&mu_);
  return figures_;
}

const Reservation::Waiter& Reservation::NoteFailure(const Pod& pod, int32_t priority, absl::Time now) {
  const std::string key = pod.Key();
  auto it = waiters_.find(key);
  if (it != waiters_.end() && (it->second.uid != pod.meta.uid || it->second.priority != priority)) {
    Forget(key, kExpired);  // another pod under the name, or another level: a new wait
    it = waiters_.end();
  }
  if (it == waiters_.end()) {
    it = waiters_.emplace(key, Waiter{.uid = pod.meta.uid, .priority = priority, .since = now, .last_failed = now}).first;
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
    const NodeInfo* node = handle_.snapshot().Get(it->second.node);
    if (node == nullptr || node->node() == nullptr || !CouldHold(*node, it->second.need)) Release(it, kNoFit);
    it = next;
  }
}

bool Reservation::IsHead(const std::string& key, const Waiter& w) const {
  auto level = by_level_.find(w.priority);
  return level != by_level_.end() && !level->second.empty() && level->second.begin()->second == key;
}

std::string Reservation::ClosestNode(const Pod& pod, const Resources& need, const NodeStatusMap& filtered) const {
  const Framework* fw = handle_.FrameworkFor(pod.scheduler_name);
  std::optional<std::tuple<Shortfall, std::string_view>> best;
  for (const auto& [name, status] : filtered) {
    // Held back by its quota: room will not help.
    if (fw != nullptr && fw->IsQuotaPlugin(status.plugin())) return "";
    if (status.code() != Code::kUnschedulable || by_node_.contains(name)) continue;
    const NodeInfo* node = handle_.snapshot().Get(name);
    if (node == nullptr || !CouldHold(*node, need)) continue;
    std::tuple<Shortfall, std::string_view> candidate{ShortfallOf(need, node->Room()), name};
    if (!best.has_value() || candidate < *best) best = candidate;
  }
  return best.has_value() ? std::string(std::get<1>(*best)) : std::string();
}

void Reservation::Make(Held held) {
  auto it = held_.insert_or_assign(held.priority, std::move(held)).first;
  by_node_[it->second.node] = &it->second;
  ++version_;
  absl::MutexLock lock(&mu_);
  figures_.active = static_cast<int64_t>(held_.size());
  ++figures_.made;
}

void Reservation::Release(std::map<int32_t, Held>::iterator it, std::string_view reason) {
  by_node_.erase(it->second.node);
  held_.erase(it);
  ++version_;
  absl::MutexLock lock(&mu_);
  figures_.active = static_cast<int64_t>(held_.size());
  ++figures_.released[std::string(reason)];
}

}  // namespace tessel::reservation
