// Cache lifecycles (assume, finish binding, confirm, forget, expire) and incremental snapshots.
// After every step, each node satisfies requested + free == allocatable with neither negative.
#include <catch2/catch.hpp>

#include "scheduler/testing/builders.h"
#include "scheduler/state/cache.h"

namespace tessel {
namespace cache_test {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Res;

void CheckInvariant(const Cache& cache) {
  for (const std::string& name : cache.NodeNames()) {
    auto info = cache.GetNodeInfo(name);
    REQUIRE(info.has_value());
    Resources sum = info->requested();
    REQUIRE(sum.Add(info->Free()).ok());
    CAPTURE(name, info->requested().DebugString(), info->allocatable().DebugString());
    CHECK(sum == info->allocatable());
    for (const auto& [res, amount] : info->Free().Entries()) CHECK(amount >= 0);
    for (const auto& [res, amount] : info->requested().Entries()) CHECK(amount >= 0);
  }
}

Pod Bound(std::string name, std::string node, std::string_view req) {
  return PodBuilder(std::move(name)).Requests(req).Node(std::move(node)).Build();
}

TEST_CASE("assume, finish binding and confirm keep the accounting exact", "[cache]") {
  ManualClock clock;
  Cache cache(&clock);
  cache.AddOrUpdateNode(NodeBuilder("n1").Allocatable("cpu:8,memory:32Gi,nvidia.com/gpu:4").Build());
  CheckInvariant(cache);

  REQUIRE(cache.AssumePod(Bound("a", "n1", "cpu:2,nvidia.com/gpu:1")).ok());
  CHECK(cache.IsAssumed("default/a"));
  CHECK(cache.GetNodeInfo("n1")->requested().Get("nvidia.com/gpu") == 1000);
  CheckInvariant(cache);

  SECTION("a bind failure forgets the pod") {
    REQUIRE(cache.ForgetPod("default/a").ok());
    CHECK_FALSE(cache.NodeOf("default/a").has_value());
    CHECK(cache.GetNodeInfo("n1")->requested().IsZero());
    CheckInvariant(cache);
  }
  SECTION("the informer confirms the bound pod") {
    REQUIRE(cache.FinishBinding("default/a").ok());
    cache.AddOrUpdatePod(Bound("a", "n1", "cpu:2,nvidia.com/gpu:1"));
    CHECK_FALSE(cache.IsAssumed("default/a"));
    CHECK(cache.GetNodeInfo("n1")->requested().Get("nvidia.com/gpu") == 1000);  // not twice
    CHECK_FALSE(cache.ForgetPod("default/a").ok());  // confirmed pods cannot be forgotten
    CheckInvariant(cache);
  }
  SECTION("an unconfirmed binding is held however long the informer lags") {
    REQUIRE(cache.FinishBinding("default/a").ok());
    clock.Advance(absl::Hours(1));
    CHECK(cache.IsAssumed("default/a"));
    CHECK(cache.GetNodeInfo("n1")->requested().Get("nvidia.com/gpu") == 1000);
    // A late unbound copy (the watch is behind the bind) releases nothing either.
    cache.AddOrUpdatePod(PodBuilder("a").Requests("cpu:2,nvidia.com/gpu:1").Build());
    CHECK(cache.IsAssumed("default/a"));
    CHECK(cache.GetNodeInfo("n1")->requested().Get("nvidia.com/gpu") == 1000);
    // Only the delete does.
    cache.RemovePod("default/a");
    CHECK(cache.GetNodeInfo("n1")->requested().IsZero());
    CheckInvariant(cache);
  }
  SECTION("the pod finishes and releases its resources") {
    Pod done = Bound("a", "n1", "cpu:2,nvidia.com/gpu:1");
    done.phase = PodPhase::kSucceeded;
    cache.AddOrUpdatePod(done);
    CHECK(cache.GetNodeInfo("n1")->requested().IsZero());
    CheckInvariant(cache);
  }
  SECTION("assuming twice or onto an unknown node fails") {
    CHECK_FALSE(cache.AssumePod(Bound("a", "n1", "cpu:1")).ok());
    CHECK_FALSE(cache.AssumePod(Bound("b", "nowhere", "cpu:1")).ok());
    CheckInvariant(cache);
  }
}

Pod WithUid(Pod pod, std::string uid) {
  pod.meta.uid = std::move(uid);
  return pod;
}

TEST_CASE("identity is the UID: a same-name pod is another pod", "[cache]") {
  ManualClock clock;
  Cache cache(&clock);
  cache.AddOrUpdateNode(NodeBuilder("n1").Allocatable("cpu:8,memory:32Gi,nvidia.com/gpu:8").Build());
  cache.AddOrUpdateNode(NodeBuilder("n2").Allocatable("cpu:8,memory:32Gi,nvidia.com/gpu:8").Build());
  REQUIRE(cache.AssumePod(WithUid(Bound("a", "n1", "nvidia.com/gpu:1"), "old")).ok());

  SECTION("a late delete of the old pod leaves the new one alone") {
    cache.RemovePod("default/a", "old");
    REQUIRE(cache.AssumePod(WithUid(Bound("a", "n2", "nvidia.com/gpu:2"), "new")).ok());
    cache.RemovePod("default/a", "old");
    CHECK(cache.NodeOf("default/a") == "n2");
    CHECK_FALSE(cache.ForgetPod("default/a", "old").ok());  // the old bind's failure
    CHECK_FALSE(cache.FinishBinding("default/a", "old").ok());
    CHECK(cache.IsAssumed("default/a", "new"));
    CHECK(cache.GetNodeInfo("n2")->requested().Get("nvidia.com/gpu") == 2000);
    CHECK(cache.Held("default/a")->uid == "new");
  }
  SECTION("the informer shows the name under a new UID: the old charge is released") {
    cache.AddOrUpdatePod(WithUid(PodBuilder("a").Requests("nvidia.com/gpu:2").Build(), "new"));
    CHECK_FALSE(cache.NodeOf("default/a").has_value());
    CHECK(cache.GetNodeInfo("n1")->requested().IsZero());
    cache.AddOrUpdatePod(WithUid(Bound("a", "n2", "nvidia.com/gpu:2"), "new"));
    CHECK(cache.GetNodeInfo("n2")->requested().Get("nvidia.com/gpu") == 2000);
    CHECK_FALSE(cache.IsAssumed("default/a"));
  }
  SECTION("an unbound copy of a confirmed pod is stale and releases nothing") {
    cache.AddOrUpdatePod(WithUid(Bound("a", "n1", "nvidia.com/gpu:1"), "old"));
    cache.AddOrUpdatePod(WithUid(PodBuilder("a").Requests("nvidia.com/gpu:1").Build(), "old"));
    CHECK(cache.NodeOf("default/a") == "n1");
    CHECK(cache.GetNodeInfo("n1")->requested().Get("nvidia.com/gpu") == 1000);
  }
  CheckInvariant(cache);
  CHECK(cache.CheckNodesFit().ok());
}

TEST_CASE("CheckNodesFit names every overcommitted node", "[cache]") {
  ManualClock clock;
  Cache cache(&clock);
  cache.AddOrUpdateNode(NodeBuilder("n1").Allocatable("cpu:8,memory:32Gi,nvidia.com/gpu:2").Build());
  cache.AddOrUpdatePod(Bound("a", "n1", "nvidia.com/gpu:2"));
  CHECK(cache.CheckNodesFit().ok());
  cache.AddOrUpdatePod(Bound("b", "n1", "nvidia.com/gpu:1"));
  const absl::Status st = cache.CheckNodesFit();
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(std::string(st.message()), Catch::Contains("n1: pods request"));
  cache.RemovePod("default/b");
  CHECK(cache.CheckNodesFit().ok());
}

TEST_CASE("pods and nodes arrive in any order", "[cache]") {
  ManualClock clock;
  Cache cache(&clock);
  cache.AddOrUpdatePod(Bound("early", "n1", "cpu:1"));
  CHECK(cache.NodeCount() == 0);  // a ghost node holds the pod but is not schedulable
  cache.AddOrUpdateNode(NodeBuilder("n1").Allocatable("cpu:4").Build());
  CHECK(cache.GetNodeInfo("n1")->requested().milli_cpu == 1000);
  CheckInvariant(cache);
  cache.RemoveNode("n1");
  CHECK(cache.NodeCount() == 0);
  cache.AddOrUpdateNode(NodeBuilder("n1").Allocatable("cpu:4").Build());
  CHECK(cache.GetNodeInfo("n1")->requested().milli_cpu == 1000);  // not lost, not doubled
  cache.RemovePod("default/early");
  CHECK(cache.GetNodeInfo("n1")->requested().IsZero());
  CheckInvariant(cache);
  // A pod moving between nodes (informer update) is accounted once, on the new node.
  cache.AddOrUpdateNode(NodeBuilder("n2").Allocatable("cpu:4").Build());
  cache.AddOrUpdatePod(Bound("p", "n1", "cpu:1"));
  cache.AddOrUpdatePod(Bound("p", "n2", "cpu:1"));
  CHECK(cache.GetNodeInfo("n1")->requested().milli_cpu == 0);
  CHECK(cache.GetNodeInfo("n2")->requested().milli_cpu == 1000);
  CheckInvariant(cache);
}

TEST_CASE("snapshots are refreshed incrementally by generation", "[cache][snapshot]") {
  ManualClock clock;
  Cache cache(&clock);
  for (const char* n : {"c", "a", "b"}) cache.AddOrUpdateNode(NodeBuilder(n).Allocatable("cpu:4").Build());
  Snapshot snap;
  cache.UpdateSnapshot(snap);
  REQUIRE(snap.size() == 3);
  CHECK(snap.nodes()[0]->name() == "a");  // sorted by name
  CHECK(snap.nodes()[2]->name() == "c");
  const int64_t gen_a = snap.Get("a")->generation();
  const NodeInfo* b_before = snap.Get("b");

  cache.AddOrUpdatePod(Bound("p", "b", "cpu:1"));
  cache.UpdateSnapshot(snap);
  CHECK(snap.Get("a")->generation() == gen_a);  // untouched node not copied again
  CHECK(snap.Get("b") == b_before);             // same slot, refreshed in place
  CHECK(snap.Get("b")->requested().milli_cpu == 1000);

  // The snapshot is a copy: later cache changes do not show until the next refresh.
  cache.AddOrUpdatePod(Bound("q", "b", "cpu:1"));
  CHECK(snap.Get("b")->requested().milli_cpu == 1000);

  cache.RemoveNode("c");
  cache.AddOrUpdateNode(NodeBuilder("d").Allocatable("cpu:4").Build());
  cache.UpdateSnapshot(snap);
  REQUIRE(snap.size() == 3);
  CHECK(snap.Get("c") == nullptr);
  CHECK(snap.nodes()[2]->name() == "d");
  CHECK(snap.Get("b")->requested().milli_cpu == 2000);
}

}  // namespace cache_test
}  // namespace tessel
