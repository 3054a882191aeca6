// ReportDraDevices (scheduler/report/dra_report.h): devices published by the newest generation of
// each pool and devices allocated to claims, by driver, from the objects as the informers keep them.
#include <catch2/catch.hpp>

#include "nlohmann/json.hpp"
#include "scheduler/report/dra_report.h"

namespace tessel {
namespace dra_report_test {

using nlohmann::json;

json Slice(const std::string& name, const std::string& driver, const std::string& pool, int generation, int devices) {
  json list = json::array();
  for (int i = 0; i < devices; ++i) list.push_back({{"name", "d" + std::to_string(i)}});
  return {{"metadata", {{"name", name}}},
          {"spec", {{"driver", driver}, {"nodeName", "n1"},
                    {"pool", {{"name", pool}, {"generation", generation}, {"resourceSliceCount", 1}}},
                    {"devices", list}}}};
}

json Claim(const std::string& name, json results) {
  return {{"metadata", {{"name", name}, {"namespace", "team-a"}}},
          {"status", {{"allocation", {{"devices", {{"results", std::move(results)}}}}}}}};
}

TEST_CASE("DRA devices by driver: the newest generation of a pool, a shared device once, admin access not",
          "[report][dra]") {
  ClusterObjectStore store;
  REQUIRE(store.PutRaw(RawKind::kResourceSlice, Slice("old", "gpu.example.com", "p1", 1, 8)).ok());
  REQUIRE(store.PutRaw(RawKind::kResourceSlice, Slice("new", "gpu.example.com", "p1", 2, 4)).ok());
  REQUIRE(store.PutRaw(RawKind::kResourceSlice, Slice("other", "gpu.example.com", "p2", 1, 2)).ok());
  REQUIRE(store.PutRaw(RawKind::kResourceSlice, Slice("nic", "nic.example.com", "p3", 1, 3)).ok());
  auto result = [](const std::string& pool, const std::string& device, bool admin = false) {
    json r = {{"request", "r"}, {"driver", "gpu.example.com"}, {"pool", pool}, {"device", device}};
    if (admin) r["adminAccess"] = true;
    return r;
  };
  REQUIRE(store.PutRaw(RawKind::kResourceClaim, Claim("a", json::array({result("p1", "d0"), result("p1", "d1")}))).ok());
  REQUIRE(store.PutRaw(RawKind::kResourceClaim, Claim("share", json::array({result("p1", "d1")}))).ok());
  REQUIRE(store.PutRaw(RawKind::kResourceClaim, Claim("admin", json::array({result("p2", "d0", true)}))).ok());
  REQUIRE(store.PutRaw(RawKind::kResourceClaim, {{"metadata", {{"name", "pending"}, {"namespace", "team-a"}}}}).ok());
  const auto counts = ReportDraDevices(*store.view());
  REQUIRE(counts.size() == 2);
  CHECK(counts.at("gpu.example.com") == DraDeviceCount{.published = 6, .allocated = 2});
  CHECK(counts.at("nic.example.com") == DraDeviceCount{.published = 3, .allocated = 0});
}

}  // namespace dra_report_test
}  // namespace tessel
