// The what-if layer (scheduler/framework/what_if.h) every way of making room plans on. A seeded
// property drives random plans (place, evict, move, checkpoint, roll back) and compares each
// node the plan shows with an independent model (pods by key, GPUs held), and the snapshot
// underneath with what it was: a plan never changes the snapshot, and a rollback restores every
// node exactly, checkpoints nesting (also at one mark). Then Replay (a pod's PreFilter state in step with the plan: anti-affinity to a
// pod the plan placed, lifted by a rollback) and Fits counting the pods nominated to a node.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "fake_handle.h"
#include "plugins/registry.h"
#include "scheduler/framework/what_if.h"
#include "scheduler/testing/builders.h"

namespace tessel {
namespace what_if_test {

using testing::FakeHandle;
using testing::NodeBuilder;
using testing::PodBuilder;

constexpr int kNodes = 4;
constexpr int64_t kGpusPerNode = 8;

// The model: per node, the pods on it and their whole GPUs.
using Model = std::map<std::string, std::map<std::string, int64_t>>;

std::string NodeName(int i) { return StrCat("n", i); }

PodRef MakePod(const std::string& name, int64_t gpus, const std::string& node = "") {
  PodBuilder b(name, "ns");
  b.Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus));
  if (!node.empty()) b.Node(node);
  return std::make_shared<const Pod>(b.Build());
}

// What the plan shows of a node, in the model's terms.
std::map<std::string, int64_t> Shown(const NodeInfo& node) {
  std::map<std::string, int64_t> out;
  for (const PodRef& p : node.pods()) out[p->Key()] = p->requests.Get("nvidia.com/gpu") / 1000;
  return out;
}

void CheckAgainst(const WhatIf& plan, const Model& model) {
  for (const auto& [name, pods] : model) {
    CAPTURE(name);
    const NodeInfo* node = plan.Get(name);
    REQUIRE(node != nullptr);
    CHECK(Shown(*node) == pods);
    int64_t held = 0;
    for (const auto& [key, gpus] : pods) held += gpus;
    CHECK(node->gpus().total_free_milli() == (kGpusPerNode - held) * 1000);
  }
}

TEST_CASE("seeded: a what-if's nodes follow its changes, roll back exactly, and never touch the "
          "snapshot",
          "[what_if][property]") {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    FakeHandle handle;
    Model model;
    for (int i = 0; i < kNodes; ++i) {
      handle.AddNode(NodeBuilder(NodeName(i)).Allocatable(StrCat("cpu:64,memory:256Gi,nvidia.com/gpu:", kGpusPerNode)).Build());
      model[NodeName(i)];
    }
    std::map<std::string, PodRef> running;  // key -> the pod as the snapshot or plan holds it
    for (int k = 0; k < 6; ++k) {
      const std::string node = NodeName(pick(0, kNodes - 1));
      int64_t held = 0;
      for (const auto& [key, gpus] : model[node]) held += gpus;
      const int64_t gpus = pick(1, 3);
      if (held + gpus > kGpusPerNode) continue;
      PodRef p = MakePod(StrCat("r", k), gpus, node);
      handle.AddPod(*p);
      model[node][p->Key()] = gpus;
      running[p->Key()] = p;
    }
    const Snapshot& snapshot = handle.snapshot();
    const Model before = model;

    WhatIf plan(&snapshot);
    std::vector<std::pair<WhatIf::Mark, Model>> checkpoints;
    int next_pod = 0;
    for (int step = 0; step < 40; ++step) {
      const int op = pick(0, 9);
      if (op <= 2) {  // place a new pod where it fits
        const std::string node = NodeName(pick(0, kNodes - 1));
        int64_t held = 0;
        for (const auto& [key, gpus] : model[node]) held += gpus;
        const int64_t gpus = pick(1, 3);
        if (held + gpus > kGpusPerNode) continue;
        PodRef placed = plan.Place(*MakePod(StrCat("new", next_pod++), gpus), node);
        CHECK(placed->node_name == node);
        model[node][placed->Key()] = gpus;
        running[placed->Key()] = placed;
      } else if (op <= 4 && !running.empty()) {  // evict a pod the plan holds
        auto it = std::next(running.begin(), pick(0, static_cast<int>(running.size()) - 1));
        const PodRef victim = it->second;
        CHECK(plan.Evict(victim));
        CHECK_FALSE(plan.Evict(victim));  // not there any more
        model[victim->node_name].erase(victim->Key());
        running.erase(it);
      } else if (op <= 6 && !running.empty()) {  // move a pod where it fits
        auto it = std::next(running.begin(), pick(0, static_cast<int>(running.size()) - 1));
        const PodRef pod = it->second;
        const std::string to = NodeName(pick(0, kNodes - 1));
        const int64_t gpus = model[pod->node_name].at(pod->Key());
        int64_t held = 0;
        for (const auto& [key, g] : model[to]) held += g;
        if (to == pod->node_name || held + gpus > kGpusPerNode) continue;
        PodRef moved = plan.Move(pod, to);
        CHECK(moved->node_name == to);
        CHECK(moved->nominated_node_name.empty());
        model[pod->node_name].erase(pod->Key());
        model[to][pod->Key()] = gpus;
        it->second = moved;
      } else if (op == 7) {
        checkpoints.emplace_back(plan.Checkpoint(), model);
      } else if (op == 8 && !checkpoints.empty()) {
        const size_t back = pick(0, static_cast<int>(checkpoints.size()) - 1);
        plan.Rollback(checkpoints[back].first);
        model = checkpoints[back].second;
        checkpoints.resize(back);
        // The pods the model holds, as the plan holds them now.
        running.clear();
        for (const auto& [name, pods] : model) {
          for (const PodRef& p : plan.Get(name)->pods()) running[p->Key()] = p;
        }
      }
      CheckAgainst(plan, model);
      for (const NodeInfo* n : snapshot.nodes()) {
        CAPTURE(n->name());
        CHECK(Shown(*n) == before.at(n->name()));
      }
    }
    plan.Rollback(0);
    CheckAgainst(plan, before);
    CHECK(plan.changes().empty());
  }
}

TEST_CASE("checkpoints nest, also at one mark: an inner rollback leaves the outer one whole",
          "[what_if]") {
  FakeHandle handle;
  handle.AddNode(NodeBuilder("n0").Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8").Build());
  WhatIf plan(&handle.snapshot());
  plan.Place(*MakePod("first", 2), "n0");  // n0 copied before the checkpoints
  const WhatIf::Mark outer = plan.Checkpoint();
  for (int attempt = 0; attempt < 3; ++attempt) {  // tries, each under its own checkpoint
    CAPTURE(attempt);
    const WhatIf::Mark inner = plan.Checkpoint();
    CHECK(inner == outer);  // nothing changed between them
    plan.Place(*MakePod(StrCat("try", attempt), 3), "n0");
    CHECK(plan.Get("n0")->gpus().total_free_milli() == 3000);
    plan.Rollback(inner);
    CHECK(plan.Get("n0")->gpus().total_free_milli() == 6000);
  }
  plan.Place(*MakePod("kept", 1), "n0");  // changed again under the outer checkpoint
  plan.Rollback(outer);
  CHECK(Shown(*plan.Get("n0")) == std::map<std::string, int64_t>{{"ns/first", 2}});
  CHECK(plan.Get("n0")->gpus().total_free_milli() == 6000);
}

struct Profile {
  FakeHandle handle;
  Registry registry = InTreeRegistry();
  std::unique_ptr<Framework> fw;
  Profile() {
    for (int i = 0; i < 2; ++i) {
      handle.AddNode(NodeBuilder(NodeName(i)).Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8").Label("kubernetes.io/hostname", NodeName(i)).Build());
    }
    auto made = Framework::New(registry, DefaultProfile(), handle);
    REQUIRE(made.ok());
    fw = *std::move(made);
  }
};

TEST_CASE("Replay brings a pod's PreFilter state in step with the plan; a rollback undoes it",
          "[what_if]") {
  Profile p;
  Pod loner = PodBuilder("loner", "ns").Requests("cpu:1").Build();
  loner.pod_anti_affinity.required.push_back(PodAffinityTerm{
      .label_selector = LabelSelector{.match_labels = {{"app", "noisy"}}}, .topology_key = "kubernetes.io/hostname"});
  Pod noisy = PodBuilder("noisy", "ns").Requests("cpu:1").Build();
  noisy.meta.labels["app"] = "noisy";

  CycleState fresh;
  REQUIRE(p.fw->RunPreFilter(fresh, loner).ok());
  WhatIf plan(&p.handle.snapshot());
  const WhatIf::Mark start = plan.Checkpoint();
  plan.Place(noisy, "n0");
  CycleState told = fresh.Clone();
  REQUIRE(plan.Replay(*p.fw, told, loner).ok());
  CHECK(plan.Fits(*p.fw, told, loner, *plan.Get("n0")).IsRejected());
  CHECK(plan.Fits(*p.fw, told, loner, *plan.Get("n1")).ok());
  plan.Rollback(start);
  CycleState again = fresh.Clone();
  REQUIRE(plan.Replay(*p.fw, again, loner).ok());
  CHECK(plan.Fits(*p.fw, again, loner, *plan.Get("n0")).ok());
}

TEST_CASE("Fits counts the pods nominated to a node that are at least as important", "[what_if]") {
  Profile p;
  NominatedPodMap nominated;
  Pod waiting = PodBuilder("waiting", "ns").Requests("cpu:1,nvidia.com/gpu:6").Priority(100).Build();
  waiting.nominated_node_name = "n0";
  nominated["n0"].push_back(std::make_shared<const Pod>(waiting));
  WhatIf plan(&p.handle.snapshot(), {.nominated = &nominated});
  for (const auto& [priority, fits] : std::vector<std::pair<int32_t, bool>>{{100, false}, {50, false}, {200, true}}) {
    CAPTURE(priority);
    const Pod asking = PodBuilder("asking", "ns").Requests("cpu:1,nvidia.com/gpu:4").Priority(priority).Build();
    CycleState state;
    REQUIRE(p.fw->RunPreFilter(state, asking).ok());
    CHECK(plan.Fits(*p.fw, state, asking, *plan.Get("n0")).ok() == fits);
    CHECK(plan.Fits(*p.fw, state, asking, *plan.Get("n1")).ok());
  }
}

}  // namespace what_if_test
}  // namespace tessel
