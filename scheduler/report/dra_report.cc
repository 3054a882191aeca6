// DRA devices published and allocated, by driver (see dra_report.h).
#include "scheduler/report/dra_report.h"

#include <set>
#include <tuple>

#include "nlohmann/json.hpp"

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

}  // namespace

std::map<std::string, DraDeviceCount, std::less<>> ReportDraDevices(const ClusterObjects& objects) {
  std::map<std::string, DraDeviceCount, std::less<>> out;
  // Each pool's newest generation, then the devices of its slices of that generation.
  std::map<std::pair<std::string, std::string>, int64_t> newest;
  for (const auto& [key, raw] : objects.Raw(RawKind::kResourceSlice)) {
    const json& spec = Field(*raw.json, "spec");
    const json& generation = Field(Field(spec, "pool"), "generation");
    const auto pool = std::make_pair(StringOf(Field(spec, "driver")), StringOf(Field(Field(spec, "pool"), "name")));
    const int64_t g = generation.is_number_integer() ? generation.get<int64_t>() : 0;
    auto [it, added] = newest.emplace(pool, g);
    if (!added && g > it->second) it->second = g;
  }
  for (const auto& [key, raw] : objects.Raw(RawKind::kResourceSlice)) {
    const json& spec = Field(*raw.json, "spec");
    const std::string driver = StringOf(Field(spec, "driver"));
    const json& generation = Field(Field(spec, "pool"), "generation");
    const int64_t g = generation.is_number_integer() ? generation.get<int64_t>() : 0;
    if (driver.empty() || newest[{driver, StringOf(Field(Field(spec, "pool"), "name"))}] != g) continue;
    const json& devices = Field(spec, "devices");
    if (devices.is_array()) out[driver].published += static_cast<int64_t>(devices.size());
  }
  std::set<std::tuple<std::string, std::string, std::string>> held;  // driver, pool, device
  for (const auto& [key, raw] : objects.Raw(RawKind::kResourceClaim)) {
    const json& results = Field(Field(Field(Field(*raw.json, "status"), "allocation"), "devices"), "results");
    if (!results.is_array()) continue;
    for (const json& r : results) {
      if (Field(r, "adminAccess").is_boolean() && Field(r, "adminAccess").get<bool>()) continue;
      const std::string driver = StringOf(Field(r, "driver"));
      if (driver.empty()) continue;
      if (held.emplace(driver, StringOf(Field(r, "pool")), StringOf(Field(r, "device"))).second) {
        ++out[driver].allocated;
      }
    }
  }
  return out;
}

}  // namespace tessel
