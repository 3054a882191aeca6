// Small behaviours of the DRA objects: taints, node selection, attribute lookup.
#include "scheduler/dra/objects.h"

#include "scheduler/util/strings.h"

namespace tessel::dra {

std::string FormatDeviceId(const DeviceId& id) {
  return StrCat(id.driver, "/", id.pool, "/", id.device);
}

bool Tolerates(const DeviceToleration& toleration, const DeviceTaint& taint) {
  if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
  if (toleration.key.empty()) return toleration.op == DeviceToleration::Operator::kExists;
  if (toleration.key != taint.key) return false;
  return toleration.op == DeviceToleration::Operator::kExists || toleration.value == taint.value;
}

bool TaintBlocks(const DeviceTaint& taint, const std::vector<DeviceToleration>& tolerations) {
  if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") return false;
  for (const DeviceToleration& t : tolerations) {
    if (Tolerates(t, taint)) return false;
  }
  return true;
}

namespace {

bool MatchesAnyTerm(const std::vector<NodeSelectorTerm>& terms, const Node& node) {
  for (const NodeSelectorTerm& term : terms) {
    if (MatchesNodeSelectorTerm(term, node)) return true;
  }
  return false;
}

}  // namespace

bool NodeSelection::Matches(const Node& node) const {
  if (!node_name.empty()) return node.name() == node_name;
  if (all_nodes) return true;
  if (node_selector.has_value()) return MatchesAnyTerm(*node_selector, node);
  return false;
}

bool AllocationResult::AvailableOn(const Node& node) const {
  return !node_selector.has_value() || MatchesAnyTerm(*node_selector, node);
}

const AttributeValue* LookupAttribute(const Device& device, std::string_view driver,
                                      std::string_view qualified) {
  std::string_view domain = driver;
  std::string_view name = qualified;
  if (size_t slash = qualified.find('/'); slash != std::string_view::npos) {
    domain = qualified.substr(0, slash);
    name = qualified.substr(slash + 1);
  }
  auto d = device.attributes.find(domain);
  if (d == device.attributes.end()) return nullptr;
  auto v = d->second.find(name);
  return v == d->second.end() ? nullptr : &v->second;
}

DeviceView ViewOf(const Device& device, std::string_view driver) {
  return DeviceView{.driver = driver,
                    .attributes = &device.attributes,
                    .capacity = &device.capacity_view,
                    .allow_multiple_allocations = device.allow_multiple_allocations};
}

std::string ClaimKey(const ResourceClaim& claim) {
  return StrCat(claim.meta.namespace_, "/", claim.meta.name);
}

}  // namespace tessel::dra
