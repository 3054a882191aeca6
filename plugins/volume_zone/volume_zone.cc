#include "plugins/volume_zone/volume_zone.h"

#include <algorithm>

#include "absl/strings/str_split.h"
#include "scheduler/api/storage.h"
#include "scheduler/util/strings.h"

namespace tessel::volume_zone {

bool NodeSatisfies(const Requirements& requirements, const Node& node) {
  const StringMap& labels = node.meta.labels;
  const bool has_topology = std::any_of(std::begin(kTopologyLabels), std::end(kTopologyLabels),
                                        [&](std::string_view key) { return labels.contains(key); });
  if (!has_topology) return true;
  for (const auto& [key, values] : requirements) {
    auto it = labels.find(key);
    const std::string value = it == labels.end() ? std::string() : it->second;
    if (std::find(values.begin(), values.end(), value) == values.end()) return false;
  }
  return true;
}

absl::StatusOr<std::unique_ptr<VolumeZone>> VolumeZone::New(Handle& handle) {
  return std::make_unique<VolumeZone>(handle);
}

Status VolumeZone::PreFilter(CycleState& state, const Pod& pod) {
  if (!UsesClaims(pod)) return Status::Skip();
  std::shared_ptr<const ClusterObjects> objects = handle_.Objects();
  if (objects == nullptr) return Status::Skip();  // VolumeBinding names the problem
  absl::StatusOr<std::vector<const PersistentVolumeClaim*>> claims = objects->ClaimsOf(pod);
  if (!claims.ok()) return Status::Unresolvable(std::string(claims.status().message()));
  Requirements requirements;
  for (const PersistentVolumeClaim* claim : *claims) {
    if (!claim->bound()) continue;
    const PersistentVolume* volume = objects->Volume(claim->volume_name);
    if (volume == nullptr) {
      return Status::Unresolvable(StrCat("persistentvolume \"", claim->volume_name, "\" not found"));
    }
    for (std::string_view key : kTopologyLabels) {
      auto it = volume->meta.labels.find(key);
      if (it == volume->meta.labels.end()) continue;
      std::vector<std::string> zones = absl::StrSplit(it->second, "__");
      requirements.emplace_back(std::string(key), std::move(zones));
    }
  }
  if (requirements.empty()) return Status::Skip();
  state.WriteValue(kName, std::move(requirements));
  return Status::Ok();
}

Status VolumeZone::Filter(const CycleState& state, const Pod&, const NodeInfo& node) const {
  const Requirements* requirements = state.ReadValue<Requirements>(kName);
  if (requirements == nullptr || node.node() == nullptr) return Status::Ok();
  if (NodeSatisfies(*requirements, *node.node())) return Status::Ok();
  return Status::Unresolvable(std::string(kReasonConflict));
}

}  // namespace tessel::volume_zone
