#include "plugins/volume_restrictions/volume_restrictions.h"

#include "scheduler/api/storage.h"
#include "scheduler/util/strings.h"

namespace tessel::volume_restrictions {
namespace {

// The pod's ReadWriteOncePod claims (namespace/name) and how many other pods use them.
struct State {
  StringSet claims;
  int64_t conflicts = 0;
};

// How many of `claims` the pod uses (a pod counts once per claim it mounts).
int64_t Uses(const StringSet& claims, const Pod& pod) {
  int64_t n = 0;
  for (const PodVolume& v : pod.volumes) {
    n += claims.contains(StrCat(pod.meta.namespace_, "/", ClaimNameOf(pod, v))) ? 1 : 0;
  }
  return n;
}

}  // namespace

absl::StatusOr<std::unique_ptr<VolumeRestrictions>> VolumeRestrictions::New(Handle& handle) {
  return std::make_unique<VolumeRestrictions>(handle);
}

Status VolumeRestrictions::PreFilter(CycleState& state, const Pod& pod) {
  if (!UsesClaims(pod)) return Status::Skip();
  std::shared_ptr<const ClusterObjects> objects = handle_.Objects();
  if (objects == nullptr) return Status::Skip();
  absl::StatusOr<std::vector<const PersistentVolumeClaim*>> claims = objects->ClaimsOf(pod);
  if (!claims.ok()) return Status::Unresolvable(std::string(claims.status().message()));
  State s;
  for (const PersistentVolumeClaim* claim : *claims) {
    if (claim->access_modes & kReadWriteOncePod) s.claims.insert(claim->Key());
  }
  if (s.claims.empty()) return Status::Skip();
  for (const NodeInfo* info : handle_.snapshot().nodes()) {
    for (const PodRef& other : info->pods()) {
      if (other->Key() != pod.Key()) s.conflicts += Uses(s.claims, *other);
    }
  }
  state.WriteValue(kName, std::move(s));
  return Status::Ok();
}

Status VolumeRestrictions::AddPod(CycleState& state, const Pod& to_schedule, const Pod& other,
                                  const NodeInfo&) const {
  State* s = state.ReadMutableValue<State>(kName);
  if (s != nullptr && other.Key() != to_schedule.Key()) s->conflicts += Uses(s->claims, other);
  return Status::Ok();
}

Status VolumeRestrictions::RemovePod(CycleState& state, const Pod& to_schedule, const Pod& other,
                                     const NodeInfo&) const {
  State* s = state.ReadMutableValue<State>(kName);
  if (s != nullptr && other.Key() != to_schedule.Key()) s->conflicts -= Uses(s->claims, other);
  return Status::Ok();
}

Status VolumeRestrictions::Filter(const CycleState& state, const Pod&, const NodeInfo&) const {
  const State* s = state.ReadValue<State>(kName);
  if (s == nullptr || s->conflicts <= 0) return Status::Ok();
  return Status::Unschedulable(std::string(kReasonReadWriteOncePodConflict));
}

}  // namespace tessel::volume_restrictions
