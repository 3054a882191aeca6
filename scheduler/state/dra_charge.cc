// A pod's DRA claims as quota charges (see dra_charge.h).
#include "scheduler/state/dra_charge.h"

#include <map>
#include <set>

#include "nlohmann/json.hpp"
#include "scheduler/state/raw_json.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

using nlohmann::json;


bool True(const json& j) { return j.is_boolean() && j.get<bool>(); }

// The resource a device of `cls` counts as.
std::string ResourceOf(const ClusterObjects& objects, const std::string& cls) {
  if (const RawObject* raw = objects.RawOf(RawKind::kDeviceClass, cls)) {
    std::string named = RawString(RawField(RawField(*raw->json, "spec"), "extendedResourceName"));
    if (!named.empty()) return named;
  }
  return StrCat("deviceclass.resource.kubernetes.io/", cls);
}

// What one ask (an `exactly` request or a subrequest) charges: (class, devices).
std::pair<std::string, int64_t> AskCharge(const json& ask, int64_t allocated) {
  const std::string cls = RawString(RawField(ask, "deviceClassName"));
  if (True(RawField(ask, "adminAccess"))) return {cls, 0};
  if (RawString(RawField(ask, "allocationMode")) == "All") return {cls, allocated > 0 ? allocated : 1};
  const json& count = RawField(ask, "count");
  return {cls, count.is_number_integer() ? count.get<int64_t>() : 1};
}

}  // namespace

Resources DraChargeOf(const Pod& pod, const ClusterObjects& objects) {
  Resources out;
  std::set<std::string> seen;
  for (const PodResourceClaim& c : pod.resource_claims) {
    std::string name = c.resource_claim_name;
    if (name.empty()) name = c.generated_claim_name.value_or("");
    if (name.empty() || !seen.insert(name).second) continue;
    const RawObject* raw = objects.RawOf(RawKind::kResourceClaim, StrCat(pod.meta.namespace_, "/", name));
    if (raw == nullptr) continue;
    // Devices allocated per request name ("req" or "req/sub").
    std::map<std::string, int64_t> allocated;
    const json& results = RawField(RawField(RawField(RawField(*raw->json, "status"), "allocation"), "devices"), "results");
    if (results.is_array()) {
      for (const json& r : results) ++allocated[RawString(RawField(r, "request"))];
    }
    const json& requests = RawField(RawField(RawField(*raw->json, "spec"), "devices"), "requests");
    if (!requests.is_array()) continue;
    for (const json& request : requests) {
      const std::string rname = RawString(RawField(request, "name"));
      std::pair<std::string, int64_t> charge;
      if (const json& exactly = RawField(request, "exactly"); exactly.is_object()) {
        charge = AskCharge(exactly, allocated[rname]);
      } else if (const json& list = RawField(request, "firstAvailable"); list.is_array() && !list.empty()) {
        const json* chosen = &list.front();
        for (const json& sub : list) {
          if (allocated.contains(StrCat(rname, "/", RawString(RawField(sub, "name"))))) chosen = &sub;
        }
        charge = AskCharge(*chosen, allocated[StrCat(rname, "/", RawString(RawField(*chosen, "name")))]);
      }
      if (charge.first.empty() || charge.second <= 0) continue;
      const std::string resource = ResourceOf(objects, charge.first);
      out.Set(resource, out.Get(resource) + charge.second * 1000);
    }
  }
  return out;
}

}  // namespace tessel
