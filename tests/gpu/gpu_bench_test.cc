// GPU scenarios end to end through `tessel-bench replay` (tests/gpu/replay/*.json), and the
// pieces of `tessel-bench inflate` that decide the published numbers: trace parsing, the
// inflation rule, the typical pods, where the unallocated GPU is at 100 %, and a tiny full run.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "nlohmann/json.hpp"
#include "bench/inflate/inflate.h"
#include "bench/inflate/leftover.h"
#include "bench/replay/replay.h"
#include "fmt/format.h"
#include <unistd.h>

namespace tessel::bench {
namespace gpu_bench_test {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

json Replay(const std::string& file, const std::string& config_yaml = "") {
  ReplayOptions options;
  fs::path config;
  if (!config_yaml.empty()) {
    config = fs::temp_directory_path() / fmt::format("tessel-gpu-test-{}.yaml", ::getpid());
    std::ofstream(config) << config_yaml;
    options.config_path = config.string();
  }
  auto result = RunReplayText(Read(fs::path(TESSEL_GPU_REPLAY_DIR) / file), options);
  if (!config.empty()) fs::remove(config);
  REQUIRE(result.ok());
  return *result;
}

TEST_CASE("fragmentation scenario: team B's 8-GPU job fits after team A's 6 x 3 GPUs", "[gpu][replay]") {
  // 4 nodes x 10 GPUs. Spreading 6 x 3 GPUs leaves 4/4/7/7 GPUs free and no node with 8;
  // packing leaves two nodes whole.
  json r = Replay("fragmentation.json");
  for (int i = 0; i < 6; ++i) CHECK(r["placements"][fmt::format("team-a/job-{}", i)].is_string());
  REQUIRE(r["placements"]["team-b/train-8gpu"].is_string());
  CHECK(r["metrics"]["gpu_equivalent_allocated_milli"] == 26000);
  CHECK(r["metrics"]["gpu_devices"] == 40);

  SECTION("the same cluster under a spreading policy strands the 8-GPU job") {
    json spread = Replay("fragmentation.json", R"(
profiles:
- schedulerName: tessel
  plugins:
    score:
      disabled: [{name: Tessel}, {name: NodeResourcesFit}]
      enabled: [{name: NodeResourcesFit, weight: 1}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResources: [nvidia.com/gpu]
      scoringStrategy: {type: LeastAllocated, resources: [{name: nvidia.com/gpu, weight: 1}]}
)");
    CHECK(spread["placements"]["team-b/train-8gpu"].is_null());
    CHECK_THAT(spread["reasons"]["team-b/train-8gpu"].get<std::string>(), Catch::Contains("Insufficient nvidia.com/gpu"));
  }
}

TEST_CASE("time-slicing scenario: 1 GPU x 3 replicas hosts 3 pods, the 4th waits", "[gpu][replay]") {
  json r = Replay("time_slicing.json");
  int placed = 0;
  for (int i = 0; i < 4; ++i) placed += r["placements"][fmt::format("infer/replica-{}", i)].is_string();
  CHECK(placed == 3);
  CHECK(r["placements"]["infer/replica-3"].is_null());  // queued last, by creation time
  CHECK_THAT(r["reasons"]["infer/replica-3"].get<std::string>(), Catch::Contains("replicas"));
  // Three replicas of one GPU are one GPU, not three.
  CHECK(r["metrics"]["gpu_equivalent_allocated_milli"] == 1000);
  CHECK(r["metrics"]["gpu_equivalent_capacity_milli"] == 1000);
  CHECK(r["metrics"]["gpu_allocated_milli"] == 3000);  // the raw resource count stays as it was
}

// One 1-GPU node and four pods that each ask for a quarter of it (tessel.io/gpu-milli: 250).
std::string QuarterGpuSnapshot() {
  json items = json::parse(R"([{"apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1", "nvidia.com/gpu.count": "1"}},
    "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "1"},
               "conditions": [{"type": "Ready", "status": "True"}]}}])");
  for (int i = 0; i < 4; ++i) {
    items.push_back(json::parse(fmt::format(R"({{"apiVersion": "v1", "kind": "Pod",
      "metadata": {{"name": "quarter-{0}", "namespace": "infer", "uid": "uid-quarter-{0}",
                   "creationTimestamp": "2026-11-01T10:0{0}:00Z",
                   "annotations": {{"tessel.io/gpu-milli": "250"}}}},
      "spec": {{"schedulerName": "tessel", "containers": [{{"name": "main", "image": "infer:1",
        "resources": {{"requests": {{"cpu": "1", "nvidia.com/gpu": "1"}}, "limits": {{"nvidia.com/gpu": "1"}}}}}}]}},
      "status": {{"phase": "Pending"}}}})", i)));
  }
  return json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump();
}

// The configuration the Dockerfile bakes in: GPU sharing must work under it exactly as under the
// built-in defaults (its NodeResourcesFit args are merged over the defaults', so the default
// ignoredResources that leave GPUs to GpuShare stay).
TEST_CASE("the shipped manifests/config.yaml keeps fractional and time-sliced GPUs working", "[gpu][replay]") {
  const std::string shipped = Read(fs::path(TESSEL_MANIFESTS_DIR) / "config.yaml");
  REQUIRE_FALSE(shipped.empty());
  for (const std::string& config : {std::string(), shipped}) {
    SECTION(config.empty() ? "built-in defaults" : "manifests/config.yaml") {
      ReplayOptions options;
      fs::path path;
      if (!config.empty()) {
        path = fs::temp_directory_path() / fmt::format("tessel-shipped-{}.yaml", ::getpid());
        std::ofstream(path) << config;
        options.config_path = path.string();
      }
      auto quarters = RunReplayText(QuarterGpuSnapshot(), options);
      REQUIRE(quarters.ok());
      for (int i = 0; i < 4; ++i) {
        CAPTURE(i, (*quarters)["reasons"].dump());
        CHECK((*quarters)["placements"][fmt::format("infer/quarter-{}", i)] == "n1");
      }
      CHECK((*quarters)["metrics"]["gpu_equivalent_allocated_milli"] == 1000);

      json slicing = Replay("time_slicing.json", config);
      int placed = 0;
      for (int i = 0; i < 4; ++i) placed += slicing["placements"][fmt::format("infer/replica-{}", i)].is_string();
      CHECK(placed == 3);
      CHECK(slicing["metrics"]["gpu_equivalent_allocated_milli"] == 1000);
      if (!path.empty()) fs::remove(path);
    }
  }
}

TEST_CASE("trace CSVs parse, and bad rows are rejected with the pod's name", "[gpu][inflate]") {
  auto pods = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
      "p0,4000,100,1,500,\n"
      "p1,8000,0,2,1000,T4|P100\n"
      "p2,1000,10,0,0,\n");
  REQUIRE(pods.ok());
  REQUIRE(pods->size() == 3);
  CHECK((*pods)[1].gpu_spec == std::vector<std::string>{"T4", "P100"});
  CHECK((*pods)[1].total_gpu_milli() == 2000);
  auto bad = ParseTracePods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nq,1000,1,2,500\n");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("q"));
  CHECK_FALSE(ParseTraceNodes("sn,cpu_milli\nn,1\n").ok());
}

TEST_CASE("inflation appends clones until the next one would pass tune x capacity", "[gpu][inflate]") {
  // Capacity 10 GPUs, tune 1.3: target 13000 milli. Originals hold 3000 (1000 + 2 x 1000).
  std::vector<TracePod> pods = {
      {.name = "b", .cpu_milli = 1000, .memory_mib = 0, .num_gpu = 1, .gpu_milli = 1000, .gpu_spec = {}},
      {.name = "a", .cpu_milli = 1000, .memory_mib = 0, .num_gpu = 2, .gpu_milli = 1000, .gpu_spec = {}},
  };
  for (uint64_t seed : {1, 2, 3}) {
    auto seq = InflatePods(pods, 10000, 1300, seed);
    int64_t total = 0;
    for (const TracePod& p : seq) total += p.total_gpu_milli();
    CAPTURE(seed, total);
    // The stop test adds only the per-GPU milli (1000): the sum minus the last clone is at most
    // 12000, and the sum itself may overshoot by one multi-GPU clone.
    CHECK(total - seq.back().total_gpu_milli() <= 12000);
    CHECK(total <= 14000);
    CHECK(total >= 12000);
    CHECK(seq.size() > 2);
    // Same seed, same order; the originals come first.
    CHECK(InflatePods(pods, 10000, 1300, seed).size() == seq.size());
    CHECK(((seq[0].name == "a" && seq[1].name == "b") || (seq[0].name == "b" && seq[1].name == "a")));
    CHECK(seq[2].name.find("-tuned-0") != std::string::npos);
  }
}

TEST_CASE("the bundled default trace: 8152 pods, 1213 nodes, 35 typical pod classes", "[gpu][inflate]") {
  auto pods = LoadTracePods(std::string(TESSEL_BENCH_DATA_DIR) + "/openb_pod_list_default.csv");
  auto nodes = LoadTraceNodes(std::string(TESSEL_BENCH_DATA_DIR) + "/openb_node_list_gpu_node.csv");
  REQUIRE(pods.ok());
  REQUIRE(nodes.ok());
  CHECK(pods->size() == 8152);
  CHECK(nodes->size() == 1213);
  int64_t gpus = 0;
  for (const TraceNode& n : *nodes) gpus += n.gpus;
  CHECK(gpus == 6212);
  // The FGD paper's "typical pods": 91 classes, the 35 most frequent cover 95%.
  CHECK(TypicalPods(*pods).size() == 35);
}

TEST_CASE("the bundled variants: one per openb family, all parse", "[gpu][inflate]") {
  const std::pair<const char*, size_t> kVariants[] = {
      {"cpu050", 7439}, {"gpushare40", 8152}, {"gpuspec10", 8152}, {"multigpu20", 8324}};
  for (const auto& [name, count] : kVariants) {
    CAPTURE(name);
    auto pods = LoadTracePods(std::string(TESSEL_BENCH_DATA_DIR) + "/openb_pod_list_" + name + ".csv");
    REQUIRE(pods.ok());
    CHECK(pods->size() == count);
  }
}

TEST_CASE("a tiny inflation run keeps the books: allocated never exceeds arrived, and the leftover adds up",
          "[gpu][inflate]") {
  // n1 runs out of CPU before GPUs: the leftover has GPU stranded by CPU to count.
  auto nodes = ParseTraceNodes("sn,cpu_milli,memory_mib,gpu,model\nn0,16000,65536,2,T4\nn1,6000,65536,4,V100\n");
  auto pods = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
      "p0,2000,100,1,500,\np1,2000,100,1,300,T4\np2,4000,100,2,1000,\np3,1000,100,0,0,\np4,5000,100,1,1000,\n");
  REQUIRE(nodes.ok());
  REQUIRE(pods.ok());
  for (const std::string& policy : KnownPolicies()) {
    for (const uint64_t seed : {7, 42}) {
      CAPTURE(policy, seed);
      auto run = RunOne(*nodes, *pods, policy, seed, 1300);
      REQUIRE(run.ok());
      REQUIRE_FALSE(run->events.empty());
      for (const Event& e : run->events) {
        CHECK(e.allocated_milli <= e.arrived_milli);
        CHECK(e.allocated_milli <= 6000);
        CHECK(e.frag_scaled >= 0);
      }
      // Tune 1.3 on 6 GPUs: arrivals stop just below 7.8 GPUs (+ one overshooting clone).
      CHECK(run->events.back().arrived_milli <= 7800 + 1000);
      CHECK(run->events.back().arrived_milli > 6000);
      // The leftover, against the events read independently: the allocated and arrived GPU after
      // the last pod of the order that fits the 6 GPUs.
      int64_t allocated = 0, arrived = 0;
      for (const Event& e : run->events) {
        if (e.arrived_milli > 6000) break;
        allocated = e.allocated_milli;
        arrived = e.arrived_milli;
      }
      CHECK(run->leftover.free_milli() == 6000 - allocated);
      int64_t failed = 0;
      for (const auto& [shape, milli] : run->leftover.failed_milli) failed += milli;
      CHECK(failed == arrived - allocated);
    }
  }
}

TEST_CASE("the leftover at 100 %: free GPU split by why no pod uses it, failures by shape", "[gpu][inflate]") {
  Leftover l;
  const int64_t a[] = {1000, 300, 40};
  l.CountNode(/*free_cpu_milli=*/8000, a, /*least_gpu_pod_cpu_milli=*/4000);  // CPU left: by device
  const int64_t b[] = {1000, 1000, 650, 0};
  l.CountNode(3999, b, 4000);  // less CPU than any GPU pod asks: all of it is stranded
  const int64_t c[] = {100, 199, 200, 999};
  l.CountNode(4000, c, 4000);  // band edges
  CHECK(l.cpu_exhausted_milli == 2650);
  CHECK(l.idle_device_milli == 1000);
  CHECK(l.remainder_milli == std::array<int64_t, 4>{40, 100 + 199, 300 + 200, 999});
  CHECK(l.free_milli() == 2650 + 1000 + 40 + 300 + 100 + 199 + 200 + 999);  // every free milli once

  l.CountFailed(TracePod{.name = "w", .num_gpu = 2, .gpu_milli = 1000});
  l.CountFailed(TracePod{.name = "w1", .num_gpu = 1, .gpu_milli = 1000});
  l.CountFailed(TracePod{.name = "f", .num_gpu = 1, .gpu_milli = 810});
  l.CountFailed(TracePod{.name = "g", .num_gpu = 1, .gpu_milli = 150});
  l.CountFailed(TracePod{.name = "cpu", .cpu_milli = 4000});
  CHECK(l.failed_milli == std::map<std::string, int64_t>{{"2 GPUs", 2000}, {"1 GPU", 1000}, {"500-999", 810}, {"100-199", 150}});

  const json pct = MeanLeftoverPct({&l, &l}, 10000);  // the same run twice: its own percentages
  CHECK(pct["cpu_exhausted"].get<double>() == Approx(26.5));
  CHECK(pct["remainders"]["1-99"].get<double>() == Approx(0.4));
  CHECK(pct["failed_pods"]["2 GPUs"].get<double>() == Approx(20.0));
  CHECK(LeastGpuPodCpuMilli({{.cpu_milli = 500}, {.cpu_milli = 3000, .gpu_milli = 1000, .num_gpu = 1},
                             {.cpu_milli = 2000, .gpu_milli = 300, .num_gpu = 1}}) == 2000);
}

}  // namespace gpu_bench_test
}  // namespace tessel::bench
