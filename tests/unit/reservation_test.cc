// Reservation (plugins/reservation): a big pod that a stream of small pods keeps starving gets
// a node reserved after it waited `waitSeconds`, and the node once it drained, while the small
// pods keep landing on the other node (backfill); without the plugin it never runs. The
// reservation ends when the pod is placed, when it stops failing (deleted) and when the node can
// no longer hold it; a more important pod, and one that leaves the holder's need covered, still
// land on the reserved node; explain and the figures show it. On the real core (CoreHarness),
// with a virtual clock.
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <optional>
#include <string>

#include "harness/core_harness.h"
#include "plugins/reservation/reservation.h"
#include "scheduler/core/explain.h"
#include "scheduler/testing/builders.h"

namespace tessel {
namespace {

using reservation::Reservation;
using testing::NodeBuilder;
using testing::PodBuilder;

constexpr int64_t kStart = 1'000'000;

std::string Config(int64_t wait_seconds) {
  return StrCat(R"(apiVersion: tessel.io/v1alpha1
kind: TesselSchedulerConfiguration
profiles:
- schedulerName: tessel
  pluginConfig:
  - name: Reservation
    args: {waitSeconds: )",
                wait_seconds, "}\n");
}

Node GpuNode(std::string name, int gpus = 8) {
  return NodeBuilder(std::move(name)).Allocatable(StrCat("cpu:64,memory:256Gi,nvidia.com/gpu:", gpus)).Build();
}

// Two 8-GPU nodes full of 1-GPU pods; every minute the oldest small pod ends and a new one
// comes. A big pod (8 GPUs) arrives after 30 s.
struct Stream {
  explicit Stream(int64_t wait_seconds)
      : h({.config_yaml = Config(wait_seconds), .start = absl::FromUnixSeconds(kStart)}) {
    h.AddNode(GpuNode("n1"));
    h.AddNode(GpuNode("n2"));
    for (int i = 0; i < 16; ++i) Small();
    h.RunUntilIdle();
    Track();
    REQUIRE(running.size() == 16);
  }
  Reservation& plugin() {
    auto* p = dynamic_cast<Reservation*>(h.s->FrameworkFor("tessel")->FindPlugin(Reservation::kName));
    REQUIRE(p != nullptr);
    return *p;
  }
  int64_t Now() const { return absl::ToUnixSeconds(h.clock.Now()); }
  void Small(int32_t priority = 0, std::string_view requests = "cpu:1,nvidia.com/gpu:1") {
    h.AddPod(PodBuilder(StrCat("small-", next++)).Requests(requests).Priority(priority).Created(Now()).Build());
  }
  void Big() { h.AddPod(PodBuilder("big").Requests("cpu:8,nvidia.com/gpu:8").Created(Now()).Build()); }
  // Notes the binds since the last look.
  void Track() {
    for (; seen < h.binds().size(); ++seen) {
      const auto& [pod, node] = h.binds()[seen];
      bound_at[pod] = {Now(), node};
      if (pod != "default/big") running.push_back(pod);
    }
  }
  // One minute: the oldest small pod ends, a new one comes.
  void Minute() {
    h.clock.Advance(absl::Seconds(60));
    if (!running.empty()) {
      h.s->OnPodDelete(running.front());
      running.pop_front();
    }
    Small();
    h.RunUntilIdle();
    Track();
  }
  std::optional<std::string> NodeOf(const std::string& pod) const {
    auto it = bound_at.find(pod);
    return it == bound_at.end() ? std::nullopt : std::optional<std::string>(it->second.second);
  }

  testing::CoreHarness h;
  int next = 0;
  size_t seen = 0;
  std::deque<std::string> running;  // small pods on nodes, oldest first
  std::map<std::string, std::pair<int64_t, std::string>> bound_at;  // pod -> (time, node)
};

TEST_CASE("reservation: a starving big pod gets its node, and small pods keep landing elsewhere") {
  SECTION("without reservation (waitSeconds 0) it starves") {
    Stream w(0);
    w.h.clock.Advance(absl::Seconds(30));
    w.Big();
    w.h.RunUntilIdle();
    for (int m = 0; m < 60; ++m) w.Minute();
    CHECK_FALSE(w.NodeOf("default/big").has_value());
    CHECK(w.plugin().held().empty());
    CHECK(w.plugin().figures().made == 0);
  }
  SECTION("with reservation it runs once its node drained") {
    Stream w(120);
    w.h.clock.Advance(absl::Seconds(30));
    w.Big();
    w.h.RunUntilIdle();
    const int64_t arrived = w.Now();
    std::optional<reservation::Held> reserved;
    int64_t reserved_at = 0;
    for (int m = 0; m < 60 && !w.NodeOf("default/big").has_value(); ++m) {
      w.Minute();
      if (!reserved.has_value() && !w.plugin().held().empty()) {
        reserved = w.plugin().held().begin()->second;
        reserved_at = w.Now();
      }
    }
    REQUIRE(reserved.has_value());
    CHECK(reserved->holder == "default/big");
    CHECK(reserved_at - arrived >= 120);
    CHECK(absl::ToUnixSeconds(reserved->since) == arrived);
    REQUIRE(w.NodeOf("default/big").has_value());
    CHECK(*w.NodeOf("default/big") == reserved->node);
    const int64_t placed_at = w.bound_at["default/big"].first;
    // Backfill: while the node was reserved, small pods landed on the other node, none on it.
    int elsewhere = 0;
    for (const auto& [pod, at] : w.bound_at) {
      if (pod == "default/big" || at.first < reserved_at || at.first > placed_at) continue;
      CHECK(at.second != reserved->node);
      if (at.second != reserved->node) ++elsewhere;
    }
    CHECK(elsewhere > 0);
    // Placed: released (a small pod that has waited since may hold the next one).
    for (const auto& [level, held] : w.plugin().held()) CHECK(held.holder != "default/big");
    const reservation::ReservationFigures f = w.plugin().figures();
    CHECK(f.released.at(std::string(reservation::kPlaced)) == 1);
    CHECK(f.active == static_cast<int64_t>(w.plugin().held().size()));
    bool announced = false;
    for (const std::string& e : w.h.api.events) {
      announced |= e.starts_with(StrCat("default/big Normal Reserved: node ", reserved->node, " is reserved for the pod"));
    }
    CHECK(announced);
  }
}

// A stream whose big pod holds a reservation; returns the reserved node.
std::string Reserve(Stream& w) {
  w.h.clock.Advance(absl::Seconds(30));
  w.Big();
  w.h.RunUntilIdle();
  for (int m = 0; m < 10 && w.plugin().held().empty(); ++m) w.Minute();
  REQUIRE(w.plugin().held().size() == 1);
  return w.plugin().held().begin()->second.node;
}

TEST_CASE("reservation: released when the holder is deleted (its lease lapses)") {
  Stream w(120);
  const std::string node = Reserve(w);
  w.h.s->OnPodDelete("default/big");
  // Within the lease the node stays reserved; the small pods it blocks wait.
  w.Minute();
  CHECK(w.plugin().held().size() == 1);
  for (int m = 0; m < 11; ++m) w.Minute();
  CHECK(w.plugin().held().empty());
  CHECK(w.plugin().figures().released.at(std::string(reservation::kExpired)) == 1);
  // Small pods land on the node again.
  const int64_t released_by = w.Now();
  for (int m = 0; m < 10; ++m) w.Minute();
  bool landed = false;
  for (const auto& [pod, at] : w.bound_at) landed |= at.first > released_by && at.second == node;
  CHECK(landed);
}

TEST_CASE("reservation: released when the node can no longer hold the pod") {
  Stream w(120);
  const std::string node = Reserve(w);
  SECTION("the node shrank") { w.h.s->OnNodeUpdate(GpuNode(node, 4)); }
  SECTION("the node left") { w.h.s->OnNodeDelete(node); }
  w.Minute();
  CHECK(w.plugin().figures().released.at(std::string(reservation::kNoFit)) == 1);
  // The holder may have moved on to the other node at its next failure; never this one.
  for (const auto& [level, held] : w.plugin().held()) CHECK(held.node != node);
}

TEST_CASE("reservation: what may still land on the reserved node, and explain") {
  Stream w(120);
  const std::string node = Reserve(w);
  // Room on the reserved node that the holder still lacks: one GPU freed there.
  std::string on_node;
  for (const auto& p : w.running) {
    if (w.NodeOf(p) == node) on_node = p;
  }
  REQUIRE_FALSE(on_node.empty());
  // Keep the other node full, so that the reserved node is the only one with room.
  w.h.s->OnPodDelete(on_node);
  std::erase(w.running, on_node);
  SECTION("a small pod of the same priority waits, and explain names the holder") {
    w.Small();
    const std::string key = StrCat("default/small-", w.next - 1);
    w.h.RunUntilIdle();
    w.Track();
    CHECK_FALSE(w.NodeOf(key).has_value());
    const Explanation e = Explain(*w.h.s, key);
    bool named = false;
    for (const NodeReasonGroup& g : e.reasons) {
      if (g.nodes == std::vector<std::string>{node}) {
        CHECK(g.reason.starts_with(StrCat("node ", node, " is reserved for default/big (waiting since ")));
        named = true;
      }
    }
    CHECK(named);
  }
  SECTION("a more important pod is not held back") {
    w.Small(100);
    w.h.RunUntilIdle();
    w.Track();
    CHECK(w.NodeOf(StrCat("default/small-", w.next - 1)) == node);
  }
  SECTION("the filter: a pod that takes nothing the holder lacks passes, a GPU pod does not") {
    Reservation& r = w.plugin();
    const NodeInfo* n = w.h.s->snapshot().Get(node);
    REQUIRE(n != nullptr);
    CycleState cpu_state;
    const Pod cpu = PodBuilder("cpu-only").Requests("cpu:1,memory:1Gi").Build();
    REQUIRE(r.PreFilter(cpu_state, cpu).ok());
    CHECK(r.Filter(cpu_state, cpu, *n).ok());
    CycleState gpu_state;
    const Pod gpu = PodBuilder("gpu").Requests("cpu:1,nvidia.com/gpu:1").Build();
    REQUIRE(r.PreFilter(gpu_state, gpu).ok());
    CHECK(r.Filter(gpu_state, gpu, *n).code() == Code::kUnschedulable);
    CycleState holder_state;
    CHECK(r.PreFilter(holder_state, PodBuilder("big").Requests("cpu:8,nvidia.com/gpu:8").Build()).IsSkip());
  }
  CHECK(w.plugin().held().size() == 1);
}

}  // namespace
}  // namespace tessel
