// Decoding ResourceFlavors, and the names flavored quotas go by (see flavor.h).
#include "scheduler/quota/flavor.h"

#include <algorithm>

#include "nlohmann/json.hpp"
#include "scheduler/api/decode.h"
#include "scheduler/util/strings.h"

namespace tessel {

bool ResourceFlavor::HasNode(const StringMap& labels) const {
  return std::all_of(node_labels.begin(), node_labels.end(), [&](const auto& kv) {
    auto it = labels.find(kv.first);
    return it != labels.end() && it->second == kv.second;
  });
}

bool ResourceFlavor::Admits(const std::vector<Toleration>& pod_tolerations) const {
  return std::all_of(node_taints.begin(), node_taints.end(), [&](const Taint& taint) {
    return taint.effect == TaintEffect::kPreferNoSchedule || ToleratesTaint(pod_tolerations, taint) ||
           ToleratesTaint(tolerations, taint);
  });
}

std::optional<ProvisioningClass> DecodeProvisioningClass(FieldDecoder& d, const nlohmann::json& spec) {
  const nlohmann::json* provisioning = d.Object(spec, "provisioning", "spec.provisioning");
  if (provisioning == nullptr) return std::nullopt;
  ProvisioningClass p{.class_name = d.String(*provisioning, "className", "spec.provisioning.className"),
                      .parameters = d.StringMapField(*provisioning, "parameters", "spec.provisioning.parameters")};
  if (p.class_name.empty()) d.Fail("spec.provisioning.className", "must be set");
  return p;
}

absl::StatusOr<ResourceFlavor> DecodeResourceFlavor(const nlohmann::json& object) {
  FieldDecoder d(DescribeObject(object));
  ResourceFlavor f;
  f.meta = d.Meta(object);
  if (f.meta.name.empty()) d.Fail("metadata.name", "missing");
  if (const nlohmann::json* spec = d.Object(object, "spec", "spec")) {
    f.node_labels = d.StringMapField(*spec, "nodeLabels", "spec.nodeLabels");
    f.node_taints = DecodeTaints(d, *spec, "nodeTaints", "spec.nodeTaints");
    f.tolerations = DecodeTolerations(d, *spec, "tolerations", "spec.tolerations");
    f.provisioning = DecodeProvisioningClass(d, *spec);
  }
  if (!d.ok()) return d.status();
  return f;
}

std::string FlavoredResource(std::string_view resource, std::string_view flavor) {
  return StrCat(resource, "@", flavor);
}

QuotaKey SplitQuotaKey(std::string_view key) {
  const size_t at = key.rfind('@');
  if (at == std::string_view::npos) return {.resource = key};
  return {.resource = key.substr(0, at), .flavor = key.substr(at + 1)};
}

std::string FormatQuotaAmount(std::string_view key, int64_t amount) {
  return FormatResourceQuantity(SplitQuotaKey(key).resource, amount);
}

std::string DescribeQuotaKey(std::string_view key) {
  const QuotaKey k = SplitQuotaKey(key);
  return k.flavor.empty() ? std::string(k.resource) : StrCat(k.resource, " in flavor ", k.flavor);
}

}  // namespace tessel
