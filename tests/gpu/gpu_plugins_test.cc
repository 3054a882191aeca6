// GpuShare's fit and sharing rules, and every GPU score plugin's formula on small cases whose
// expected values are worked out by hand in the comments.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "scheduler/testing/builders.h"
#include "tests/harness/property_seeds.h"
#include "plugins/best_fit/best_fit.h"
#include "plugins/dot_prod/dot_prod.h"
#include "plugins/fgd/fgd.h"
#include "plugins/gpu_binpack/gpu_binpack.h"
#include "plugins/gpu_clustering/gpu_clustering.h"
#include "plugins/gpu_packing/gpu_packing.h"
#include "plugins/gpu_share/gpu_share.h"
#include "plugins/random/random.h"
#include "plugins/tessel_gpu/tessel_gpu.h"

namespace tessel {
namespace gpu_plugins_test {

using testing::NodeBuilder;
using testing::PodBuilder;

Pod MakePod(std::string name, std::string_view requests, StringMap annotations = {}) {
  PodBuilder b(std::move(name));
  b.Requests(requests);
  for (auto& [k, v] : annotations) b.mutable_pod().meta.annotations[k] = v;
  return b.Build();
}

Pod Frac(std::string name, int milli, std::string_view cpu = "cpu:1") {
  return MakePod(std::move(name), StrCat(cpu, ",nvidia.com/gpu:1"), {{"tessel.io/gpu-milli", StrCat(milli)}});
}

// A node with its pods; pods keep their annotations (e.g. tessel.io/gpu-devices).
struct TestNode {
  std::vector<std::shared_ptr<const Pod>> pods;
  NodeInfo info;

  TestNode(std::string name, std::string_view allocatable, int gpus, StringMap labels = {}) {
    NodeBuilder b(std::move(name));
    b.Allocatable(allocatable);
    if (gpus > 0) {
      b.Label("nvidia.com/gpu.count", StrCat(gpus));
      b.Label("nvidia.com/gpu.product", "T4");
    }
    for (auto& [k, v] : labels) b.Label(k, v);
    info = NodeInfo(std::make_shared<const Node>(b.Build()));
  }
  TestNode& Add(Pod pod) {
    pods.push_back(std::make_shared<const Pod>(std::move(pod)));
    info.AddPod(pods.back());
    return *this;
  }
};

// A Handle for plugin construction.
class FakeHandle final : public Handle {
 public:
  const Snapshot& snapshot() const override { return snap_; }
  const Clock& clock() const override { return clock_; }
  ClusterApi* api() const override { return nullptr; }
  uint64_t seed() const override { return 7; }
  std::optional<int32_t> PriorityClassValue(std::string_view) const override { return std::nullopt; }

 private:
  Snapshot snap_;
  ManualClock clock_;
};

int64_t ScoreOf(const ScorePlugin& plugin, const Pod& pod, const NodeInfo& node) {
  CycleState state;
  ScoreResult r = plugin.Score(state, pod, node);
  REQUIRE(r.status.ok());
  return r.score;
}

gpu::PodGpu PodGpuOf(const Pod& pod) { return gpu::MakePodGpu(pod); }

TEST_CASE("GpuShare: sharing choice, fit and memory hint, with reasons", "[gpu][plugins]") {
  const StringMap slicing = {{"nvidia.com/gpu.replicas", "2"}, {"nvidia.com/gpu.sharing-strategy", "time-slicing"},
                             {"nvidia.com/gpu.memory", "16384"}};
  TestNode sliced("sliced", "cpu:16,memory:64Gi,nvidia.com/gpu:2", 1, slicing);
  StringMap mps_labels = slicing;
  mps_labels["nvidia.com/gpu.sharing-strategy"] = "mps";
  TestNode mps("mps", "cpu:16,memory:64Gi,nvidia.com/gpu:2", 1, mps_labels);
  TestNode renamed("renamed", "cpu:16,memory:64Gi,nvidia.com/gpu.shared:2", 1, slicing);
  TestNode whole("whole", "cpu:16,memory:64Gi,nvidia.com/gpu:2", 2);
  TestNode cpu("cpu", "cpu:16,memory:64Gi", 0);
  const StringMap allowed = {{"tessel.io/gpu-sharing", "allowed"}}, never = {{"tessel.io/gpu-sharing", "never"}};
  struct Case {
    std::string name;
    Pod pod;
    const TestNode* node;
    Code code;
    std::string reason;  // a substring of the first reason
  };
  std::vector<Case> cases = {
      {"no annotation: nvidia.com/gpu on a time-sliced node is a replica", MakePod("a", "nvidia.com/gpu:1"), &sliced,
       Code::kSuccess, ""},
      {"no annotation: so is an MPS replica", MakePod("a2", "nvidia.com/gpu:1"), &mps, Code::kSuccess, ""},
      {"no annotation: two GPUs are two replicas", MakePod("a3", "nvidia.com/gpu:2"), &sliced, Code::kSuccess, ""},
      {"no annotation: a fraction takes a replica", Frac("a4", 500), &sliced, Code::kSuccess, ""},
      {"opted out: time-sliced node not eligible", MakePod("a5", "nvidia.com/gpu:1", never), &sliced,
       Code::kUnschedulableAndUnresolvable, "node(s) share GPUs (time-slicing) and the pod opted out (tessel.io/gpu-sharing: never)"},
      {"opted out: MPS node not eligible", MakePod("a6", "nvidia.com/gpu:1", never), &mps,
       Code::kUnschedulableAndUnresolvable, "node(s) share GPUs (mps) and the pod opted out"},
      {"opted out: an unshared node is fine", MakePod("a7", "nvidia.com/gpu:1", never), &whole, Code::kSuccess, ""},
      {"replicas renamed to nvidia.com/gpu.shared: no nvidia.com/gpu here", MakePod("a8", "nvidia.com/gpu:1"), &renamed,
       Code::kUnschedulableAndUnresolvable, "only as nvidia.com/gpu.shared"},
      {"replicas renamed: a request for nvidia.com/gpu.shared fits", MakePod("a9", "nvidia.com/gpu.shared:1"), &renamed,
       Code::kSuccess, ""},
      {"opted in by annotation", MakePod("b", "nvidia.com/gpu:1", allowed), &sliced, Code::kSuccess, ""},
      {"opted in by nvidia.com/gpu.shared, node advertises nvidia.com/gpu", MakePod("c", "nvidia.com/gpu.shared:1"),
       &sliced, Code::kUnschedulableAndUnresolvable, "nvidia.com/gpu.shared"},
      {"more replicas than slots", MakePod("d", "nvidia.com/gpu:3", allowed), &sliced, Code::kUnschedulable,
       "GPU replicas"},
      {"more replicas than slots, no annotation", MakePod("d2", "nvidia.com/gpu:3"), &sliced, Code::kUnschedulable,
       "Insufficient nvidia.com/gpu (GPU replicas)"},
      {"memory hint fits", MakePod("e", "nvidia.com/gpu:1", {{"tessel.io/gpu-sharing", "allowed"}, {"tessel.io/gpu-memory", "16Gi"}}),
       &sliced, Code::kSuccess, ""},
      {"memory hint too big", MakePod("f", "nvidia.com/gpu:1", {{"tessel.io/gpu-sharing", "allowed"}, {"tessel.io/gpu-memory", "20Gi"}}),
       &sliced, Code::kUnschedulable, "GPU memory"},
      {"whole GPUs fit", MakePod("g", "nvidia.com/gpu:2"), &whole, Code::kSuccess, ""},
      {"too many whole GPUs", MakePod("h", "nvidia.com/gpu:3"), &whole, Code::kUnschedulable, "Insufficient nvidia.com/gpu"},
      {"no GPUs at all", MakePod("i", "nvidia.com/gpu:1"), &cpu, Code::kUnschedulable, "Insufficient nvidia.com/gpu"},
      {"a fraction fits an unshared node without opting in", Frac("j", 500), &whole, Code::kSuccess, ""},
      {"CPU-only pods are not GpuShare's business", MakePod("k", "cpu:1"), &sliced, Code::kSuccess, ""},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      Status st = gpu_share::CheckFit(PodGpuOf(c.pod), c.node->info);
      CHECK(st.code() == c.code);
      if (!c.reason.empty()) {
        REQUIRE_FALSE(st.reasons().empty());
        CHECK_THAT(st.reasons().front(), Catch::Contains(c.reason));
      }
    }
  }
  SECTION("a malformed tessel.io/gpu-sharing leaves the pod unschedulable, naming the annotation") {
    FakeHandle handle;
    auto plugin = gpu_share::GpuShare::New({}, handle);
    REQUIRE(plugin.ok());
    CycleState state;
    Status st = (*plugin)->PreFilter(state, MakePod("bad", "nvidia.com/gpu:1", {{"tessel.io/gpu-sharing", "sometimes"}}));
    CHECK(st.code() == Code::kUnschedulableAndUnresolvable);
    REQUIRE_FALSE(st.reasons().empty());
    CHECK(st.reasons().front() == "annotation tessel.io/gpu-sharing: \"sometimes\" is not one of allowed, never");
  }
  SECTION("a fraction needs room on one device, not in total") {
    TestNode n("n", "cpu:16,memory:64Gi,nvidia.com/gpu:2", 2);
    n.Add(Frac("x", 600)).Add(Frac("y", 600));  // 400 free on each device, 800 in total
    CHECK(gpu_share::CheckFit(PodGpuOf(Frac("z", 400)), n.info).ok());
    Status st = gpu_share::CheckFit(PodGpuOf(Frac("z", 500)), n.info);
    CHECK(st.code() == Code::kUnschedulable);
  }
}

// RunFiltersWithNominatedPods adds the pods nominated to a node (of at least the pod's priority)
// to a copy of it. The reported case: hp (8 GPUs) is nominated to an 8-GPU node whose other 4
// GPUs a terminating victim still holds; hp fits on no device, and a 4-GPU pod must not take the
// 4 free ones. Fractions and replicas the same way.
TEST_CASE("GpuShare: a nominated pod's GPUs are held though its victims still hold its devices", "[gpu][plugins][nomination]") {
  const StringMap slicing = {{"nvidia.com/gpu.replicas", "4"}, {"nvidia.com/gpu.sharing-strategy", "time-slicing"}};
  struct Case {
    std::string name;
    TestNode node;
    Pod victim, nominated, pod;
    std::string reason;
  };
  std::vector<Case> cases = {
      {"whole GPUs", TestNode("n1", "cpu:64,memory:256Gi,nvidia.com/gpu:8", 8), MakePod("victim", "nvidia.com/gpu:4"),
       MakePod("hp", "nvidia.com/gpu:8"), MakePod("later", "nvidia.com/gpu:4"), "Insufficient nvidia.com/gpu"},
      {"fractions", TestNode("n1", "cpu:64,memory:256Gi,nvidia.com/gpu:1", 1), Frac("victim", 600), Frac("hp", 700),
       Frac("later", 300), "Insufficient nvidia.com/gpu"},
      {"replicas", TestNode("n1", "cpu:64,memory:256Gi,nvidia.com/gpu:4", 1, slicing), MakePod("victim", "nvidia.com/gpu:3"),
       MakePod("hp", "nvidia.com/gpu:2"), MakePod("later", "nvidia.com/gpu:1"), "Insufficient nvidia.com/gpu (GPU replicas)"},
  };
  for (Case& c : cases) {
    SECTION(c.name) {
      c.node.Add(c.victim);
      REQUIRE(gpu_share::CheckFit(PodGpuOf(c.pod), c.node.info).ok());  // without the nomination it fits
      c.node.Add(c.nominated);
      REQUIRE(c.node.info.gpus().unplaced_milli() > 0);  // the nominated pod fits on no device
      Status st = gpu_share::CheckFit(PodGpuOf(c.pod), c.node.info);
      CHECK(st.code() == Code::kUnschedulable);
      REQUIRE_FALSE(st.reasons().empty());
      CHECK(st.reasons().front() == c.reason);
    }
  }
}

// The queue's hint by room for GpuShare: a pod parked after GpuShare rejected it is retried on a
// departure only where the node's GPU room (AddGpuRoom) holds its need (AddGpuNeed). Sound only
// if a room that does not hold the need is a node where CheckFit rejects the pod: checked on
// generated unshared and time-sliced nodes holding whole GPUs, fractions and replicas, placed on
// devices or not (overcommitted).
TEST_CASE("GpuShare: a node whose GPU room does not hold a pod's need rejects the pod", "[gpu][plugins][property]") {
  std::mt19937_64 rng(2026);
  auto roll = [&rng](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  auto gpu_pod = [&](const std::string& name) {
    switch (roll(4)) {
      case 0:
        return Frac(name, 100 * (1 + roll(9)), "cpu:1");
      case 1:
        return MakePod(name, StrCat("cpu:1,nvidia.com/gpu:1"), {{"tessel.io/gpu-sharing", "allowed"}});
      default:
        return MakePod(name, StrCat("cpu:1,nvidia.com/gpu:", 1 + roll(3)));
    }
  };
  int rejected_by_room = 0, fits = 0;
  for (int round = 0; round < 400; ++round) {
    CAPTURE(round);
    const int gpus = roll(2) == 0 ? 4 : 8;
    const int replicas = roll(2) == 0 ? 1 : 2 + roll(3);
    StringMap labels;
    if (replicas > 1) {
      labels = {{"nvidia.com/gpu.replicas", StrCat(replicas)}, {"nvidia.com/gpu.sharing-strategy", "time-slicing"}};
    }
    TestNode node("n", StrCat("cpu:64,memory:256Gi,nvidia.com/gpu:", gpus * replicas), gpus, labels);
    for (int i = 0, n = roll(3 * gpus); i < n; ++i) node.Add(gpu_pod(StrCat("on", i)));
    Resources room = node.info.Free();
    gpu::AddGpuRoom(node.info.gpus(), room);
    for (int k = 0; k < 8; ++k) {
      const Pod pod = gpu_pod(StrCat("pending", k));
      Resources need;
      gpu::AddGpuNeed(gpu::ReadGpuRequest(pod), need);
      const bool fit = gpu_share::CheckFit(PodGpuOf(pod), node.info).ok();
      fits += fit;
      if (!need.FitsIn(room)) {
        CAPTURE(room.DebugString(), need.DebugString(), replicas, gpus);
        CHECK_FALSE(fit);
        ++rejected_by_room;
      }
    }
  }
  // Both sides were seen often.
  CAPTURE(fits);
  CHECK(rejected_by_room > 200);
  CHECK(fits > 200);
}

TEST_CASE("GpuShare: an opted-in pod prefers GPUs already shared", "[gpu][plugins]") {
  FakeHandle handle;
  auto plugin = gpu_share::GpuShare::New({}, handle);
  REQUIRE(plugin.ok());
  const StringMap slicing = {{"nvidia.com/gpu.replicas", "4"}, {"nvidia.com/gpu.sharing-strategy", "time-slicing"}};
  const StringMap allowed = {{"tessel.io/gpu-sharing", "allowed"}};
  TestNode busy("busy", "cpu:16,memory:64Gi,nvidia.com/gpu:4", 1, slicing);
  busy.Add(MakePod("o", "nvidia.com/gpu:1", allowed));
  TestNode fresh("fresh", "cpu:16,memory:64Gi,nvidia.com/gpu:4", 1, slicing);
  TestNode exclusive("excl", "cpu:16,memory:64Gi,nvidia.com/gpu:1", 1);
  const Pod pod = MakePod("p", "nvidia.com/gpu:1", allowed);
  CHECK(ScoreOf(**plugin, pod, busy.info) > ScoreOf(**plugin, pod, fresh.info));
  CHECK(ScoreOf(**plugin, pod, fresh.info) > ScoreOf(**plugin, pod, exclusive.info));
  // A pod that said nothing prefers an exclusive GPU, so the replicas stay for pods that share;
  // the gap is a whole tier, as wide as the opted-in pod's (see gpu_share.h).
  for (const Pod& ordinary : {MakePod("q", "nvidia.com/gpu:1"), Frac("r", 500)}) {
    CAPTURE(ordinary.meta.name);
    CycleState state;
    CHECK((*plugin)->PreScore(state, ordinary, {}).ok());  // scored, not skipped
    CHECK(ScoreOf(**plugin, ordinary, exclusive.info) == gpu_share::kExclusiveScore);
    CHECK(ScoreOf(**plugin, ordinary, busy.info) == 0);
    CHECK(ScoreOf(**plugin, ordinary, fresh.info) == 0);
    CHECK(gpu_share::kExclusiveScore >= gpu_share::kSharedIdleScore);
  }
  CycleState cpu_state;
  CHECK((*plugin)->PreScore(cpu_state, MakePod("c", "cpu:1"), {}).code() == Code::kSkip);
}

TEST_CASE("BestFit: raw score and min-max normalisation", "[gpu][plugins]") {
  // 96 cores with 32 used, 8 GPUs with 4 used; pod 8 cores + 1 GPU:
  // cpu left 56000, GPU left 3000: 100 * (1 - (56000/256000 + 3000/16000)) = 59.375 -> 59.
  CHECK(best_fit::BestFitRaw(56000, 3000, 128000, 8000) == 59);
  FakeHandle handle;
  auto plugin = best_fit::BestFit::New({}, handle);
  REQUIRE(plugin.ok());
  TestNode n("n", "cpu:96,memory:384Gi,nvidia.com/gpu:8", 8);
  n.Add(MakePod("used", "cpu:32,nvidia.com/gpu:4"));
  CHECK(ScoreOf(**plugin, MakePod("p", "cpu:8,nvidia.com/gpu:1"), n.info) == 59);
  NodeScoreList scores = {{"a", 59}, {"b", 20}, {"c", 40}};
  best_fit::MinMaxNormalize(scores);
  // (59-20)*100/39 = 100, 0, (40-20)*100/39 = 51.28 -> 51
  CHECK(scores[0].score == 100);
  CHECK(scores[1].score == 0);
  CHECK(scores[2].score == 51);
  NodeScoreList equal = {{"a", 7}, {"b", 7}};
  best_fit::MinMaxNormalize(equal);
  CHECK((equal[0].score == 0 && equal[1].score == 0));
}

TEST_CASE("DotProd: Tetris alignment", "[gpu][plugins]") {
  // 64000*8000/128000^2 + 4000*1000/8000^2 = 0.03125 + 0.0625; 100*(1 - 0.046875) = 95.3 -> 95
  CHECK(dot_prod::DotProdScore(64000, 8000, 4000, 1000, 128000, 8000) == 95);
  // Free CPU below the request scores 0.
  CHECK(dot_prod::DotProdScore(4000, 8000, 4000, 1000, 128000, 8000) == 0);
  // An empty 128-core 8-GPU node and an 8-GPU 128-core pod: 100*(1 - (1 + 1)/2) = 0.
  CHECK(dot_prod::DotProdScore(128000, 128000, 8000, 8000, 128000, 8000) == 0);
  FakeHandle handle;
  auto plugin = dot_prod::DotProd::New({}, handle);
  REQUIRE(plugin.ok());
  TestNode n("n", "cpu:96,memory:384Gi,nvidia.com/gpu:8", 8);
  n.Add(MakePod("used", "cpu:32,nvidia.com/gpu:4"));
  CHECK(ScoreOf(**plugin, MakePod("p", "cpu:8,nvidia.com/gpu:1"), n.info) == 95);
}

TEST_CASE("GpuClustering: same kind together", "[gpu][plugins]") {
  FakeHandle handle;
  auto plugin = gpu_clustering::GpuClustering::New({}, handle);
  REQUIRE(plugin.ok());
  TestNode empty("e", "cpu:96,memory:384Gi,nvidia.com/gpu:8", 8);
  TestNode shared("s", "cpu:96,memory:384Gi,nvidia.com/gpu:8", 8);
  shared.Add(Frac("x", 500));
  TestNode mixed("m", "cpu:96,memory:384Gi,nvidia.com/gpu:8", 8);
  mixed.Add(Frac("x", 500)).Add(MakePod("w", "cpu:1,nvidia.com/gpu:1"));
  const Pod share = Frac("p", 300), one = MakePod("q", "cpu:1,nvidia.com/gpu:1");
  CHECK(ScoreOf(**plugin, share, empty.info) == 25);       // no GPU pods: 25 + 25*0/8000
  CHECK(ScoreOf(**plugin, share, shared.info) == 75 + 1);  // only its kind: 75 + floor(25*500/8000)
  CHECK(ScoreOf(**plugin, one, shared.info) == 0 + 1);     // only other kinds: 0 + 1
  CHECK(ScoreOf(**plugin, share, mixed.info) == 50 + 4);   // among others: 50 + floor(25*1500/8000)
  CHECK(ScoreOf(**plugin, MakePod("c", "cpu:1"), mixed.info) == 0);
}

TEST_CASE("GpuPacking: shared GPUs, then partly used nodes, then free nodes", "[gpu][plugins]") {
  FakeHandle handle;
  auto plugin = gpu_packing::GpuPacking::New(handle);
  REQUIRE(plugin.ok());
  TestNode free8("f8", "cpu:96,memory:384Gi,nvidia.com/gpu:8", 8);
  TestNode free2("f2", "cpu:96,memory:384Gi,nvidia.com/gpu:2", 2);
  TestNode part("p", "cpu:96,memory:384Gi,nvidia.com/gpu:4", 4);
  part.Add(Frac("x", 700));  // device 0 has 300 left
  CHECK(ScoreOf(**plugin, Frac("a", 200), free8.info) == 25);   // max(33-8, 8)
  CHECK(ScoreOf(**plugin, Frac("a", 200), free2.info) == 31);   // max(33-2, 2)
  CHECK(ScoreOf(**plugin, Frac("a", 200), part.info) == 97);    // r=300: 100 - floor(30/10)
  CHECK(ScoreOf(**plugin, Frac("a", 500), part.info) == 49);    // opens a fresh GPU: max(50-1, 33)
  CHECK(ScoreOf(**plugin, MakePod("w", "cpu:1,nvidia.com/gpu:2"), part.info) == 48);  // max(50-2, 33)
  CHECK(ScoreOf(**plugin, MakePod("c", "cpu:1"), part.info) == 0);
}

TEST_CASE("GpuBinPack: MostAllocated on GPU, CPU as the tie-break", "[gpu][plugins]") {
  FakeHandle handle;
  auto plugin = gpu_binpack::GpuBinPack::New({}, handle);
  REQUIRE(plugin.ok());
  TestNode n("n", "cpu:96,memory:384Gi,nvidia.com/gpu:8", 8);
  n.Add(MakePod("used", "cpu:32,nvidia.com/gpu:4"));
  // GPU 5000/8000 -> 9*62.5 = 562 (integer 562); CPU 40000/96000 -> 41; (562 + 41) / 10 = 60
  CHECK(ScoreOf(**plugin, MakePod("p", "cpu:8,nvidia.com/gpu:1"), n.info) == 60);
  TestNode idle("i", "cpu:96,memory:384Gi,nvidia.com/gpu:8", 8);
  CHECK(ScoreOf(**plugin, MakePod("p", "cpu:8,nvidia.com/gpu:1"), idle.info) < 60);
  auto bad = gpu_binpack::GpuBinPack::ParseArgs(YAML::Load("{gpuWeight: 0, cpuWeight: 0}"));
  CHECK_FALSE(bad.ok());
}

TEST_CASE("FGD: the sigmoid thresholds reproduce floor(100 * sigmoid(d / 1000 W))", "[gpu][plugins]") {
  for (int64_t w : {1, 7, 8152}) {
    fgd::SigmoidScorer s;
    s.Reset(w);
    for (int64_t d = -9000; d <= 9000; d += 37) {
      const int64_t scaled = d * w;
      const double x = static_cast<double>(scaled) / (1000.0 * static_cast<double>(w));
      const int64_t want = static_cast<int64_t>(std::floor(100.0 / (1.0 + std::exp(-x))));
      CAPTURE(w, d);
      CHECK(s.Score(scaled) == want);
    }
  }
}

TEST_CASE("FGD: node score and device choice on a hand-computed case", "[gpu][plugins]") {
  // Target workload: one class, 500 milli on one GPU. Node: two GPUs, device 0 has 600 free.
  // Before: the class fits (device 1), nothing below 500 is free: F = 0.
  //  300 on device 0 -> it has 300 < 500 left: F = 300, d = -300: floor(100 sigmoid(-0.3)) = 42
  //  300 on device 1 -> 700 left, device 0 600: F = 0, d = 0: 50   => device 1, score 50
  //  600 on device 0 -> 0 left: F = 0: 50; on device 1 -> 400 left: F = 400: 40 => device 0
  std::vector<gpu::TargetClass> classes = {{.cpu_milli = 0, .gpu_milli = 500, .num_gpu = 1, .models = {}, .weight = 1}};
  fgd::FGDArgs args;
  args.workload.classes = classes;
  FakeHandle handle;
  auto plugin = fgd::FGD::New(args, handle);
  REQUIRE(plugin.ok());
  TestNode n("n", "cpu:16,memory:64Gi,nvidia.com/gpu:2", 2);
  n.Add(Frac("x", 400));
  auto c = (*plugin)->Evaluate(PodGpuOf(Frac("a", 300)), n.info);
  CHECK(c.key == 50);
  CHECK(c.devices == DeviceList{1});
  c = (*plugin)->Evaluate(PodGpuOf(Frac("b", 600)), n.info);
  CHECK(c.key == 50);
  CHECK(c.devices == DeviceList{0});
  // The fragmentation itself: frag(600 free, 1000 free) = 0; (300, 1000) = 300.
  gpu::FragModel model(classes);
  gpu::NodeShape s{.model = -1, .cpu_free = 1000, .n = 2, .free = {}};
  s.free[0] = 300;
  s.free[1] = 1000;
  CHECK(model.NodeFrag(s) == 300);
  s.free[1] = 400;  // nothing fits any more: all idle counts
  CHECK(model.NodeFrag(s) == 700);
  s.cpu_free = 0;
  s.free[1] = 1000;
  std::vector<gpu::TargetClass> with_cpu = {{.cpu_milli = 4000, .gpu_milli = 500, .num_gpu = 1, .models = {}, .weight = 3}};
  CHECK(gpu::FragModel(with_cpu).NodeFrag(s) == 3 * 1300);  // short of CPU: all idle, x weight 3
}

TEST_CASE("FGD typical pods: most frequent classes up to the coverage", "[gpu][plugins]") {
  auto cls = [](int64_t gpu, int64_t weight) {
    return gpu::TargetClass{.cpu_milli = 1000, .gpu_milli = gpu, .num_gpu = gpu > 0 ? 1 : 0, .models = {}, .weight = weight};
  };
  // 10 pods: 6 x A, 3 x B, 1 x C. 90% coverage keeps A and B; 95% keeps all three.
  std::vector<gpu::TargetClass> pods;
  for (int i = 0; i < 6; ++i) pods.push_back(cls(500, 1));
  for (int i = 0; i < 3; ++i) pods.push_back(cls(1000, 1));
  pods.push_back(cls(0, 1));
  auto t90 = gpu::TypicalClasses(pods, 90);
  REQUIRE(t90.size() == 2);
  CHECK(t90[0].gpu_milli == 500);
  CHECK(t90[0].weight == 6);
  CHECK(t90[1].weight == 3);
  CHECK(gpu::TypicalClasses(pods, 95).size() == 3);
}

TEST_CASE("Random: one uniformly chosen feasible node scores 100", "[gpu][plugins]") {
  FakeHandle handle;
  auto plugin = random::Random::New({}, handle);
  REQUIRE(plugin.ok());
  std::vector<TestNode> nodes;
  for (int i = 0; i < 4; ++i) nodes.emplace_back(StrCat("n", i), "cpu:16,memory:64Gi,nvidia.com/gpu:2", 2);
  std::vector<const NodeInfo*> feasible;
  for (const TestNode& n : nodes) feasible.push_back(&n.info);
  std::vector<int> wins(4, 0);
  const Pod pod = Frac("p", 300);
  for (int k = 0; k < 400; ++k) {
    CycleState state;
    REQUIRE((*plugin)->PreScore(state, pod, feasible).ok());
    int hundred = 0;
    for (int i = 0; i < 4; ++i) {
      ScoreResult r = (*plugin)->Score(state, pod, nodes[i].info);
      CHECK((r.score == 0 || r.score == 100));
      if (r.score == 100) {
        ++hundred;
        ++wins[i];
      }
    }
    CHECK(hundred == 1);
  }
  for (int w : wins) CHECK(w > 50);  // 100 expected each; far from a fixed or skewed pick
}

TEST_CASE("Tessel: FGD gradient, then whole-node preservation", "[gpu][plugins]") {
  std::vector<gpu::TargetClass> classes = {{.cpu_milli = 0, .gpu_milli = 500, .num_gpu = 1, .models = {}, .weight = 1},
                                           {.cpu_milli = 0, .gpu_milli = 1000, .num_gpu = 1, .models = {}, .weight = 1}};
  tessel_gpu::TesselArgs args;
  args.workload.classes = classes;
  FakeHandle handle;
  auto plugin = tessel_gpu::Tessel::New(args, handle);
  REQUIRE(plugin.ok());
  // Devices at 600 and 1000 free; classes 500 and 1000 milli, weight 1 each (W = 2).
  // Before: 500 fits, nothing below 500 free (0); 1000 fits, device 0's 600 stranded: F = 600.
  //  300 on device 0 (300, 1000 left): 500 -> 300 stranded; 1000 -> 300 stranded: F = 600,
  //    dF = 0: floor(100 sigmoid(0)) = 50
  //  300 on device 1 (600, 700 left): 500 -> 0; 1000 no longer fits: all 1300 idle: F = 1300,
  //    dF = -700 / W = -350 milli: floor(100 sigmoid(-350/1000)) = 41
  // So the pod fills the partly used device and keeps the whole one (key 2*50+1 vs 2*41+1).
  TestNode n("n", "cpu:16,memory:64Gi,nvidia.com/gpu:2", 2);
  n.Add(Frac("x", 400));
  tessel_gpu::Tessel::Choice c = (*plugin)->Evaluate(PodGpuOf(Frac("a", 300)), n.info);
  CHECK(c.devices == DeviceList{0});
  CHECK(c.key == 2 * 50 + 1);
  // Whole-node preservation: the gradient ties (whole devices only, F = 0 before and after);
  // the node already in use wins and the idle node stays whole.
  TestNode used("used", "cpu:16,memory:64Gi,nvidia.com/gpu:8", 8);
  used.Add(MakePod("cpu-job", "cpu:1"));
  TestNode idle("idle", "cpu:16,memory:64Gi,nvidia.com/gpu:8", 8);
  const Pod one = MakePod("w", "cpu:1,nvidia.com/gpu:1");
  const int64_t used_key = ScoreOf(**plugin, one, used.info), idle_key = ScoreOf(**plugin, one, idle.info);
  CHECK(used_key == idle_key + 1);  // same gradient bucket (50), +1 for in use
  CHECK(idle_key == 2 * 50);
  NodeScoreList scores = {{"idle", idle_key}, {"used", used_key}};
  CycleState state;
  REQUIRE((*plugin)->NormalizeScore(state, one, scores).ok());
  CHECK(scores[1].score == 100);
  CHECK(scores[0].score < 100);
  // Without preservation the two nodes tie.
  args.preserve_idle_nodes = false;
  auto plain = tessel_gpu::Tessel::New(args, handle);
  REQUIRE(plain.ok());
  CHECK(ScoreOf(**plain, one, used.info) == ScoreOf(**plain, one, idle.info));
  CHECK_FALSE(tessel_gpu::Tessel::ParseArgs(YAML::Load("{sigmoidScaleMilli: 0}")).ok());
}

TEST_CASE("Tessel with a learned workload: whole GPUs go to the tightest fit, fractions break gradient ties by it",
          "[gpu][plugins]") {
  // A learned workload with nothing learned and no node sizes known (no PreFilter ran): the
  // model is empty, so the gradient ties everywhere (floor(100 sigmoid(0)) = 50) and the fit,
  // BestFit's measure of the room left (G cpu + C gpu free after placement; C = 128000, G =
  // 8000), decides.
  FakeHandle handle;
  tessel_gpu::TesselArgs learned;
  auto tessel = tessel_gpu::Tessel::New(learned, handle);
  REQUIRE(tessel.ok());
  REQUIRE((*tessel)->workload().learning());
  // An idle 2-GPU node and an 8-GPU node in use with 6 GPUs free. A 1-GPU pod leaves
  // 15000 x 8000 + 1000 x 128000 = 248e6 on the small node, 14000 x 8000 + 5000 x 128000 =
  // 752e6 on the big one: it takes the small node and the big one keeps its 5 free GPUs
  // together (the in-use tie-break alone sent it to the big node).
  TestNode small("small", "cpu:16,memory:64Gi,nvidia.com/gpu:2", 2);
  TestNode big("big", "cpu:16,memory:64Gi,nvidia.com/gpu:8", 8);
  big.Add(MakePod("two", "cpu:1,nvidia.com/gpu:2"));
  const Pod one = MakePod("w", "cpu:1,nvidia.com/gpu:1");
  constexpr int64_t kCap = int64_t{1} << 40;
  CHECK(ScoreOf(**tessel, one, small.info) == (kCap - 248'000'000) * 256 + 50);
  CHECK(ScoreOf(**tessel, one, big.info) == (kCap - 752'000'000) * 256 + 50);
  // A fraction: the gradient first (2 x 50, +1 on a node in use), then the fit. On the idle
  // small node 15000 x 8000 + 1500 x 128000 = 312e6 is left, on the big node 14000 x 8000 +
  // 5500 x 128000 = 816e6: the node in use wins its gradient tie-break first.
  const Pod half = Frac("f", 500);
  CHECK(ScoreOf(**tessel, half, small.info) == (2 * 50) * (int64_t{1} << 41) + (kCap - 312'000'000));
  CHECK(ScoreOf(**tessel, half, big.info) == (2 * 50 + 1) * (int64_t{1} << 41) + (kCap - 816'000'000));
  // Between two nodes in use, the fuller one wins; the device the fraction takes is the one the
  // gradient chooses without the fit (the fit is the node's, the same on every device).
  TestNode fuller("fuller", "cpu:16,memory:64Gi,nvidia.com/gpu:8", 8);
  fuller.Add(MakePod("six", "cpu:1,nvidia.com/gpu:6"));
  CHECK(ScoreOf(**tessel, half, fuller.info) > ScoreOf(**tessel, half, big.info));
  tessel_gpu::TesselArgs configured;
  configured.workload.classes = {{.cpu_milli = 0, .gpu_milli = 500, .num_gpu = 1, .models = {}, .weight = 1}};
  configured.pack_whole_gpus = false;
  auto plain = tessel_gpu::Tessel::New(configured, handle);
  REQUIRE(plain.ok());
  tessel_gpu::TesselArgs learned_model = configured;
  learned_model.pack_whole_gpus = true;
  auto packed = tessel_gpu::Tessel::New(learned_model, handle);
  REQUIRE(packed.ok());
  CHECK((*packed)->Evaluate(PodGpuOf(half), fuller.info).devices == (*plain)->Evaluate(PodGpuOf(half), fuller.info).devices);
  // A configured workload (FGD's experiment) is trusted as it is: no fit, the same keys as
  // without packWholeGpus.
  CHECK(ScoreOf(**packed, one, small.info) == ScoreOf(**plain, one, small.info));
  CHECK(ScoreOf(**packed, half, big.info) == ScoreOf(**plain, half, big.info));
  // FGD itself never packs.
  auto fgd_plugin = fgd::FGD::New(fgd::FGDArgs{}, handle);
  REQUIRE(fgd_plugin.ok());
  CHECK(ScoreOf(**fgd_plugin, one, small.info) == ScoreOf(**fgd_plugin, one, big.info));
}

TEST_CASE("Tessel: the sigmoid scale follows the multi-GPU share of the workload", "[gpu][plugins]") {
  FakeHandle handle;
  auto scale_for = [&](std::vector<gpu::TargetClass> classes) {
    tessel_gpu::TesselArgs args;
    args.workload.classes = classes;
    auto plugin = tessel_gpu::Tessel::New(args, handle);
    REQUIRE(plugin.ok());
    CHECK((*plugin)->scale_milli() == tessel_gpu::AutoSigmoidScaleMilli(gpu::FragModel(classes)));
    return (*plugin)->scale_milli();
  };
  auto cls = [](int64_t milli, int32_t n, int64_t weight) {
    return gpu::TargetClass{.cpu_milli = 0, .gpu_milli = milli, .num_gpu = n, .models = {}, .weight = weight};
  };
  // No multi-GPU class: FGD's 1000.
  CHECK(scale_for({cls(500, 1, 3), cls(1000, 1, 1), cls(0, 0, 5)}) == 1000);
  // Multi-GPU share of GPU milli 2000 / (2000 + 18000) = 10%: 1000 + 1000 * 10 / 15 = 1666.
  CHECK(scale_for({cls(1000, 2, 1), cls(1000, 1, 18)}) == 1666);
  // 15% and beyond: 2000.
  CHECK(scale_for({cls(1000, 8, 1), cls(1000, 1, 8)}) == 2000);
  // An explicit scale wins.
  tessel_gpu::TesselArgs args;
  args.workload.classes = {cls(1000, 8, 1)};
  args.sigmoid_scale_milli = 1000;
  auto fixed = tessel_gpu::Tessel::New(args, handle);
  REQUIRE(fixed.ok());
  CHECK((*fixed)->scale_milli() == 1000);
}

TEST_CASE("FragModel: the CPU shortfall is the idle GPU the free CPU cannot pair with", "[gpu][plugins]") {
  // Classes asking GPUs: 1 GPU with 16 cores and 500 milli with 4 cores, weight 1 each: 20000
  // CPU milli per 1500 GPU milli. A CPU-only class and a node-bound class (the whole-node prior,
  // no CPU) do not count toward that ratio.
  std::vector<gpu::TargetClass> classes = {
      {.cpu_milli = 16000, .gpu_milli = 1000, .num_gpu = 1, .models = {}, .weight = 1},
      {.cpu_milli = 4000, .gpu_milli = 500, .num_gpu = 1, .models = {}, .weight = 1},
      {.cpu_milli = 32000, .gpu_milli = 0, .num_gpu = 0, .models = {}, .weight = 5},
      {.cpu_milli = 0, .gpu_milli = 1000, .num_gpu = 8, .models = {}, .weight = 9, .node_gpus = 8}};
  const gpu::FragModel model(classes);
  gpu::NodeShape s{.model = -1, .cpu_free = 64000, .n = 8, .free = {}};
  for (int i = 0; i < 8; ++i) s.free[i] = 1000;
  // 64 cores pair with 64000 * 1500 / 20000 = 4800 milli of the 8000 idle: 3200 short.
  CHECK(model.CpuShortfall(s) == 3200);
  s.free[0] = 300;  // 7300 idle
  CHECK(model.CpuShortfall(s) == 2500);
  s.cpu_free = 200000;  // enough CPU for every idle GPU
  CHECK(model.CpuShortfall(s) == 0);
  s.cpu_free = -5;  // overcommitted: nothing pairs
  CHECK(model.CpuShortfall(s) == 7300);
  s.cpu_free = std::numeric_limits<int64_t>::max();  // no overflow: pairs with everything
  CHECK(model.CpuShortfall(s) == 0);
  // No class asks both CPU and GPUs: no ratio, no shortfall.
  CHECK(gpu::FragModel({{.cpu_milli = 0, .gpu_milli = 500, .num_gpu = 1, .models = {}, .weight = 1}}).CpuShortfall(s) ==
        0);
}

TEST_CASE("Tessel: the CPU shortfall sends CPU-hungry pods where CPU is plentiful per GPU", "[gpu][plugins]") {
  // Two idle 8-GPU nodes, "a-lean" with 64 cores and "b-rich" with 200 (a-lean first in name
  // order, where ties go). The workload: 1 GPU with 16 cores, 1 GPU with 4 cores, weight 1 each
  // (10 cores per GPU). Every class fits either node after any one placement below, so FGD's F
  // stays 0 on both and its gradient ties.
  std::vector<gpu::TargetClass> classes = {
      {.cpu_milli = 16000, .gpu_milli = 1000, .num_gpu = 1, .models = {}, .weight = 1},
      {.cpu_milli = 4000, .gpu_milli = 1000, .num_gpu = 1, .models = {}, .weight = 1}};
  FakeHandle handle;
  auto make = [&](int64_t percent) {
    tessel_gpu::TesselArgs args;
    args.workload.classes = classes;
    args.cpu_shortfall_percent = percent;
    auto plugin = tessel_gpu::Tessel::New(args, handle);
    REQUIRE(plugin.ok());
    return *std::move(plugin);
  };
  const Pod heavy = MakePod("heavy", "cpu:16,nvidia.com/gpu:1");
  {
    TestNode lean("a-lean", "cpu:64,memory:256Gi,nvidia.com/gpu:8", 8);
    TestNode rich("b-rich", "cpu:200,memory:256Gi,nvidia.com/gpu:8", 8);
    auto tessel = make(100);
    // On a-lean: 64 cores pair with 6400 of 8000 idle (shortfall 1600); after the pod 48 cores
    // pair with 4800 of 7000 (2200): F rises by 600 x W (W = 2, weight 100 %): the gradient is
    // floor(100 sigmoid(-600/1000)) = 35. On b-rich nothing is short before or after: 50.
    CHECK(ScoreOf(*tessel, heavy, lean.info) == 2 * 35);
    CHECK(ScoreOf(*tessel, heavy, rich.info) == 2 * 50);
    auto plain = make(0);  // FGD's F: a tie
    CHECK(ScoreOf(*plain, heavy, lean.info) == ScoreOf(*plain, heavy, rich.info));
  }
  // Then a sequence: eight heavy pods, then eight 4-core pods, each to the best-scoring node
  // that fits it (ties to the first in name order). b-rich holds all eight heavy pods (128 of
  // its 200 cores) and a-lean the light ones (32 of 64): all 16 GPUs can be placed. FGD's F
  // sends the first heavy pods to a-lean, whose CPU then runs out before its GPUs do.
  auto placed = [&](const fgd::FGD& policy) {
    std::vector<TestNode> nodes;
    nodes.emplace_back("a-lean", "cpu:64,memory:256Gi,nvidia.com/gpu:8", 8);
    nodes.emplace_back("b-rich", "cpu:200,memory:256Gi,nvidia.com/gpu:8", 8);
    int count = 0;
    for (int i = 0; i < 16; ++i) {
      const Pod pod = MakePod(StrCat("p", i), i < 8 ? "cpu:16,nvidia.com/gpu:1" : "cpu:4,nvidia.com/gpu:1");
      TestNode* best = nullptr;
      int64_t best_score = 0;
      for (TestNode& n : nodes) {
        if (n.info.FreeMilliCpu() < pod.requests.milli_cpu || n.info.gpus().whole_free_devices() < 1) continue;
        const int64_t score = ScoreOf(policy, pod, n.info);
        if (best == nullptr || score > best_score) {
          best = &n;
          best_score = score;
        }
      }
      if (best == nullptr) continue;
      best->Add(pod);
      ++count;
    }
    return count;
  };
  CHECK(placed(*make(100)) == 16);
  CHECK(placed(*make(0)) < 16);
}

}  // namespace gpu_plugins_test
}  // namespace tessel

namespace tessel {
namespace gpu_plugins_test {

fgd::TargetWorkload Learner(std::string_view args_yaml) {
  auto args = fgd::FGD::ParseArgs(YAML::Load(std::string(args_yaml)));
  REQUIRE(args.ok());
  fgd::TargetWorkload w(args->workload);
  REQUIRE(w.learning());
  return w;
}

gpu::TargetClass ClassOfPod(const Pod& pod) { return fgd::TargetWorkload::ClassOf(gpu::MakePodGpu(pod)); }

TEST_CASE("learned workload: each pod is counted once, however often it is retried", "[gpu][learning]") {
  fgd::TargetWorkload w = Learner("{}");
  const Pod pod = MakePod("a", "cpu:1,nvidia.com/gpu:2");
  for (int i = 0; i < 10; ++i) w.Observe(gpu::MakePodGpu(pod), "uid-a");
  CHECK(w.observed() == 1);
  CHECK(w.CountOf(ClassOfPod(pod)) == 2);  // counts are doubled
  w.Observe(gpu::MakePodGpu(pod), "uid-b");
  CHECK(w.CountOf(ClassOfPod(pod)) == 4);

  SECTION("through the plugin: PreFilter on every attempt counts the pod once") {
    FakeHandle handle;
    auto plugin = tessel_gpu::Tessel::New({}, handle);
    REQUIRE(plugin.ok());
    Pod p = MakePod("retried", "cpu:1,nvidia.com/gpu:1");
    p.meta.uid = "uid-retried";
    for (int attempt = 0; attempt < 5; ++attempt) {
      CycleState state;
      REQUIRE((*plugin)->PreFilter(state, p).ok());
    }
    CHECK((*plugin)->workload().observed() == 1);
    // Without a UID the pod is known by namespace/name.
    Pod q = MakePod("no-uid", "cpu:1,nvidia.com/gpu:1");
    for (int attempt = 0; attempt < 3; ++attempt) {
      CycleState state;
      REQUIRE((*plugin)->PreFilter(state, q).ok());
    }
    CHECK((*plugin)->workload().observed() == 2);
  }
}

TEST_CASE("learned workload: counts halve every learnHalfLife pods", "[gpu][learning]") {
  fgd::TargetWorkload w = Learner("{learnHalfLife: 4}");
  const Pod a = MakePod("a", "cpu:1,nvidia.com/gpu:1"), b = MakePod("b", "cpu:2");
  int id = 0;
  auto observe = [&](const Pod& p, int n) {
    for (int i = 0; i < n; ++i) w.Observe(gpu::MakePodGpu(p), StrCat("uid-", id++));
  };
  observe(a, 3);
  observe(b, 1);  // 4th pod: halve. a: 6 -> 3, b: 2 -> 1
  CHECK(w.CountOf(ClassOfPod(a)) == 3);
  CHECK(w.CountOf(ClassOfPod(b)) == 1);
  observe(b, 4);  // b: 1 + 8 = 9 -> 4; a: 3 -> 1
  CHECK(w.CountOf(ClassOfPod(a)) == 1);
  CHECK(w.CountOf(ClassOfPod(b)) == 4);
  observe(b, 4);  // a: 1 -> 0, forgotten; b: 12 -> 6
  CHECK(w.CountOf(ClassOfPod(a)) == 0);
  CHECK(w.CountOf(ClassOfPod(b)) == 6);
  // The model follows at the next look (the 16th pod; see IsLook): only b is left.
  CHECK(w.model().classes().size() == 2);
  observe(b, 4);
  REQUIRE(w.model().classes().size() == 1);
  CHECK(w.model().classes()[0].cpu_milli == 2000);
}

TEST_CASE("learned workload: the model keeps the most frequent classes up to coveragePercent", "[gpu][learning]") {
  // Counts (doubled) a: 12, b: 6, c: 2 of 20.
  const Pod a = MakePod("a", "cpu:1,nvidia.com/gpu:1"), b = MakePod("b", "cpu:1,nvidia.com/gpu:2"),
            c = MakePod("c", "cpu:1");
  auto model_for = [&](std::string_view args) {
    fgd::TargetWorkload w = Learner(args);
    int id = 0;
    for (auto [pod, n] : {std::pair{&a, 6}, std::pair{&b, 3}, std::pair{&c, 1}}) {
      for (int i = 0; i < n; ++i) w.Observe(gpu::MakePodGpu(*pod), StrCat("uid-", id++));
    }
    return w.model().classes();
  };
  // 60%: a alone covers 12/20.
  auto m = model_for("{coveragePercent: 60}");
  REQUIRE(m.size() == 1);
  CHECK(m[0].num_gpu == 1);  // (its weight is the count when it was last rebuilt: a's share is all)
  // 90%: a and b (18/20).
  m = model_for("{coveragePercent: 90}");
  REQUIRE(m.size() == 2);
  CHECK(m[1].num_gpu == 2);
  // 100%: every class.
  CHECK(model_for("{coveragePercent: 100}").size() == 3);
}

// The learned classes of the model (without the whole-node prior) against the counts now: the
// largest difference of a class's share, as a fraction a/b compared exactly.
bool ModelWithinShare(const fgd::TargetWorkload& w, int64_t den) {
  int64_t model_total = 0, count_total = 0;
  for (const gpu::TargetClass& c : w.model().classes()) {
    if (c.node_gpus != 0) continue;
    model_total += c.weight;
    count_total += w.CountOf(c);
  }
  for (const gpu::TargetClass& c : w.model().classes()) {
    if (c.node_gpus != 0) continue;
    const __int128 diff = __int128{c.weight} * count_total - __int128{w.CountOf(c)} * model_total;
    if ((diff < 0 ? -diff : diff) * den > __int128{model_total} * count_total) return false;
  }
  return true;
}

TEST_CASE("learned workload: the model moves only when the mix moved materially", "[gpu][learning]") {
  // Seeded streams over four classes (1, 2, 4, 8 GPUs), each with a random mix that shifts once
  // half way. At every look (each 32nd pod) the model's shares are within 1/50 of the counts'
  // (every class learned: coverage 100%); between looks the model does not change; a stationary
  // mix stops rebuilding (far fewer rebuilds than looks once converged); the shift is followed.
  for (uint64_t seed = 1; seed <= testing::PropertySeeds(200); ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    fgd::TargetWorkload w = Learner("{coveragePercent: 100, learnHalfLife: 2000}");
    auto random_mix = [&] {
      std::vector<int> weights(4);
      for (int& x : weights) x = std::uniform_int_distribution<int>(1, 20)(rng);
      return std::discrete_distribution<int>(weights.begin(), weights.end());
    };
    auto mix = random_mix();
    const int sizes[] = {1, 2, 4, 8};
    int rebuilds_late = 0, looks_late = 0, rebuilds_early = 0;
    std::set<int> seen_sizes;
    for (int i = 1; i <= 12000; ++i) {
      if (i == 6001) mix = random_mix();
      const int gpus = sizes[mix(rng)];
      const bool new_class = seen_sizes.insert(gpus).second;
      const int64_t before = w.version();
      const bool rebuilt = w.Observe(gpu::MakePodGpu(MakePod(StrCat("p", i), StrCat("cpu:1,nvidia.com/gpu:", gpus))),
                                     StrCat("uid-", i));
      REQUIRE(rebuilt == (w.version() != before));
      if (!fgd::TargetWorkload::IsLook(i, new_class)) {
        REQUIRE_FALSE(rebuilt);
        continue;
      }
      if (i <= 32) rebuilds_early += rebuilt;
      REQUIRE(ModelWithinShare(w, fgd::TargetWorkload::kMaterialShareDen));
      if ((i > 3000 && i <= 6000) || i > 9000) {
        ++looks_late;
        rebuilds_late += rebuilt;
      }
    }
    // Converged halves: at most a quarter of the looks rebuild (it was every look before).
    CHECK(rebuilds_late * 4 <= looks_late);
    // The first 32 pods: at most one rebuild per class and per power of two (6), not one per pod.
    CHECK(rebuilds_early <= 4 + 6);
  }
}

TEST_CASE("learned workload: the early looks are the powers of two and each new class", "[gpu][learning]") {
  using fgd::TargetWorkload;
  std::vector<int64_t> looks;
  for (int64_t i = 1; i <= 200; ++i)
    if (TargetWorkload::IsLook(i, false)) looks.push_back(i);
  CHECK(looks == std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 96, 128, 160, 192});
  for (int64_t i = 1; i <= 32; ++i) CHECK(TargetWorkload::IsLook(i, true));
  CHECK_FALSE(TargetWorkload::IsLook(33, true));  // past the first 32, a new class waits for the 32nd
  // A class first seen among the early pods is in the model right after that pod.
  fgd::TargetWorkload w = Learner("{coveragePercent: 100, wholeNodePrior: false}");
  for (int i = 0; i < 4; ++i) w.Observe(gpu::MakePodGpu(MakePod(StrCat("p", i), "cpu:1,nvidia.com/gpu:1")), StrCat("uid-", i));
  REQUIRE(w.Observe(gpu::MakePodGpu(MakePod("p-new", "cpu:1,nvidia.com/gpu:4")), "uid-new"));
  bool has_four = false;
  for (const gpu::TargetClass& c : w.model().classes()) has_four |= c.num_gpu == 4;
  CHECK(has_four);
}

TEST_CASE("learned workload: MateriallyDifferent compares class sets and shares", "[gpu][learning]") {
  auto cls = [](int32_t num_gpu, int64_t weight) {
    return gpu::TargetClass{.cpu_milli = 1000, .gpu_milli = 1000, .num_gpu = num_gpu, .weight = weight};
  };
  using fgd::TargetWorkload;
  // Same classes, shares moved by exactly 2 points (50/100 -> 52/100): not material; 3 points is.
  CHECK_FALSE(TargetWorkload::MateriallyDifferent({cls(1, 52), cls(2, 48)}, {cls(1, 50), cls(2, 50)}));
  CHECK(TargetWorkload::MateriallyDifferent({cls(1, 53), cls(2, 47)}, {cls(1, 50), cls(2, 50)}));
  // Scaled weights, same shares, any order: not material.
  CHECK_FALSE(TargetWorkload::MateriallyDifferent({cls(2, 70), cls(1, 30)}, {cls(1, 3), cls(2, 7)}));
  // A class came or went: material.
  CHECK(TargetWorkload::MateriallyDifferent({cls(1, 50), cls(4, 50)}, {cls(1, 50), cls(2, 50)}));
  CHECK(TargetWorkload::MateriallyDifferent({cls(1, 50)}, {cls(1, 50), cls(2, 1)}));
  CHECK(TargetWorkload::MateriallyDifferent({cls(1, 1)}, {}));
  CHECK_FALSE(TargetWorkload::MateriallyDifferent({}, {}));
}

TEST_CASE("learned workload: the whole-node prior keeps its weight", "[gpu][learning]") {
  fgd::TargetWorkload w = Learner("{learnHalfLife: 50}");
  CHECK(w.SetNodeSizes({8, 4, 8, 0}));
  CHECK_FALSE(w.SetNodeSizes({4, 8}));  // the same set: no rebuild
  // Nothing learned yet: the prior alone, weight 1 per node size.
  REQUIRE(w.model().classes().size() == 2);
  CHECK(w.model().classes()[0].num_gpu == 4);
  CHECK(w.model().classes()[0].node_gpus == 4);
  CHECK(w.model().classes()[1].node_gpus == 8);
  CHECK(w.model().total_weight() == 2);
  // After many small pods (and decay), each node size still weighs as much as all learned
  // classes together.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    const int gpus = std::uniform_int_distribution<int>(0, 2)(rng);
    w.Observe(gpu::MakePodGpu(MakePod(StrCat("p", i), gpus ? StrCat("cpu:1,nvidia.com/gpu:", gpus) : "cpu:1")),
              StrCat("uid-", i));
    int64_t learned = 0, prior4 = 0, prior8 = 0;
    for (const gpu::TargetClass& c : w.model().classes()) {
      if (c.node_gpus == 4) prior4 = c.weight;
      else if (c.node_gpus == 8) prior8 = c.weight;
      else learned += c.weight;
    }
    CAPTURE(i);
    REQUIRE(prior4 == std::max<int64_t>(learned, 1));
    REQUIRE(prior8 == prior4);
  }
  // Configured workloads get no prior.
  fgd::TargetWorkload configured(
      {.classes = {{.cpu_milli = 0, .gpu_milli = 500, .num_gpu = 1, .models = {}, .weight = 1}}});
  CHECK_FALSE(configured.SetNodeSizes({8}));
  CHECK(configured.model().classes().size() == 1);
  // wholeNodePrior: false turns it off.
  fgd::TargetWorkload off = Learner("{wholeNodePrior: false}");
  CHECK_FALSE(off.SetNodeSizes({8}));
  CHECK(off.model().empty());
}

TEST_CASE("FGD device choice: an opted-in fraction fills a shared device before opening one", "[gpu][plugins]") {
  FakeHandle handle;
  tessel_gpu::TesselArgs args;
  args.workload.classes = {{.cpu_milli = 0, .gpu_milli = 1000, .num_gpu = 1, .models = {}, .weight = 1}};
  auto plugin = tessel_gpu::Tessel::New(args, handle);
  REQUIRE(plugin.ok());
  TestNode n("n", "cpu:16,memory:64Gi,nvidia.com/gpu:2", 2);
  n.Add(Frac("x", 300));  // best fit: device 0
  Pod opted = Frac("a", 500);
  opted.meta.annotations["tessel.io/gpu-sharing"] = "allowed";
  CHECK((*plugin)->Evaluate(PodGpuOf(opted), n.info).devices == DeviceList{0});
  // Too big for the shared device: it may open device 1.
  Pod big = Frac("b", 800);
  big.meta.annotations["tessel.io/gpu-sharing"] = "allowed";
  CHECK((*plugin)->Evaluate(PodGpuOf(big), n.info).devices == DeviceList{1});
  // GpuShare's score says the same at node level.
  TestNode fresh("fresh", "cpu:16,memory:64Gi,nvidia.com/gpu:2", 2);
  CHECK(gpu_share::SharingScore(PodGpuOf(opted), n.info) == gpu_share::kSharedInUseScore);
  CHECK(gpu_share::SharingScore(PodGpuOf(opted), fresh.info) == 0);
  CHECK(gpu_share::SharingScore(PodGpuOf(big), n.info) == 0);
}

}  // namespace gpu_plugins_test
}  // namespace tessel
