// Device-level GPU accounting: inventory from GFD labels, pod requests, whole / fractional /
// replica placements, and the cache lifecycles (assume, forget, finish binding). After every
// operation each device must satisfy allocated + free == capacity and agree with its pods.
#include <catch2/catch.hpp>

#include "scheduler/testing/builders.h"
#include "scheduler/api/decode.h"
#include "scheduler/state/cache.h"
#include "scheduler/gpu/gpu_devices.h"

namespace tessel {
namespace gpu_devices_test {

using testing::NodeBuilder;
using testing::PodBuilder;

Pod GpuPod(std::string name, std::string_view requests, StringMap annotations = {}, std::string node = "") {
  PodBuilder b(std::move(name));
  b.Requests(requests);
  if (!node.empty()) b.Node(std::move(node));
  for (auto& [k, v] : annotations) b.mutable_pod().meta.annotations[k] = v;
  Pod pod = b.Build();
  ReadGpuDevicesAnnotation(pod);  // as the decoder does
  return pod;
}

// A GFD-labelled node: `count` GPUs, `replicas` slots each (1 = unshared).
Node GfdNode(std::string name, int count, int replicas = 1, std::string memory_mib = "") {
  NodeBuilder b(std::move(name));
  b.Allocatable("cpu:64,memory:256Gi").TimeSliced(count, replicas).GpuProduct("NVIDIA-A100-SXM4-40GB");
  if (!memory_mib.empty()) b.Label("nvidia.com/gpu.memory", memory_mib);
  return b.Build();
}

void CheckDevices(const gpu::GpuDevices& gpus) {
  INFO(gpus.CheckInvariants());
  CHECK(gpus.CheckInvariants().empty());
  int64_t sum = 0;
  for (int32_t i = 0; i < gpus.count(); ++i) {
    CHECK(gpus.AllocatedMilli(i) + gpus.FreeMilli(i) == 1000);
    CHECK(gpus.AllocatedMilli(i) >= 0);
    CHECK(gpus.FreeMilli(i) >= 0);
    sum += gpus.AllocatedMilli(i);
  }
  CHECK(sum == gpus.total_allocated_milli());
}

void CheckCache(const Cache& cache) {
  for (const std::string& name : cache.NodeNames()) {
    CAPTURE(name);
    CheckDevices(cache.GetNodeInfo(name)->gpus());
  }
}

TEST_CASE("GPU inventory comes from GFD labels, else from allocatable nvidia.com/gpu", "[gpu]") {
  struct Case {
    std::string name;
    Node node;
    int32_t count, replicas;
    gpu::SharingStrategy strategy;
    int64_t memory_bytes;
  };
  Node mig = NodeBuilder("mig").Allocatable("cpu:8,nvidia.com/mig-3g.20gb:2,nvidia.com/mig-1g.5gb:1").Build();
  Node mps = GfdNode("mps", 2, 4);
  mps.meta.labels["nvidia.com/gpu.sharing-strategy"] = "mps";
  Node renamed = GfdNode("renamed", 1, 3);
  renamed.allocatable.Set("nvidia.com/gpu", 0);
  renamed.allocatable.Set("nvidia.com/gpu.shared", 3000);
  std::vector<Case> cases = {
      {"labels", GfdNode("a", 8, 1, "40960"), 8, 1, gpu::SharingStrategy::kNone, int64_t{40960} << 20},
      {"time-slicing", GfdNode("t", 2, 3), 2, 3, gpu::SharingStrategy::kTimeSlicing, 0},
      {"mps", mps, 2, 4, gpu::SharingStrategy::kMps, 0},
      {"renamed replicas", renamed, 1, 3, gpu::SharingStrategy::kTimeSlicing, 0},
      {"fallback", NodeBuilder("f").Allocatable("cpu:8,nvidia.com/gpu:4").Build(), 4, 1, gpu::SharingStrategy::kNone, 0},
      {"no GPUs", NodeBuilder("c").Allocatable("cpu:8").Build(), 0, 1, gpu::SharingStrategy::kNone, 0},
      {"MIG only", mig, 0, 1, gpu::SharingStrategy::kNone, 0},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      gpu::GpuInventory inv = gpu::ReadGpuInventory(c.node);
      CHECK(inv.count == c.count);
      CHECK(inv.replicas == c.replicas);
      CHECK(inv.strategy == c.strategy);
      CHECK(inv.memory_bytes == c.memory_bytes);
    }
  }
  // 2 x 3g (3/7 each) + 1 x 1g (1/7) = 7/7: one GPU-equivalent.
  CHECK(gpu::ReadGpuInventory(mig).mig_sevenths == 7);
  CHECK(gpu::ReadGpuInventory(renamed).replica_resource == "nvidia.com/gpu.shared");
}

TEST_CASE("pod GPU requests: whole, fraction, replicas, MIG and malformed annotations", "[gpu]") {
  using K = gpu::GpuRequest::Kind;
  using S = gpu::GpuRequest::Sharing;
  struct Case {
    std::string name;
    Pod pod;
    K kind;
    int32_t count;
    int64_t milli;
    S sharing;
    std::string error;  // a substring of the error; empty = none
  };
  std::vector<Case> cases = {
      {"cpu only", GpuPod("a", "cpu:1"), K::kNone, 0, 0, S::kUnstated, ""},
      {"two whole", GpuPod("b", "nvidia.com/gpu:2"), K::kWhole, 2, 0, S::kUnstated, ""},
      {"fraction", GpuPod("c", "nvidia.com/gpu:1", {{"tessel.io/gpu-milli", "250"}}), K::kFraction, 1, 250, S::kUnstated, ""},
      {"fraction of 1000 is whole", GpuPod("d", "nvidia.com/gpu:1", {{"tessel.io/gpu-milli", "1000"}}), K::kWhole, 1, 0, S::kUnstated, ""},
      {"opt-in annotation", GpuPod("e", "nvidia.com/gpu:1", {{"tessel.io/gpu-sharing", "allowed"}}), K::kWhole, 1, 0, S::kAllowed, ""},
      {"opt-out annotation", GpuPod("e2", "nvidia.com/gpu:1", {{"tessel.io/gpu-sharing", "never"}}), K::kWhole, 1, 0, S::kNever, ""},
      {"shared resource", GpuPod("f", "nvidia.com/gpu.shared:2"), K::kReplicas, 2, 0, S::kAllowed, ""},
      {"milli without a GPU", GpuPod("g", "cpu:1", {{"tessel.io/gpu-milli", "250"}}), K::kNone, 0, 0, S::kUnstated, "tessel.io/gpu-milli"},
      {"milli with two GPUs", GpuPod("h", "nvidia.com/gpu:2", {{"tessel.io/gpu-milli", "250"}}), K::kWhole, 2, 0, S::kUnstated, "tessel.io/gpu-milli"},
      {"milli not a number", GpuPod("i", "nvidia.com/gpu:1", {{"tessel.io/gpu-milli", "half"}}), K::kWhole, 1, 0, S::kUnstated, "tessel.io/gpu-milli"},
      {"bad memory hint", GpuPod("j", "nvidia.com/gpu:1", {{"tessel.io/gpu-memory", "lots"}}), K::kWhole, 1, 0, S::kUnstated, "tessel.io/gpu-memory"},
      {"unknown sharing value", GpuPod("l", "nvidia.com/gpu:1", {{"tessel.io/gpu-sharing", "yes"}}), K::kWhole, 1, 0, S::kUnstated,
       "annotation tessel.io/gpu-sharing: \"yes\" is not one of allowed, never"},
      {"sharing values are case-sensitive", GpuPod("m", "nvidia.com/gpu:1", {{"tessel.io/gpu-sharing", "Allowed"}}), K::kWhole, 1, 0,
       S::kUnstated, "tessel.io/gpu-sharing"},
      {"opt-out contradicts nvidia.com/gpu.shared", GpuPod("n", "nvidia.com/gpu.shared:1", {{"tessel.io/gpu-sharing", "never"}}),
       K::kReplicas, 1, 0, S::kAllowed, "annotation tessel.io/gpu-sharing: \"never\" contradicts the request for nvidia.com/gpu.shared"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      gpu::GpuRequest r = gpu::ReadGpuRequest(c.pod);
      CHECK(r.kind == c.kind);
      CHECK(r.count == c.count);
      CHECK(r.milli == c.milli);
      CHECK(r.sharing == c.sharing);
      CHECK(r.opt_in() == (c.sharing == S::kAllowed));
      if (c.error.empty()) {
        CHECK(r.error.empty());
      } else {
        CHECK_THAT(r.error, Catch::Contains(c.error));
      }
    }
  }
  CHECK(gpu::ReadGpuRequest(GpuPod("m", "nvidia.com/mig-2g.10gb:3")).mig_sevenths == 6);
  CHECK(gpu::ReadGpuRequest(GpuPod("k", "nvidia.com/gpu:1", {{"tessel.io/gpu-memory", "8Gi"}})).memory_bytes ==
        int64_t{8} << 30);
}

TEST_CASE("device lists parse and print", "[gpu]") {
  CHECK(ParseDeviceList("0,3") == DeviceList{0, 3});
  CHECK(ParseDeviceList("2") == DeviceList{2});
  CHECK_FALSE(ParseDeviceList("").has_value());
  CHECK_FALSE(ParseDeviceList("1,").has_value());
  CHECK_FALSE(ParseDeviceList("a").has_value());
  CHECK_FALSE(ParseDeviceList("-1").has_value());
  CHECK(FormatDeviceList({1, 2, 5}) == "1,2,5");
  CHECK_FALSE(ParseDeviceList("1024").has_value());
  CHECK_FALSE(ParseDeviceList(",1").has_value());
  // Decoding: the annotation becomes the typed field; a malformed one leaves a warning that
  // names the field, and no choice.
  Pod ok = GpuPod("ok", "nvidia.com/gpu:2", {{"tessel.io/gpu-devices", "0,3"}});
  CHECK(ok.gpu_devices == DeviceList{0, 3});
  CHECK(ok.decode_warnings.empty());
  Pod bad = GpuPod("bad", "nvidia.com/gpu:2", {{"tessel.io/gpu-devices", "0;3"}});
  CHECK_FALSE(bad.gpu_devices.has_value());
  REQUIRE(bad.decode_warnings.size() == 1);
  CHECK_THAT(bad.decode_warnings[0], Catch::Contains("metadata.annotations[tessel.io/gpu-devices]"));
  CHECK_FALSE(GpuPod("none", "nvidia.com/gpu:2").gpu_devices.has_value());
  // Through the decoder: the typed field, and the warning in the List's warnings.
  auto list = DecodeList(R"({"kind": "List", "items": [
    {"kind": "Pod", "metadata": {"name": "good", "annotations": {"tessel.io/gpu-devices": "1,2"}},
     "spec": {"containers": [{"name": "c"}]}},
    {"kind": "Pod", "metadata": {"name": "bad", "annotations": {"tessel.io/gpu-devices": "x"}},
     "spec": {"containers": [{"name": "c"}]}}]})");
  REQUIRE(list.ok());
  REQUIRE(list->pods.size() == 2);
  CHECK(list->pods[0].gpu_devices == DeviceList{1, 2});
  CHECK_FALSE(list->pods[1].gpu_devices.has_value());
  REQUIRE(list->warnings.size() == 1);
  CHECK_THAT(list->warnings[0], Catch::Contains("default/bad") && Catch::Contains("tessel.io/gpu-devices"));
}

TEST_CASE("placements take devices and give them back exactly", "[gpu]") {
  // Each step adds (or removes) one pod; `want` is every device's allocated milli afterwards.
  struct Step {
    std::string pod;  // "-name" removes
    std::string requests;
    StringMap annotations;
    std::vector<int64_t> want;
  };
  struct Case {
    std::string name;
    Node node;
    std::vector<Step> steps;
  };
  const StringMap share = {{"tessel.io/gpu-sharing", "allowed"}};
  std::vector<Case> cases = {
      {"whole GPUs take the lowest free devices",
       GfdNode("n", 4),
       {{"a", "nvidia.com/gpu:2", {}, {1000, 1000, 0, 0}},
        {"b", "nvidia.com/gpu:1", {}, {1000, 1000, 1000, 0}},
        {"-a", "", {}, {0, 0, 1000, 0}},
        {"c", "nvidia.com/gpu:1", {}, {1000, 0, 1000, 0}}}},
      {"fractions go to the best-fit device",
       GfdNode("n", 2),
       {{"a", "nvidia.com/gpu:1", {{"tessel.io/gpu-milli", "600"}}, {600, 0}},
        {"b", "nvidia.com/gpu:1", {{"tessel.io/gpu-milli", "300"}}, {900, 0}},
        {"c", "nvidia.com/gpu:1", {{"tessel.io/gpu-milli", "200"}}, {900, 200}},
        {"d", "nvidia.com/gpu:1", {{"tessel.io/gpu-milli", "100"}}, {1000, 200}},
        {"-b", "", {}, {700, 200}}}},
      {"the typed device choice (from the annotation) is honoured when it fits",
       GfdNode("n", 4),
       {{"a", "nvidia.com/gpu:2", {{"tessel.io/gpu-devices", "1,3"}}, {0, 1000, 0, 1000}},
        {"b", "nvidia.com/gpu:1", {{"tessel.io/gpu-milli", "500"}, {"tessel.io/gpu-devices", "2"}}, {0, 1000, 500, 1000}},
        // Device 1 is taken: the annotation is ignored and the default choice applies.
        {"c", "nvidia.com/gpu:1", {{"tessel.io/gpu-devices", "1"}}, {1000, 1000, 500, 1000}}}},
      {"replicas: least-loaded device first, R slots make 1000 milli",
       GfdNode("n", 2, 3),
       {{"a", "nvidia.com/gpu:1", share, {333, 0}},
        {"b", "nvidia.com/gpu:1", share, {333, 333}},
        {"c", "nvidia.com/gpu:2", share, {666, 666}},
        {"d", "nvidia.com/gpu:1", share, {1000, 666}},
        {"-c", "", {}, {666, 333}}}},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      gpu::GpuDevices gpus(gpu::ReadGpuInventory(c.node));
      std::vector<std::shared_ptr<const Pod>> pods;
      CheckDevices(gpus);
      for (const Step& s : c.steps) {
        CAPTURE(s.pod);
        if (s.pod[0] == '-') {
          auto it = std::find_if(pods.begin(), pods.end(), [&](const auto& p) { return p->meta.name == s.pod.substr(1); });
          REQUIRE(it != pods.end());
          CHECK(gpus.RemovePod(it->get()));
          pods.erase(it);
        } else {
          pods.push_back(std::make_shared<const Pod>(GpuPod(s.pod, s.requests, s.annotations)));
          gpus.AddPod(pods.back().get());
        }
        std::vector<int64_t> got;
        for (int32_t i = 0; i < gpus.count(); ++i) got.push_back(gpus.AllocatedMilli(i));
        CHECK(got == s.want);
        CheckDevices(gpus);
      }
    }
  }
}

TEST_CASE("time-slicing: 1 GPU x 3 replicas hosts 3 pods and counts as 1 GPU", "[gpu]") {
  // The device plugin's default setup: pods ask nvidia.com/gpu: 1 with no annotation, and each
  // gets one replica; a pod that opted in is accounted the same way.
  const StringMap ordinary = {}, opted_in = {{"tessel.io/gpu-sharing", "allowed"}};
  for (const StringMap* annotations : {&ordinary, &opted_in}) {
    CAPTURE(annotations->size());
    gpu::GpuDevices gpus(gpu::ReadGpuInventory(GfdNode("n", 1, 3)));
    const gpu::GpuDemand demand = gpu::DemandOn(gpu::ReadGpuRequest(GpuPod("x", "nvidia.com/gpu:1", *annotations)), gpus.inventory());
    CHECK(demand.kind == gpu::GpuDemand::Kind::kSlots);
    CHECK(demand.count == 1);
    CHECK(demand.ineligible.empty());
    std::vector<std::shared_ptr<const Pod>> pods;
    for (int i = 0; i < 3; ++i) {
      REQUIRE(gpus.Fits(demand));
      pods.push_back(std::make_shared<const Pod>(GpuPod(fmt::format("p{}", i), "nvidia.com/gpu:1", *annotations)));
      gpus.AddPod(pods.back().get());
      CHECK(gpus.total_allocated_milli() == (i + 1) * 1000 / 3);
      CheckDevices(gpus);
    }
    CHECK_FALSE(gpus.Fits(demand));
    CHECK(gpus.total_allocated_milli() == 1000);  // 3 replicas are one physical GPU
    CHECK(gpus.UsedSlots(0) == 3);
    // Asking for 2 GPUs is 2 replicas: 2/3 of the GPU.
    CHECK(gpu::HeldGpuMilli(gpu::ReadGpuRequest(GpuPod("two", "nvidia.com/gpu:2", *annotations)), gpus.inventory()) == 666);
  }
  // Opted out: a shared node (time-slicing or MPS) is not eligible at all, and the reason says so.
  Node mps = GfdNode("m", 1, 3);
  mps.meta.labels["nvidia.com/gpu.sharing-strategy"] = "mps";
  const gpu::GpuRequest never = gpu::ReadGpuRequest(GpuPod("y", "nvidia.com/gpu:1", {{"tessel.io/gpu-sharing", "never"}}));
  CHECK(gpu::DemandOn(never, gpu::ReadGpuInventory(GfdNode("n", 1, 3))).ineligible ==
        "node(s) share GPUs (time-slicing) and the pod opted out (tessel.io/gpu-sharing: never)");
  CHECK(gpu::DemandOn(never, gpu::ReadGpuInventory(mps)).ineligible ==
        "node(s) share GPUs (mps) and the pod opted out (tessel.io/gpu-sharing: never)");
  // MPS replicas are nvidia.com/gpu too: an ordinary pod takes one.
  CHECK(gpu::DemandOn(gpu::ReadGpuRequest(GpuPod("z", "nvidia.com/gpu:1")), gpu::ReadGpuInventory(mps)).ineligible.empty());
  // An unshared node takes the opted-out pod as usual.
  CHECK(gpu::DemandOn(never, gpu::ReadGpuInventory(GfdNode("u", 2))).kind == gpu::GpuDemand::Kind::kWhole);
  // Replicas renamed to nvidia.com/gpu.shared: the node has no nvidia.com/gpu for an ordinary pod.
  Node renamed = GfdNode("r", 1, 3);
  renamed.allocatable.Set("nvidia.com/gpu", 0);
  renamed.allocatable.Set("nvidia.com/gpu.shared", 3000);
  CHECK_FALSE(gpu::DemandOn(gpu::ReadGpuRequest(GpuPod("o", "nvidia.com/gpu:1")), gpu::ReadGpuInventory(renamed)).ineligible.empty());
  CHECK(gpu::DemandOn(gpu::ReadGpuRequest(GpuPod("s", "nvidia.com/gpu.shared:1")), gpu::ReadGpuInventory(renamed)).ineligible.empty());
}

// kube-scheduler adds the pods nominated to a node to a copy of it (RunFiltersWithNominatedPods)
// and sums requests. A nominated pod whose victims still hold its devices fits on no device
// and is counted as unplaced; what it holds must still keep others off.
TEST_CASE("unplaced pods hold their share of the node's free total", "[gpu][nomination]") {
  struct Case {
    std::string name;
    Node node;
    std::vector<std::pair<std::string, StringMap>> held;  // requests, annotations, in order
    std::string demand_requests;
    StringMap demand_annotations;
    bool on_devices, beside_unplaced;
  };
  const StringMap frac600 = {{"tessel.io/gpu-milli", "600"}}, frac700 = {{"tessel.io/gpu-milli", "700"}};
  const StringMap frac300 = {{"tessel.io/gpu-milli", "300"}}, frac500 = {{"tessel.io/gpu-milli", "500"}};
  std::vector<Case> cases = {
      {"whole: 4 free devices, all 8 promised to a nominated pod", GfdNode("n", 8),
       {{"nvidia.com/gpu:4", {}}, {"nvidia.com/gpu:8", {}}}, "nvidia.com/gpu:4", {}, true, false},
      {"whole: even one GPU is promised", GfdNode("n", 8),
       {{"nvidia.com/gpu:4", {}}, {"nvidia.com/gpu:8", {}}}, "nvidia.com/gpu:1", {}, true, false},
      {"fraction: 400 free on the device, 700 promised", GfdNode("n", 1),
       {{"nvidia.com/gpu:1", frac600}, {"nvidia.com/gpu:1", frac700}}, "nvidia.com/gpu:1", frac300, true, false},
      {"replicas: 1 slot free, 2 promised", GfdNode("n", 1, 4),
       {{"nvidia.com/gpu:3", {}}, {"nvidia.com/gpu:2", {}}}, "nvidia.com/gpu:1", {}, true, false},
      {"replicas across devices: 2 slots free, 3 promised", GfdNode("n", 2, 3),
       {{"nvidia.com/gpu:2", {}}, {"nvidia.com/gpu:2", {}}, {"nvidia.com/gpu:3", {}}}, "nvidia.com/gpu:1", {}, true, false},
      // Four devices with 600 used by a fraction each, and a whole GPU bound elsewhere: 1600
      // free, 1000 of it held; a fraction of 300 still fits in the rest; one of 500 has room in
      // total but on no device.
      {"fragmented: the sum leaves room for a small fraction", GfdNode("n", 4),
       {{"nvidia.com/gpu:1", frac600}, {"nvidia.com/gpu:1", frac600}, {"nvidia.com/gpu:1", frac600},
        {"nvidia.com/gpu:1", frac600}, {"nvidia.com/gpu:1", {}}},
       "nvidia.com/gpu:1", frac300, true, true},
      {"fragmented: room in total, on no device", GfdNode("n", 4),
       {{"nvidia.com/gpu:1", frac600}, {"nvidia.com/gpu:1", frac600}, {"nvidia.com/gpu:1", frac600},
        {"nvidia.com/gpu:1", frac600}, {"nvidia.com/gpu:1", {}}},
       "nvidia.com/gpu:1", frac500, false, true},
      {"nothing unplaced: the devices decide", GfdNode("n", 8), {{"nvidia.com/gpu:4", {}}}, "nvidia.com/gpu:4", {}, true, true},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      gpu::GpuDevices gpus(gpu::ReadGpuInventory(c.node));
      std::vector<std::shared_ptr<const Pod>> pods;
      for (const auto& [requests, annotations] : c.held) {
        pods.push_back(std::make_shared<const Pod>(GpuPod(fmt::format("p{}", pods.size()), requests, annotations)));
        gpus.AddPod(pods.back().get());
        CheckDevices(gpus);
      }
      const gpu::GpuDemand demand = gpu::DemandOn(gpu::ReadGpuRequest(GpuPod("new", c.demand_requests, c.demand_annotations)), gpus.inventory());
      CHECK(gpus.FitsOnDevices(demand) == c.on_devices);
      CHECK(gpus.FitsBesideUnplaced(demand) == c.beside_unplaced);
      CHECK(gpus.Fits(demand) == (c.on_devices && c.beside_unplaced));
      // Each pod gives back exactly what it held, on devices or not.
      for (const auto& p : pods) {
        CHECK(gpus.RemovePod(p.get()));
        CheckDevices(gpus);
      }
      CHECK(gpus.total_allocated_milli() == 0);
      CHECK(gpus.unplaced_milli() == 0);
      CHECK(gpus.unplaced_slots() == 0);
      CHECK(gpus.Fits(demand));
      CheckDevices(gpus);
    }
  }
}

TEST_CASE("six replicas on a node with R=4 are 1.5 GPUs", "[gpu]") {
  gpu::GpuDevices gpus(gpu::ReadGpuInventory(GfdNode("n", 2, 4)));
  std::vector<std::shared_ptr<const Pod>> pods;
  for (int i = 0; i < 6; ++i) {
    pods.push_back(std::make_shared<const Pod>(
        GpuPod(fmt::format("p{}", i), "nvidia.com/gpu:1", {{"tessel.io/gpu-sharing", "allowed"}})));
    gpus.AddPod(pods.back().get());
  }
  CHECK(gpus.total_allocated_milli() == 1500);
  CheckDevices(gpus);
}

TEST_CASE("the memory hint must fit the device minus what other sharers declared", "[gpu]") {
  gpu::GpuDevices gpus(gpu::ReadGpuInventory(GfdNode("n", 1, 4, "16384")));  // one 16 GiB GPU, 4 slots
  auto demand = [&](std::string_view mem) {
    return gpu::DemandOn(gpu::ReadGpuRequest(GpuPod("q", "nvidia.com/gpu:1",
                                          {{"tessel.io/gpu-sharing", "allowed"}, {"tessel.io/gpu-memory", std::string(mem)}})),
                    gpus.inventory());
  };
  CHECK(gpus.Fits(demand("16Gi")));
  CHECK_FALSE(gpus.Fits(demand("17Gi")));
  auto a = std::make_shared<const Pod>(GpuPod("a", "nvidia.com/gpu:1",
                                              {{"tessel.io/gpu-sharing", "allowed"}, {"tessel.io/gpu-memory", "10Gi"}}));
  gpus.AddPod(a.get());
  CHECK(gpus.DeclaredMemory(0) == int64_t{10} << 30);
  CHECK(gpus.Fits(demand("6Gi")));
  CHECK_FALSE(gpus.Fits(demand("7Gi")));
  CHECK(gpus.RemovePod(a.get()));
  CHECK(gpus.Fits(demand("7Gi")));
  CheckDevices(gpus);
}

TEST_CASE("cache lifecycles keep every device exact", "[gpu][cache]") {
  ManualClock clock;
  Cache cache(&clock);
  cache.AddOrUpdateNode(GfdNode("n1", 4));
  const Pod frac = GpuPod("f", "nvidia.com/gpu:1", {{"tessel.io/gpu-milli", "400"}}, "n1");
  const Pod whole = GpuPod("w", "nvidia.com/gpu:2", {}, "n1");
  REQUIRE(cache.AssumePod(frac).ok());
  REQUIRE(cache.AssumePod(whole).ok());
  CHECK(cache.GetNodeInfo("n1")->gpus().total_allocated_milli() == 2400);
  CheckCache(cache);

  SECTION("forget releases the devices") {
    REQUIRE(cache.ForgetPod("default/w").ok());
    CHECK(cache.GetNodeInfo("n1")->gpus().total_allocated_milli() == 400);
    CHECK(cache.GetNodeInfo("n1")->gpus().whole_free_devices() == 3);
    CheckCache(cache);
    REQUIRE(cache.ForgetPod("default/f").ok());
    CHECK(cache.GetNodeInfo("n1")->gpus().total_allocated_milli() == 0);
    CheckCache(cache);
  }
  SECTION("finish binding and the informer's confirmation do not count twice") {
    REQUIRE(cache.FinishBinding("default/f").ok());
    CheckCache(cache);
    cache.AddOrUpdatePod(frac);
    CHECK(cache.GetNodeInfo("n1")->gpus().total_allocated_milli() == 2400);
    CheckCache(cache);
    cache.RemovePod("default/f");
    CHECK(cache.GetNodeInfo("n1")->gpus().total_allocated_milli() == 2000);
    CheckCache(cache);
  }
  SECTION("an unconfirmed assumption holds its devices until the pod is deleted") {
    REQUIRE(cache.FinishBinding("default/w").ok());
    clock.Advance(absl::Minutes(1));
    CHECK(cache.GetNodeInfo("n1")->gpus().total_allocated_milli() == 2400);
    cache.RemovePod("default/w");
    CHECK(cache.GetNodeInfo("n1")->gpus().total_allocated_milli() == 400);
    CheckCache(cache);
  }
  SECTION("a node update re-accounts its pods on the new inventory") {
    cache.AddOrUpdateNode(GfdNode("n1", 8));
    CHECK(cache.GetNodeInfo("n1")->gpus().count() == 8);
    CHECK(cache.GetNodeInfo("n1")->gpus().total_allocated_milli() == 2400);
    CheckCache(cache);
  }
  SECTION("pods that no longer fit are counted as unplaced, never on a device") {
    cache.AddOrUpdateNode(GfdNode("n1", 2));
    const std::optional<NodeInfo> info = cache.GetNodeInfo("n1");
    CHECK(info->gpus().total_allocated_milli() + info->gpus().unplaced_milli() == 2400);
    CheckCache(cache);
  }
}

}  // namespace gpu_devices_test
}  // namespace tessel
