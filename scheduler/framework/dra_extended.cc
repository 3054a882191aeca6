// Extended resources left to DRA on nodes without them (see dra_extended.h).
#include "scheduler/framework/dra_extended.h"

#include "scheduler/framework/node_local.h"

namespace tessel {

const DraExtendedResources* DraExtendedOf(const CycleState& state) {
  return state.ReadValue<DraExtendedResources>(kDraExtendedStateKey);
}

bool ServedByDra(const DraExtendedResources* served, std::string_view resource, const Resources& allocatable) {
  return served != nullptr && allocatable.Get(resource) == 0 && served->class_of.contains(resource);
}

bool ServedByDra(const CycleState& state, std::string_view resource, const NodeInfo& node) {
  return ServedByDra(DraExtendedOf(state), resource, node.allocatable());
}

void AppendDraExtendedKey(const CycleState& state, std::string& key) {
  const DraExtendedResources* served = DraExtendedOf(state);
  if (served == nullptr) {
    AppendKeyInt(0, key);
    return;
  }
  AppendKeyInt(static_cast<int64_t>(served->class_of.size()), key);
  for (const auto& [resource, cls] : served->class_of) {
    AppendKeyString(resource, key);
    AppendKeyString(cls, key);
  }
}

bool MayBeDraExtendedResource(std::string_view name) {
  if (name.starts_with(kDeviceClassResourcePrefix)) return name.size() > kDeviceClassResourcePrefix.size();
  // As Kubernetes' IsExtendedResourceName: domain-prefixed, outside kubernetes.io, not a quota
  // name ("requests.").
  return name.find('/') != std::string_view::npos && name.find("kubernetes.io/") == std::string_view::npos &&
         !name.starts_with("requests.");
}

}  // namespace tessel
