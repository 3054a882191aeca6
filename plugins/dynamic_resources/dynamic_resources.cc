#include "plugins/dynamic_resources/dynamic_resources.h"

#include "scheduler/util/strings.h"

namespace tessel::dynamic_resources {

std::string Reason(const Pod& pod) {
  std::string out;
  for (const PodResourceClaim& c : pod.resource_claims) {
    StrAppend(&out, out.empty() ? "" : ", ", "resource claim \"", c.name, "\" (");
    if (!c.resource_claim_name.empty()) {
      StrAppend(&out, "ResourceClaim ", c.resource_claim_name);
    } else {
      StrAppend(&out, "ResourceClaimTemplate ", c.resource_claim_template_name);
    }
    out += ")";
  }
  StrAppend(&out, ": ", kNotAllocated);
  return out;
}

absl::StatusOr<std::unique_ptr<DynamicResources>> DynamicResources::New(Handle&) {
  return std::make_unique<DynamicResources>();
}

Status DynamicResources::PreFilter(CycleState&, const Pod& pod) {
  if (pod.resource_claims.empty()) return Status::Skip();
  return Status::Unresolvable(Reason(pod));
}

}  // namespace tessel::dynamic_resources
