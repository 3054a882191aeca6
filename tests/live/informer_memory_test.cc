// Peak memory of the live path at size (issue 10 §2), as a measurement, not a default test: a
// fake API server serves N nodes and M running pods (with managedFields and a
// last-applied-configuration annotation, as kubectl-applied pods carry) in pages of 500; the
// real informers (SchedulerFeed) list them into a real Scheduler's cache. The test checks that
// every object arrived and prints the process's peak and current RSS (VmHWM, VmRSS), the fake
// server's transient pages included. Run it with:
//
//   TESSEL_RSS_NODES=5000 TESSEL_RSS_PODS=100000 build/bin/tessel_live_tests "[.rss]"
//
// and, to turn the target into a check, TESSEL_RSS_LIMIT_MIB=300.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "default_scheduler.h"
#include "scheduler/kube/scheduler_feed.h"

namespace tessel::kube {
namespace informer_memory_test {

using nlohmann::json;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoll(v) : fallback;
}

// kB values of VmHWM / VmRSS from /proc/self/status.
int64_t ProcStatusKb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1);
  }
  return -1;
}

json NodeJson(int64_t i) {
  return {{"metadata",
           {{"name", "node-" + std::to_string(i)},
            {"uid", "node-uid-" + std::to_string(i)},
            {"resourceVersion", "1"},
            {"labels", {{"nvidia.com/gpu.count", "8"}, {"kubernetes.io/hostname", "node-" + std::to_string(i)}}},
            {"managedFields", json::array({{{"manager", "kubelet"}, {"operation", "Update"}}})}}},
          {"status",
           {{"allocatable", {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}}},
            {"capacity", {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}}},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})},
            {"images", json::array({{{"names", json::array({"registry/some/image:1.0"})}, {"sizeBytes", 1}}})}}}};
}

json PodJson(int64_t i, int64_t nodes) {
  const std::string name = "pod-" + std::to_string(i);
  json spec = {{"schedulerName", "default-scheduler"},
               {"nodeName", "node-" + std::to_string(i % nodes)},
               {"containers", json::array({{{"name", "main"},
                                            {"image", "registry/some/image:1.0"},
                                            {"env", json::array({{{"name", "A"}, {"value", "b"}}})},
                                            {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}}}}})}};
  return {{"metadata",
           {{"name", name},
            {"namespace", "ns-" + std::to_string(i % 50)},
            {"uid", "pod-uid-" + std::to_string(i)},
            {"resourceVersion", "1"},
            {"labels", {{"app", "a" + std::to_string(i % 100)}}},
            {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", spec.dump()}}},
            {"managedFields", json::array({{{"manager", "kubectl"}, {"operation", "Update"},
                                            {"fieldsV1", {{"f:spec", spec}}}}})}}},
          {"spec", spec},
          {"status", {{"phase", "Running"}, {"containerStatuses", json::array({{{"name", "main"}}})}}}};
}

TEST_CASE("peak RSS of the informers and cache at size", "[.rss]") {
  const int64_t nodes = EnvInt("TESSEL_RSS_NODES", 5000);
  const int64_t pods = EnvInt("TESSEL_RSS_PODS", 100000);
  testing::FakeApiServer api([&](const testing::FakeApiServer::Call& call, httplib::Response& res) {
    if (call.params.contains("watch")) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      res.set_content("", "application/json");
      return;
    }
    int64_t total = 0;
    std::function<json(int64_t)> make;
    if (call.path == "/api/v1/nodes") {
      total = nodes;
      make = NodeJson;
    } else if (call.path == "/api/v1/pods") {
      total = pods;
      make = [&](int64_t i) { return PodJson(i, nodes); };
    } else {
      json empty = {{"kind", "List"}, {"metadata", {{"resourceVersion", "1"}}}, {"items", json::array()}};
      res.set_content(empty.dump(), "application/json");
      return;
    }
    const int64_t start = call.params.contains("continue") ? std::atoll(call.params.at("continue").c_str()) : 0;
    const int64_t limit = call.params.contains("limit") ? std::atoll(call.params.at("limit").c_str()) : total;
    json items = json::array();
    for (int64_t i = start; i < std::min(total, start + limit); ++i) items.push_back(make(i));
    json meta = {{"resourceVersion", "1"}};
    if (start + limit < total) meta["continue"] = std::to_string(start + limit);
    // As the API server writes a list: metadata ahead of the items (the informer then asks for
    // the next page while it decodes this one, so two pages are in memory at once).
    res.set_content(StrCat(R"({"kind":"List","metadata":)", meta.dump(), R"(,"items":)", items.dump(), "}"),
                    "application/json");
  });
  auto client = api.Client();
  RealClock clock;
  DefaultScheduler d(&clock);
  const Cache& cache = d.cache;
  const int64_t before_kb = ProcStatusKb("VmRSS");
  SchedulerFeed feed(client.get(), d.s.get());
  feed.Start();
  REQUIRE(feed.WaitForSync(absl::Minutes(30)));
  CHECK(cache.NodeCount() == static_cast<size_t>(nodes));
  CHECK(cache.PodCount() == static_cast<size_t>(pods));
  const int64_t hwm_kb = ProcStatusKb("VmHWM");
  const int64_t rss_kb = ProcStatusKb("VmRSS");
  feed.Stop();
  std::cout << "rss: " << nodes << " nodes, " << pods << " pods: peak " << hwm_kb / 1024
            << " MiB, after sync " << rss_kb / 1024 << " MiB, before " << before_kb / 1024
            << " MiB\n";
  if (const int64_t limit = EnvInt("TESSEL_RSS_LIMIT_MIB", 0); limit > 0) {
    CHECK(hwm_kb / 1024 <= limit);
  }
}

}  // namespace informer_memory_test
}  // namespace tessel::kube
