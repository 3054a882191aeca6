#include "plugins/node_volume_limits/node_volume_limits.h"

#include <map>
#include <optional>

#include "scheduler/api/storage.h"
#include "scheduler/util/strings.h"

namespace tessel::node_volume_limits {
namespace {

// An attachable volume: its driver and its name unique across drivers ("driver/handle").
struct Volume {
  std::string driver;
  std::string unique;
};

// The driver and handle a claim's volume is attached by, or nullopt when it is not counted.
std::optional<Volume> VolumeOf(const ClusterObjects& objects, const PersistentVolumeClaim& claim) {
  if (claim.bound()) {
    const PersistentVolume* pv = objects.Volume(claim.volume_name);
    if (pv != nullptr) {
      if (pv->csi_driver.empty()) return std::nullopt;  // in-tree or local: not counted
      return Volume{pv->csi_driver, StrCat(pv->csi_driver, "/", pv->csi_volume_handle)};
    }
  }
  // Not bound yet (or its PV not seen yet): it will be a volume of its class's provisioner.
  if (claim.storage_class.empty()) return std::nullopt;
  const StorageClass* sc = objects.Class(claim.storage_class);
  if (sc == nullptr || sc->provisioner == kNoProvisioner) return std::nullopt;
  return Volume{sc->provisioner, StrCat(sc->provisioner, "/", claim.Key())};
}

// The pod's counted volumes, by unique name; claims not found are skipped (VolumeBinding
// reports those).
void AddVolumesOf(const ClusterObjects& objects, const Pod& pod, std::map<std::string, std::string>& out) {
  for (const PodVolume& v : pod.volumes) {
    const PersistentVolumeClaim* claim = objects.Claim(pod.meta.namespace_, ClaimNameOf(pod, v));
    if (claim == nullptr) continue;
    if (std::optional<Volume> volume = VolumeOf(objects, *claim)) out[volume->unique] = volume->driver;
  }
}

struct State {
  std::shared_ptr<const ClusterObjects> objects;
  std::map<std::string, std::string> volumes;  // unique name -> driver
};

// The node's limit for `driver`: its CSINode's, else its allocatable's; nullopt: unlimited.
std::optional<int64_t> LimitOf(const ClusterObjects& objects, const Node& node, const std::string& driver) {
  if (const CSINode* csi = objects.CSINodeOf(node.meta.name)) {
    if (std::optional<int64_t> limit = csi->LimitOf(driver)) return limit;
  }
  auto it = node.attach_limits.find(driver);
  if (it == node.attach_limits.end()) return std::nullopt;
  return it->second;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NodeVolumeLimits>> NodeVolumeLimits::New(Handle& handle) {
  return std::make_unique<NodeVolumeLimits>(handle);
}

Status NodeVolumeLimits::PreFilter(CycleState& state, const Pod& pod) {
  if (!UsesClaims(pod)) return Status::Skip();
  State s{.objects = handle_.Objects()};
  if (s.objects == nullptr) return Status::Skip();
  AddVolumesOf(*s.objects, pod, s.volumes);
  if (s.volumes.empty()) return Status::Skip();
  state.WriteValue(kName, std::move(s));
  return Status::Ok();
}

Status NodeVolumeLimits::Filter(const CycleState& state, const Pod& pod, const NodeInfo& info) const {
  const State* s = state.ReadValue<State>(kName);
  if (s == nullptr || info.node() == nullptr) return Status::Ok();
  const ClusterObjects& objects = *s->objects;
  // Only drivers with a limit here need the node's attached volumes.
  std::map<std::string, int64_t> limits;  // driver -> limit
  for (const auto& [unique, driver] : s->volumes) {
    if (limits.contains(driver)) continue;
    if (std::optional<int64_t> limit = LimitOf(objects, *info.node(), driver)) limits[driver] = *limit;
  }
  if (limits.empty()) return Status::Ok();
  std::map<std::string, std::string> attached;  // unique name -> driver, over the node's pods
  for (const PodRef& other : info.pods()) {
    if (other->Key() != pod.Key() && !other->volumes.empty()) AddVolumesOf(objects, *other, attached);
  }
  // Only drivers the pod adds a volume of are checked (as kube-scheduler: a pod whose volumes
  // are all attached here already adds nothing, even to a node over its limit).
  std::map<std::string, int64_t> adding;  // driver -> the pod's volumes not attached here
  for (const auto& [unique, driver] : s->volumes) {
    if (limits.contains(driver) && !attached.contains(unique)) ++adding[driver];
  }
  for (const auto& [unique, driver] : attached) {
    if (adding.contains(driver)) ++adding[driver];
  }
  for (const auto& [driver, count] : adding) {
    if (count > limits[driver]) return Status::Unschedulable(std::string(kReasonMaxVolumeCountExceeded));
  }
  return Status::Ok();
}

}  // namespace tessel::node_volume_limits
