// The shared scaffolding (scheduler/testing, tests/harness): GPU nodes read back as the GPU
// library reads real ones, the fake API's answers and records, and the core harness binding a
// pod end to end.
#include <catch2/catch.hpp>

#include "harness/core_harness.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/testing/builders.h"
#include "scheduler/testing/fake_cluster_api.h"

namespace tessel {
namespace testing_library_test {

using testing::CoreHarness;
using testing::FakeClusterApi;
using testing::NodeBuilder;
using testing::PodBuilder;

TEST_CASE("NodeBuilder: GPU nodes read back as the GPU library reads labelled nodes", "[testing]") {
  SECTION("whole GPUs") {
    const Node n = NodeBuilder("g").Gpus(8).GpuCount(8).GpuProduct("NVIDIA-A100-SXM4-80GB").Build();
    CHECK(n.allocatable.Get(kNvidiaGpu) == 8000);
    const gpu::GpuInventory inv = gpu::ReadGpuInventory(n);
    CHECK(inv.count == 8);
    CHECK(inv.replicas == 1);
    CHECK_FALSE(inv.shared());
    CHECK(inv.product == "NVIDIA-A100-SXM4-80GB");
  }
  SECTION("time-sliced: allocatable is the replicas, the labels say how many per GPU") {
    const Node n = NodeBuilder("t").TimeSliced(4, 2).Build();
    CHECK(n.allocatable.Get(kNvidiaGpu) == 8000);
    CHECK(n.meta.labels.at("nvidia.com/gpu.sharing-strategy") == "time-slicing");
    const gpu::GpuInventory inv = gpu::ReadGpuInventory(n);
    CHECK(inv.count == 4);
    CHECK(inv.replicas == 2);
    CHECK(inv.strategy == gpu::SharingStrategy::kTimeSlicing);
  }
  SECTION("one replica is an unshared labelled node") {
    const Node n = NodeBuilder("u").TimeSliced(2, 1).Build();
    CHECK_FALSE(n.meta.labels.contains("nvidia.com/gpu.replicas"));
    CHECK(gpu::ReadGpuInventory(n).count == 2);
  }
  SECTION("exact quantities, and capacity only when asked") {
    const Node plain = NodeBuilder("p").Cpu(96000).Memory(int64_t{384} << 30).MaxPods(1001).Build();
    CHECK(plain.allocatable.milli_cpu == 96000);
    CHECK(plain.allocatable.memory == int64_t{384} << 30);
    CHECK(plain.allocatable.pods == 1001);
    CHECK(plain.capacity.milli_cpu == 0);
    const Node full = NodeBuilder("f").Cpu(1000).CapacityIsAllocatable().Build();
    CHECK(full.capacity.milli_cpu == 1000);
    CHECK(full.capacity.memory == full.allocatable.memory);
  }
}

TEST_CASE("FakeClusterApi: answers in order of precedence, and records every call", "[testing]") {
  FakeClusterApi api;
  const Pod a = PodBuilder("a").Build();
  const Pod b = PodBuilder("b").Build();
  int confirmed = 0;
  api.on_bind = [&confirmed](const Pod&, const std::string&) { ++confirmed; };

  api.bind_failures["default/a"] = 1;
  api.next_bind = absl::AlreadyExistsError("bound");
  CHECK(api.Bind(a, "n1", {}).code() == absl::StatusCode::kUnavailable);  // the pod's failure first
  CHECK(api.Bind(a, "n1", {{"k", "v"}}).code() == absl::StatusCode::kAlreadyExists);  // then next_bind, once
  CHECK(api.Bind(a, "n2", {}).ok());
  api.bind_answers["default/b"] = absl::NotFoundError("gone");
  api.bind_result = absl::UnavailableError("down");
  CHECK(api.Bind(b, "n1", {}).code() == absl::StatusCode::kNotFound);  // the pod's answer beats all
  CHECK(api.binds == std::vector<std::pair<std::string, std::string>>{
                         {"default/a", "n1"}, {"default/a", "n1"}, {"default/a", "n2"}, {"default/b", "n1"}});
  CHECK(api.bind_annotations[1].second == StringMap{{"k", "v"}});
  CHECK(api.bind_attempts.at("default/a") == 3);
  CHECK(api.bound == std::map<std::string, std::string>{{"default/a", "n2"}});
  CHECK(confirmed == 1);  // only the bind answered OK

  api.refuse_evictions = 1;
  CHECK(api.Evict(a, "preempted").code() == absl::StatusCode::kResourceExhausted);
  CHECK(api.Evict(a, "preempted").ok());
  CHECK(api.evictions == std::vector<std::string>{"default/a"});
  CHECK(api.eviction_attempts.at("default/a") == 2);
  CHECK(api.bound.empty());
  api.on_evict = [](const Pod&, std::string_view) { return absl::NotFoundError("gone"); };
  CHECK(api.Evict(b, "x").code() == absl::StatusCode::kNotFound);
  CHECK(api.evictions.size() == 1);  // not evicted by this fake

  api.RecordEvent(a, "Normal", "Preempted", "by default/p");
  api.MarkDisruptionTarget(a, "PreemptionByScheduler", "by default/p");
  CHECK(api.events == std::vector<std::string>{"default/a Normal Preempted: by default/p"});
  CHECK(api.disruption_targets == std::vector<std::string>{"default/a PreemptionByScheduler: by default/p"});
}

TEST_CASE("CoreHarness: a pod is bound through the fake API and confirmed", "[testing]") {
  CoreHarness h;
  h.AddNode(NodeBuilder("n1").Allocatable("cpu:8,memory:32Gi,nvidia.com/gpu:4").Build());
  h.AddPod(PodBuilder("a").Requests("cpu:1,nvidia.com/gpu:2").Build());
  CHECK(h.RunUntilIdle() == 1);
  CHECK(h.binds() == std::vector<std::pair<std::string, std::string>>{{"default/a", "n1"}});
  CHECK(h.cache.NodeOf("default/a") == "n1");
  CHECK_FALSE(h.cache.IsAssumed("default/a"));  // the confirmation came back as an update
  CHECK(h.sim.placements().at("default/a") == "n1");  // it observes the outcomes, by default
}

}  // namespace testing_library_test
}  // namespace tessel
