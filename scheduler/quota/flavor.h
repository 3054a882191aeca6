// Resource flavors: named sets of nodes a Queue's quota is divided into (Kueue's ResourceFlavor).
//
// A ResourceFlavor (tessel.io/v1alpha1, cluster-scoped) names its nodes by labels: a node
// belongs to the flavor when it carries every label of spec.nodeLabels. spec.nodeTaints are the
// taints its nodes carry (a pod that does not tolerate them cannot use the flavor) and
// spec.tolerations the taints its pods are taken to tolerate when that is checked;
// spec.provisioning, the ProvisioningRequest class of the gangs that would use it when they fit
// nowhere (docs/provisioning.md). A Queue with
// spec.resourceGroups lists, per group of covered resources, flavors in the order its pods try
// them, each with its own nominal quota, borrowing and lending limits (scheduler/quota/queue.h).
//
// Inside the quota arithmetic (quota_tracker.h) a flavored quota is an ordinary resource named
// "<resource>@<flavor>" ("nvidia.com/gpu@reserved"): '@' is never part of a Kubernetes resource
// name, so flat quotas keep their names and behave exactly as before, and every Kueue rule that
// applies per resource (borrowing, lending, the cohort's pool, reclaim, fair sharing) applies per
// (flavor, resource) with no second implementation.
//
//   absl::StatusOr<ResourceFlavor> f = DecodeResourceFlavor(json);  // errors name the field
//   f->HasNode(node.meta.labels);
//   FlavoredResource("nvidia.com/gpu", "spot") == "nvidia.com/gpu@spot";
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "scheduler/api/objects.h"

namespace tessel {

class FieldDecoder;

inline constexpr std::string_view kResourceFlavorKind = "ResourceFlavor";

// spec.provisioning of a Queue or a ResourceFlavor: the class (and parameters) of the
// ProvisioningRequests its gangs ask for capacity with (docs/provisioning.md).
struct ProvisioningClass {
  std::string class_name;  // className, e.g. queued-provisioning.gke.io
  StringMap parameters;    // parameters, copied to the request's spec.parameters
  bool operator==(const ProvisioningClass&) const = default;
};
// Decodes `spec.provisioning` when present (className required and not empty; parameters a map
// of strings); errors go to `d`, naming the field.
std::optional<ProvisioningClass> DecodeProvisioningClass(FieldDecoder& d, const nlohmann::json& spec);

struct ResourceFlavor {
  ObjectMeta meta;
  StringMap node_labels;               // spec.nodeLabels: a node of the flavor has all of them
  std::vector<Taint> node_taints;      // spec.nodeTaints
  std::vector<Toleration> tolerations; // spec.tolerations
  std::optional<ProvisioningClass> provisioning;  // spec.provisioning

  const std::string& name() const { return meta.name; }
  // Whether a node with these labels belongs to the flavor.
  bool HasNode(const StringMap& node_labels) const;
  // Whether a pod with these tolerations may use the flavor: it (or the flavor's own
  // tolerations) tolerates every NoSchedule and NoExecute taint of spec.nodeTaints.
  bool Admits(const std::vector<Toleration>& pod_tolerations) const;
};

// Decodes a ResourceFlavor; errors name the object and the field.
absl::StatusOr<ResourceFlavor> DecodeResourceFlavor(const nlohmann::json& object);

using FlavorMap = std::map<std::string, ResourceFlavor, std::less<>>;

// The quota key of `resource` in `flavor` ("nvidia.com/gpu@reserved").
std::string FlavoredResource(std::string_view resource, std::string_view flavor);
// A quota key split into its resource and flavor ("" for a flat quota's key).
struct QuotaKey {
  std::string_view resource;
  std::string_view flavor;
};
QuotaKey SplitQuotaKey(std::string_view key);
// An amount of a quota key as a quantity of its resource ("1500m", "4Gi", "8").
std::string FormatQuotaAmount(std::string_view key, int64_t amount);
// How a message names a quota key: "nvidia.com/gpu", or "nvidia.com/gpu in flavor reserved".
std::string DescribeQuotaKey(std::string_view key);

}  // namespace tessel
