// The gang planner: all-or-nothing plans against a snapshot, cumulative reservations, whole
// nodes filled, whole GPUs per member, compact placement, and a seeded property over random
// clusters and gang mixes.
#include <catch2/catch.hpp>

#include <random>

#include "scheduler/testing/builders.h"
#include "fake_handle.h"
#include "plugins/registry.h"
#include "scheduler/gang/planner.h"

namespace tessel::gang {
namespace planner_test {

using testing::NodeBuilder;
using testing::PodBuilder;

struct World {
  testing::FakeHandle handle;
  Registry registry = InTreeRegistry();
  std::unique_ptr<Framework> fw;
  World() {
    auto made = Framework::New(registry, ResolveProfile(DefaultProfile(), DefaultProfile()),
                               handle, FrameworkOptions{.parallelism = 1});
    REQUIRE(made.ok());
    fw = *std::move(made);
  }
  void GpuNodes(int n, int gpus, std::string prefix = "gpu-", std::string rack = "") {
    for (int i = 0; i < n; ++i) {
      NodeBuilder b(StrCat(prefix, i));
      b.Allocatable(StrCat("cpu:64,memory:512Gi,nvidia.com/gpu:", gpus));
      if (!rack.empty()) b.Label("rack", rack);
      handle.AddNode(b.Build());
    }
  }
  std::vector<PodRef> Members(std::string_view gang, int n, std::string_view requests) {
    std::vector<PodRef> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(std::make_shared<const Pod>(
          PodBuilder(StrCat(gang, "-", i)).Requests(requests).Created(100 + i).Build()));
    }
    return out;
  }
  GangPlan Plan(std::string_view gang, std::vector<PodRef> members, int32_t min,
                std::string topology_key = "") {
    return PlanGang(PlanInput{.framework = fw.get(),
                              .snapshot = &handle.snapshot(),
                              .members = std::move(members),
                              .min_to_place = min,
                              .min_member = min,
                              .gang = StrCat("PodGroup default/", gang),
                              .topology_key = std::move(topology_key)});
  }
  // Accounts a plan in the cache, as the core does once it binds.
  void Apply(const GangPlan& plan) {
    for (const MemberPlacement& m : plan.placements) handle.AddPod(m.assumed);
  }
  NodeInfo Node(const std::string& name) { return *handle.snapshot().Get(name); }
};

std::map<std::string, int> CountByNode(const GangPlan& plan) {
  std::map<std::string, int> out;
  for (const MemberPlacement& m : plan.placements) ++out[m.node];
  return out;
}

TEST_CASE("two 4x4-GPU gangs on three 8-GPU nodes: one placed whole, the other not at all",
          "[gang][planner]") {
  World w;
  w.GpuNodes(3, 8);
  GangPlan a = w.Plan("a", w.Members("a", 4, "cpu:1,nvidia.com/gpu:4"), 4);
  REQUIRE(a.feasible);
  REQUIRE(a.placements.size() == 4);
  CHECK(CountByNode(a) == std::map<std::string, int>{{"gpu-0", 2}, {"gpu-1", 2}});
  w.Apply(a);

  GangPlan b = w.Plan("b", w.Members("b", 4, "cpu:1,nvidia.com/gpu:4"), 4);
  CHECK_FALSE(b.feasible);
  CHECK(b.placements.empty());
  CHECK(b.message == "PodGroup default/b needs 4 × 4 GPUs; 1 node can host 2 members");
  // Nothing was reserved: the leftover node is still whole.
  CHECK(w.Node("gpu-2").gpus().whole_free_devices() == 8);
  CHECK(w.Node("gpu-2").pods().empty());
}

TEST_CASE("whole-GPU members take whole devices and fill one node rather than spread",
          "[gang][planner]") {
  World w;
  w.GpuNodes(3, 8);
  GangPlan plan = w.Plan("ring", w.Members("ring", 8, "cpu:1,nvidia.com/gpu:1"), 8);
  REQUIRE(plan.feasible);
  CHECK(plan.nodes_used == 1);
  CHECK(CountByNode(plan).size() == 1);
  w.Apply(plan);
  const NodeInfo used = w.Node(plan.placements.front().node);
  CHECK(used.gpus().whole_free_devices() == 0);
  CHECK(used.gpus().unplaced_milli() == 0);
  CHECK(used.gpus().CheckInvariants().empty());
  // Each member holds a device of its own.
  std::set<int32_t> devices;
  for (const PodRef& p : used.pods()) {
    for (int32_t d : used.gpus().DevicesOf(p.get())) CHECK(devices.insert(d).second);
  }
  CHECK(devices.size() == 8);
}

TEST_CASE("a gang prefers the tightest node that takes it whole", "[gang][planner]") {
  World w;
  w.GpuNodes(2, 8);
  // gpu-1 has 4 GPUs in use: a 2x2-GPU gang fits there and leaves gpu-0 whole.
  w.handle.AddPod(PodBuilder("busy").Requests("nvidia.com/gpu:4").Node("gpu-1").Build());
  GangPlan plan = w.Plan("small", w.Members("small", 2, "cpu:1,nvidia.com/gpu:2"), 2);
  REQUIRE(plan.feasible);
  CHECK(CountByNode(plan) == std::map<std::string, int>{{"gpu-1", 2}});
}

TEST_CASE("minMember smaller than the group: at least minMember, and every member that fits",
          "[gang][planner]") {
  World w;
  w.GpuNodes(2, 8);
  auto members = w.Members("elastic", 6, "cpu:1,nvidia.com/gpu:4");
  GangPlan plan = w.Plan("elastic", members, 3);
  REQUIRE(plan.feasible);
  CHECK(plan.placements.size() == 4);  // 16 GPUs host 4 of the 6; minMember 3 is met

  SECTION("not enough for minMember: nothing") {
    World small;
    small.GpuNodes(1, 8);
    GangPlan none = small.Plan("elastic", members, 3);
    CHECK_FALSE(none.feasible);
    CHECK(none.placements.empty());
    CHECK(none.message == "PodGroup default/elastic needs 3 × 4 GPUs; 1 node can host 2 members");
  }
}

TEST_CASE("a gang that can never fit is refused with the fit error", "[gang][planner]") {
  World w;
  w.GpuNodes(3, 8);
  GangPlan plan = w.Plan("huge", w.Members("huge", 2, "cpu:1,nvidia.com/gpu:16"), 2);
  CHECK_FALSE(plan.feasible);
  CHECK(plan.placements.empty());
  CHECK(plan.message ==
        "PodGroup default/huge needs 2 × 16 GPUs; no node can host one: 0/3 nodes are available: "
        "3 Insufficient nvidia.com/gpu.");
  CHECK(std::find(plan.rejecting_plugins.begin(), plan.rejecting_plugins.end(), "GpuShare") !=
        plan.rejecting_plugins.end());
}

TEST_CASE("mixed shapes: the bigger members are placed first", "[gang][planner]") {
  World w;
  w.GpuNodes(2, 8);
  std::vector<PodRef> members = w.Members("mix-small", 4, "cpu:1,nvidia.com/gpu:1");
  for (const PodRef& p : w.Members("mix-big", 3, "cpu:1,nvidia.com/gpu:4")) members.push_back(p);
  // 3x4 + 4x1 = 16 GPUs on 16: only a plan that seats the 4-GPU members first fits.
  GangPlan plan = w.Plan("mix", members, 7);
  REQUIRE(plan.feasible);
  CHECK(plan.placements.size() == 7);
  w.Apply(plan);
  for (const char* n : {"gpu-0", "gpu-1"}) {
    CHECK(w.Node(n).gpus().whole_free_devices() == 0);
    CHECK(w.Node(n).gpus().unplaced_milli() == 0);
  }
}

TEST_CASE("compact placement: one domain, the fullest that fits; too-small ones reported",
          "[gang][planner]") {
  World w;
  w.GpuNodes(2, 8, "a-", "rack-a");
  w.GpuNodes(3, 8, "b-", "rack-b");
  w.GpuNodes(3, 8, "c-", "rack-c");
  w.handle.AddPod(PodBuilder("busy-a").Requests("nvidia.com/gpu:4").Node("a-0").Build());
  w.handle.AddPod(PodBuilder("busy-b").Requests("nvidia.com/gpu:2").Node("b-0").Build());
  // 4 x 4 GPUs: rack-a has 12 GPUs free (3 members), rack-b 22 and rack-c 24 both fit; rack-b
  // is left fuller.
  GangPlan plan = w.Plan("zone", w.Members("zone", 4, "cpu:1,nvidia.com/gpu:4"), 4, "rack");
  REQUIRE(plan.feasible);
  CHECK(plan.domain == "rack-b");
  for (const MemberPlacement& m : plan.placements) CHECK(m.node.rfind("b-", 0) == 0);
  REQUIRE(plan.too_small.size() == 1);
  CHECK(plan.too_small[0].domain == "rack-a");
  CHECK(plan.too_small[0].members == 3);

  SECTION("no domain big enough") {
    GangPlan big = w.Plan("zone", w.Members("zone", 7, "cpu:1,nvidia.com/gpu:4"), 7, "rack");
    CHECK_FALSE(big.feasible);
    CHECK(big.placements.empty());
    CHECK(big.message ==
          "PodGroup default/zone needs 7 × 4 GPUs within one rack domain; every domain is too "
          "small: rack-a (3 members), rack-b (5 members), rack-c (6 members)");
  }
  SECTION("an unknown label") {
    GangPlan none = w.Plan("zone", w.Members("zone", 1, "cpu:1"), 1, "no-such-label");
    CHECK_FALSE(none.feasible);
    CHECK(none.message ==
          "PodGroup default/zone needs 1 × cpu 1 within one no-such-label domain; no node has "
          "the label no-such-label");
  }
}

// Property: over random clusters (node sizes, some GPUs already in use) and random gangs
// (member count, minMember, shape), a plan is all-or-nothing and sound: feasible plans place at
// least minMember and fit when applied (no overcommit, every GPU member on whole devices);
// infeasible ones place nothing; the snapshot is never touched.
TEST_CASE("property: plans are all-or-nothing and never overcommit", "[gang][planner][property]") {
  std::mt19937_64 rng(20261123);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int feasible = 0, infeasible = 0;
  for (int round = 0; round < 300; ++round) {
    World w;
    const int nodes = pick(1, 6);
    for (int i = 0; i < nodes; ++i) {
      const int gpus = std::vector<int>{0, 2, 4, 8}[pick(0, 3)];
      w.handle.AddNode(NodeBuilder(StrCat("n-", i))
                           .Allocatable(StrCat("cpu:", pick(4, 32), ",memory:64Gi,nvidia.com/gpu:", gpus))
                           .Label("rack", StrCat("r", i % 2))
                           .Build());
      if (gpus > 0 && pick(0, 1) == 1) {
        w.handle.AddPod(PodBuilder(StrCat("busy-", i))
                            .Requests(StrCat("cpu:1,nvidia.com/gpu:", pick(1, gpus)))
                            .Node(StrCat("n-", i))
                            .Build());
      }
    }
    std::vector<PodRef> members;
    const int shapes = pick(1, 2);
    for (int s = 0; s < shapes; ++s) {
      const int gpus = pick(0, 4);
      const std::string req = gpus > 0 ? StrCat("cpu:", pick(1, 4), ",nvidia.com/gpu:", gpus)
                                       : StrCat("cpu:", pick(1, 8));
      for (const PodRef& p : w.Members(StrCat("g", s), pick(1, 6), req)) members.push_back(p);
    }
    const int32_t min = pick(1, static_cast<int>(members.size()));
    const std::string topology = pick(0, 3) == 0 ? "rack" : "";
    std::map<std::string, Resources> before;
    for (const NodeInfo* n : w.handle.snapshot().nodes()) before[n->name()] = n->requested();

    GangPlan plan = w.Plan("p", members, min, topology);

    for (const NodeInfo* n : w.handle.snapshot().nodes()) REQUIRE(n->requested() == before[n->name()]);
    if (!plan.feasible) {
      ++infeasible;
      REQUIRE(plan.placements.empty());
      REQUIRE_FALSE(plan.message.empty());
      continue;
    }
    ++feasible;
    REQUIRE(static_cast<int32_t>(plan.placements.size()) >= min);
    REQUIRE(plan.placements.size() <= members.size());
    std::set<std::string> seen;
    for (const MemberPlacement& m : plan.placements) REQUIRE(seen.insert(m.pod->Key()).second);
    if (!topology.empty()) {
      std::set<std::string> racks;
      for (const MemberPlacement& m : plan.placements) {
        racks.insert(w.Node(m.node).node()->meta.labels.at("rack"));
      }
      REQUIRE(racks.size() == 1);
    }
    w.Apply(plan);
    for (const NodeInfo* n : w.handle.snapshot().nodes()) {
      INFO("round " << round << " node " << n->name());
      REQUIRE(n->requested().milli_cpu <= n->allocatable().milli_cpu);
      REQUIRE(n->gpus().unplaced_milli() == 0);
      REQUIRE(n->gpus().CheckInvariants().empty());
    }
  }
  // The generator exercises both outcomes.
  CHECK(feasible > 50);
  CHECK(infeasible > 50);
}

}  // namespace planner_test
}  // namespace tessel::gang
