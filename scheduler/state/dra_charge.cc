// A pod's DRA claims as quota charges (see dra_charge.h).
#include "scheduler/state/dra_charge.h"

#include <map>
#include <set>

#include "nlohmann/json.hpp"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

using nlohmann::json;

const json& Field(const json& object, const char* name) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(name);
  return it == object.end() ? kNull : *it;
}

std::string StringOf(const json& j) { return j.is_string() ? j.get<std::string>() : std::string(); }

bool True(const json& j) { return j.is_boolean() && j.get<bool>(); }

// The resource a device of `cls` counts as.
std::string ResourceOf(const ClusterObjects& objects, const std::string& cls) {
  if (const RawObject* raw = objects.RawOf(RawKind::kDeviceClass, cls)) {
    std::string named = StringOf(Field(Field(*raw->json, "spec"), "extendedResourceName"));
    if (!named.empty()) return named;
  }
  return StrCat("deviceclass.resource.kubernetes.io/", cls);
}

// What one ask (an `exactly` request or a subrequest) charges: (class, devices).
std::pair<std::string, int64_t> AskCharge(const json& ask, int64_t allocated) {
  const std::string cls = StringOf(Field(ask, "deviceClassName"));
  if (True(Field(ask, "adminAccess"))) return {cls, 0};
  if (StringOf(Field(ask, "allocationMode")) == "All") return {cls, allocated > 0 ? allocated : 1};
  const json& count = Field(ask, "count");
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
    const json& results = Field(Field(Field(Field(*raw->json, "status"), "allocation"), "devices"), "results");
    if (results.is_array()) {
      for (const json& r : results) ++allocated[StringOf(Field(r, "request"))];
    }
    const json& requests = Field(Field(Field(*raw->json, "spec"), "devices"), "requests");
    if (!requests.is_array()) continue;
    for (const json& request : requests) {
      const std::string rname = StringOf(Field(request, "name"));
      std::pair<std::string, int64_t> charge;
      if (const json& exactly = Field(request, "exactly"); exactly.is_object()) {
        charge = AskCharge(exactly, allocated[rname]);
      } else if (const json& list = Field(request, "firstAvailable"); list.is_array() && !list.empty()) {
        const json* chosen = &list.front();
        for (const json& sub : list) {
          if (allocated.contains(StrCat(rname, "/", StringOf(Field(sub, "name"))))) chosen = &sub;
        }
        charge = AskCharge(*chosen, allocated[StrCat(rname, "/", StringOf(Field(*chosen, "name")))]);
      }
      if (charge.first.empty() || charge.second <= 0) continue;
      const std::string resource = ResourceOf(objects, charge.first);
      out.Set(resource, out.Get(resource) + charge.second * 1000);
    }
  }
  return out;
}

}  // namespace tessel
