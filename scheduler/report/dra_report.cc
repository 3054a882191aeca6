// DRA devices published and allocated, by driver (see dra_report.h).
#include "scheduler/report/dra_report.h"

#include <set>
#include <tuple>

#include "nlohmann/json.hpp"
#include "scheduler/state/raw_json.h"

namespace tessel {
namespace {

using nlohmann::json;


}  // namespace

std::map<std::string, DraDeviceCount, std::less<>> ReportDraDevices(const ClusterObjects& objects) {
  std::map<std::string, DraDeviceCount, std::less<>> out;
  // Each pool's newest generation, then the devices of its slices of that generation.
  std::map<std::pair<std::string, std::string>, int64_t> newest;
  for (const auto& [key, raw] : objects.Raw(RawKind::kResourceSlice)) {
    const json& spec = RawField(*raw.json, "spec");
    const json& generation = RawField(RawField(spec, "pool"), "generation");
    const auto pool = std::make_pair(RawString(RawField(spec, "driver")), RawString(RawField(RawField(spec, "pool"), "name")));
    const int64_t g = generation.is_number_integer() ? generation.get<int64_t>() : 0;
    auto [it, added] = newest.emplace(pool, g);
    if (!added && g > it->second) it->second = g;
  }
  for (const auto& [key, raw] : objects.Raw(RawKind::kResourceSlice)) {
    const json& spec = RawField(*raw.json, "spec");
    const std::string driver = RawString(RawField(spec, "driver"));
    const json& generation = RawField(RawField(spec, "pool"), "generation");
    const int64_t g = generation.is_number_integer() ? generation.get<int64_t>() : 0;
    if (driver.empty() || newest[{driver, RawString(RawField(RawField(spec, "pool"), "name"))}] != g) continue;
    const json& devices = RawField(spec, "devices");
    if (devices.is_array()) out[driver].published += static_cast<int64_t>(devices.size());
  }
  std::set<std::tuple<std::string, std::string, std::string>> held;  // driver, pool, device
  for (const auto& [key, raw] : objects.Raw(RawKind::kResourceClaim)) {
    const json& results = RawField(RawField(RawField(RawField(*raw.json, "status"), "allocation"), "devices"), "results");
    if (!results.is_array()) continue;
    for (const json& r : results) {
      if (RawField(r, "adminAccess").is_boolean() && RawField(r, "adminAccess").get<bool>()) continue;
      const std::string driver = RawString(RawField(r, "driver"));
      if (driver.empty()) continue;
      if (held.emplace(driver, RawString(RawField(r, "pool")), RawString(RawField(r, "device"))).second) {
        ++out[driver].allocated;
      }
    }
  }
  return out;
}

}  // namespace tessel
