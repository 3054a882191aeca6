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
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/core_harness.h"
#include "plugins/reservation/reservation.h"
#include "scheduler/core/explain.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/testing/builders.h"

namespace tessel {
namespace reservation_test {

using reservation::Reservation;
using testing::NodeBuilder;
using testing::PodBuilder;

constexpr int64_t kStart = 1'000'000;

std::string Config(int64_t wait_seconds, std::string_view more_args = "") {
  return StrCat(R"(apiVersion: tessel.io/v1alpha1
kind: TesselSchedulerConfiguration
profiles:
- schedulerName: tessel
  pluginConfig:
  - name: Reservation
    args: {waitSeconds: )",
                wait_seconds, more_args, "}\n");
}

// A PodGroup `name` in `ns` of `members` pods asking `gpus` GPUs each, created at `created`
// (compact over `topology_key` if set).
void AddGang(testing::CoreHarness& h, const std::string& name, int members, int gpus, int64_t created,
             const std::string& topology_key = "", const std::string& ns = "default") {
  nlohmann::json group{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                       {"kind", "PodGroup"},
                       {"metadata", {{"name", name}, {"namespace", ns}}},
                       {"spec", {{"minMember", members}}}};
  if (!topology_key.empty()) group["metadata"]["annotations"] = {{"tessel.io/topology-key", topology_key}};
  REQUIRE(h.ApplyGangObject(group).value());
  for (int i = 0; i < members; ++i) {
    Pod m = PodBuilder(StrCat(name, "-", i), ns).Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus)).Created(created).Build();
    m.meta.labels["scheduling.x-k8s.io/pod-group"] = name;
    h.AddPod(std::move(m));
  }
}

Node GpuNode(std::string name, int gpus = 8, std::string pool = "") {
  NodeBuilder b(std::move(name));
  b.Allocatable(StrCat("cpu:64,memory:256Gi,nvidia.com/gpu:", gpus));
  if (!pool.empty()) b.Label("pool", std::move(pool));
  return b.Build();
}

// A Queue "team" for namespace team: flat (`flavors` empty) with `gpus` GPUs, or with one flavor
// per node pool (ResourceFlavors by the label pool), in this order, `gpus` GPUs each.
void TeamQueue(testing::CoreHarness& h, const std::string& gpus, const std::vector<std::string>& flavors = {}) {
  nlohmann::json spec{{"namespaces", {"team"}}};
  if (flavors.empty()) {
    spec["nominalQuota"] = {{"nvidia.com/gpu", gpus}};
  } else {
    nlohmann::json list = nlohmann::json::array();
    for (const std::string& f : flavors) {
      REQUIRE(h.ApplyQueueObject(nlohmann::json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "ResourceFlavor"},
                                                {"metadata", {{"name", f}}}, {"spec", {{"nodeLabels", {{"pool", f}}}}}})
                  .ok());
      list.push_back({{"name", f}, {"resources", {{{"name", "nvidia.com/gpu"}, {"nominalQuota", gpus}}}}});
    }
    spec["resourceGroups"] = {{{"coveredResources", {"nvidia.com/gpu"}}, {"flavors", list}}};
  }
  REQUIRE(h.ApplyQueueObject(nlohmann::json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"},
                                            {"metadata", {{"name", "team"}}}, {"spec", spec}})
              .ok());
}

// Two 8-GPU nodes full of 1-GPU pods; every minute the oldest small pod ends and a new one
// comes. A big pod (8 GPUs) arrives after 30 s.
struct Stream {
  // Node i is labelled pool=pools[i-1] when `pools` is given.
  explicit Stream(int64_t wait_seconds, int nodes = 2, std::string_view args = "",
                  const std::vector<std::string>& pools = {})
      : h({.config_yaml = Config(wait_seconds, args), .start = absl::FromUnixSeconds(kStart)}) {
    for (int n = 1; n <= nodes; ++n) {
      h.AddNode(GpuNode(StrCat("n", n), 8, pools.empty() ? "" : pools[static_cast<size_t>(n - 1)]));
    }
    for (int i = 0; i < 8 * nodes; ++i) Small();
    h.RunUntilIdle();
    Track();
    REQUIRE(running.size() == static_cast<size_t>(8 * nodes));
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
  void Big(const std::string& ns = "default") {
    h.AddPod(PodBuilder("big", ns).Requests("cpu:8,nvidia.com/gpu:8").Created(Now()).Build());
  }
  void Gang(const std::string& name, int members, int gpus, const std::string& topology_key = "",
            const std::string& ns = "default") {
    AddGang(h, name, members, gpus, Now(), topology_key, ns);
  }
  // Notes the binds since the last look.
  void Track() {
    for (; seen < h.binds().size(); ++seen) {
      const auto& [pod, node] = h.binds()[seen];
      bound_at[pod] = {Now(), node};
      if (pod.starts_with("default/small-")) running.push_back(pod);
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
    CHECK(*w.NodeOf("default/big") == reserved->nodes.front().node);
    const int64_t placed_at = w.bound_at["default/big"].first;
    // Backfill: while the node was reserved, small pods landed on the other node, none on it.
    int elsewhere = 0;
    for (const auto& [pod, at] : w.bound_at) {
      if (pod == "default/big" || at.first < reserved_at || at.first > placed_at) continue;
      CHECK(at.second != reserved->nodes.front().node);
      if (at.second != reserved->nodes.front().node) ++elsewhere;
    }
    CHECK(elsewhere > 0);
    // Placed: released (a small pod that has waited since may hold the next one).
    for (const auto& [level, held] : w.plugin().held()) CHECK(held.holder != "default/big");
    const reservation::ReservationFigures f = w.plugin().figures();
    CHECK(f.released.at(std::string(reservation::kPlaced)) == 1);
    CHECK(f.active == static_cast<int64_t>(w.plugin().held().size()));
    bool announced = false;
    for (const std::string& e : w.h.api.events) {
      announced |= e.starts_with(StrCat("default/big Normal Reserved: node ", reserved->nodes.front().node, " is reserved for the pod"));
    }
    CHECK(announced);
  }
}

// A stream whose big pod (of namespace `ns`) holds a reservation; returns the reserved node.
std::string Reserve(Stream& w, const std::string& ns = "default") {
  w.h.clock.Advance(absl::Seconds(30));
  w.Big(ns);
  w.h.RunUntilIdle();
  for (int m = 0; m < 10 && w.plugin().held().empty(); ++m) w.Minute();
  REQUIRE(w.plugin().held().size() == 1);
  return w.plugin().held().begin()->second.nodes.front().node;
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
  for (const auto& [level, held] : w.plugin().held()) CHECK(held.nodes.front().node != node);
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
  SECTION("the filter: a pod that takes nothing the holder lacks passes, a GPU pod does not "
          "unless nominated there") {
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
    // The same pod nominated to the node passes: moves or a preemption freed that room for it.
    Pod nominated = gpu;
    nominated.nominated_node_name = node;
    CycleState nominated_state;
    REQUIRE(r.PreFilter(nominated_state, nominated).ok());
    CHECK(r.Filter(nominated_state, nominated, *n).ok());
    CycleState holder_state;
    CHECK(r.PreFilter(holder_state, PodBuilder("big").Requests("cpu:8,nvidia.com/gpu:8").Build()).IsSkip());
  }
  CHECK(w.plugin().held().size() == 1);
}

TEST_CASE("reservation: a starving gang gets a node per member, and small pods keep landing elsewhere",
          "[gang]") {
  // Three 8-GPU nodes kept full by the stream of 1-GPU pods; a gang of two 8-GPU members.
  SECTION("without reservation it starves") {
    Stream w(0, 3);
    w.Gang("pair", 2, 8);
    w.h.RunUntilIdle();
    for (int m = 0; m < 60; ++m) w.Minute();
    CHECK_FALSE(w.NodeOf("default/pair-0").has_value());
    CHECK_FALSE(w.NodeOf("default/pair-1").has_value());
    CHECK(w.plugin().figures().made == 0);
  }
  SECTION("with reservation both members run, on the reserved nodes") {
    Stream w(120, 3);
    w.h.clock.Advance(absl::Seconds(30));
    w.Gang("pair", 2, 8);
    w.h.RunUntilIdle();
    const int64_t arrived = w.Now();
    std::optional<reservation::Held> reserved;
    int64_t reserved_at = 0;
    for (int m = 0; m < 60 && !(w.NodeOf("default/pair-0") && w.NodeOf("default/pair-1")); ++m) {
      w.Minute();
      if (!reserved.has_value() && !w.plugin().held().empty()) {
        reserved = w.plugin().held().begin()->second;
        reserved_at = w.Now();
      }
    }
    REQUIRE(reserved.has_value());
    CHECK(reserved->gang);
    CHECK(reserved->holder == "podgroup:default/pair");
    CHECK(reserved_at - arrived >= 120);
    REQUIRE(reserved->nodes.size() == 2);  // one 8-GPU member per node
    std::set<std::string> nodes;
    for (const reservation::ReservedNode& r : reserved->nodes) {
      nodes.insert(r.node);
      CHECK(r.pods.size() == 1);
      CHECK(r.need.Get(gpu::kRoomGpuUnits) == 8 * gpu::kMilliPerGpu);  // the room hint's units
    }
    REQUIRE(w.NodeOf("default/pair-0").has_value());
    REQUIRE(w.NodeOf("default/pair-1").has_value());
    CHECK(nodes == std::set<std::string>{*w.NodeOf("default/pair-0"), *w.NodeOf("default/pair-1")});
    // Backfill: meanwhile small pods landed on the third node only.
    const int64_t placed_at = std::max(w.bound_at["default/pair-0"].first, w.bound_at["default/pair-1"].first);
    int elsewhere = 0;
    for (const auto& [pod, at] : w.bound_at) {
      if (!pod.starts_with("default/small-") || at.first < reserved_at || at.first > placed_at) continue;
      CHECK_FALSE(nodes.contains(at.second));
      elsewhere += !nodes.contains(at.second);
    }
    CHECK(elsewhere > 0);
    for (const auto& [level, held] : w.plugin().held()) CHECK(held.holder != "podgroup:default/pair");
    CHECK(w.plugin().figures().released.at(std::string(reservation::kPlaced)) == 1);
    bool announced = false;
    for (const std::string& e : w.h.api.events) {
      announced |= e.starts_with("default/pair-0 Normal Reserved: nodes ") &&
                   e.find(" are reserved for the gang after it waited ") != std::string::npos;
    }
    CHECK(announced);
  }
}

TEST_CASE("reservation: a gang's nodes are the closest to fitting it, within one domain when compact",
          "[gang]") {
  // Four 8-GPU nodes in two racks, partly used by pods that stay: n1 and n2 lack 2 GPUs for a
  // whole-node member, n3 lacks 5, n4 lacks 6.
  for (const bool compact : {false, true}) {
    INFO("compact " << compact);
    testing::CoreHarness h({.config_yaml = Config(120), .start = absl::FromUnixSeconds(kStart)});
    const std::map<std::string, std::pair<std::string, int>> layout{
        {"n1", {"a", 2}}, {"n2", {"b", 2}}, {"n3", {"a", 5}}, {"n4", {"b", 6}}};
    for (const auto& [name, rack_used] : layout) {
      h.AddNode(NodeBuilder(name).Label("rack", rack_used.first).Label("host", name).Allocatable("cpu:64,memory:256Gi,nvidia.com/gpu:8").Build());
      h.AddPod(PodBuilder(StrCat("on-", name)).Requests(StrCat("cpu:1,nvidia.com/gpu:", rack_used.second))
                   .Selector("host", name).Build());
    }
    h.RunUntilIdle();
    REQUIRE(h.binds().size() == 4);
    AddGang(h, "ring", 2, 8, kStart, compact ? "rack" : "");
    h.RunUntilIdle();
    auto* plugin = dynamic_cast<Reservation*>(h.s->FrameworkFor("tessel")->FindPlugin(Reservation::kName));
    REQUIRE(plugin != nullptr);
    for (int retry = 0; retry < 3 && plugin->held().empty(); ++retry) {
      h.clock.Advance(absl::Minutes(6));  // past the queue's 5-minute flush
      h.RunUntilIdle();
    }
    REQUIRE(plugin->held().size() == 1);
    std::set<std::string> nodes;
    for (const reservation::ReservedNode& r : plugin->held().begin()->second.nodes) nodes.insert(r.node);
    // Closest: n1 and n2 (2 + 2 short); compact: rack a's n1 and n3 (2 + 5 short, against rack
    // b's 2 + 6).
    CHECK(nodes == (compact ? std::set<std::string>{"n1", "n3"} : std::set<std::string>{"n1", "n2"}));
    // Another pod of the same priority is kept off n1 (it would take a GPU the gang lacks).
    h.AddPod(PodBuilder("small").Requests("cpu:1,nvidia.com/gpu:1").Selector("host", "n1").Build());
    h.RunUntilIdle();
    CHECK(h.binds().size() == 4);
    const Explanation e = Explain(*h.s, "default/small");
    bool named = false;
    for (const NodeReasonGroup& g : e.reasons) {
      named |= g.reason.starts_with("node n1 is reserved for gang podgroup:default/ring (waiting since ");
    }
    CHECK(named);
  }
}

TEST_CASE("reservation: a gang its quota holds back reserves nothing", "[gang]") {
  for (const bool over_quota : {false, true}) {
    INFO("over quota " << over_quota);
    Stream w(120, 3, ", minPodGpus: 2");
    // team's queue: 8 GPUs, or 16 (the gang's two 8-GPU members).
    REQUIRE(w.h.ApplyQueueObject(nlohmann::json{
                    {"apiVersion", "tessel.io/v1alpha1"},
                    {"kind", "Queue"},
                    {"metadata", {{"name", "team"}}},
                    {"spec", {{"namespaces", {"team"}}, {"nominalQuota", {{"nvidia.com/gpu", over_quota ? "8" : "16"}}}}}})
                .ok());
    w.Gang("pair", 2, 8, "", "team");
    w.h.RunUntilIdle();
    for (int m = 0; m < 20; ++m) w.Minute();
    // Room would not help a gang over its quota: no node is held for it.
    CHECK((w.plugin().figures().made > 0) == !over_quota);
  }
}

TEST_CASE("reservation: minPodGpus keeps small pods from holding reservations") {
  for (const int64_t min_pod_gpus : {0, 2}) {
    INFO("minPodGpus " << min_pod_gpus);
    Stream w(120, 2, StrCat(", minPodGpus: ", min_pod_gpus));
    // A 1-GPU pod that also asks for more cpu than a node with a free GPU has left (the stream's
    // pods take one cpu each) fails every attempt, for a reason room would cure.
    w.h.AddPod(PodBuilder("one").Requests("cpu:60,nvidia.com/gpu:1").Created(w.Now()).Build());
    w.h.RunUntilIdle();
    bool one_held = false;
    for (int m = 0; m < 15; ++m) {
      w.Minute();
      for (const auto& [level, held] : w.plugin().held()) one_held |= held.holder == "default/one";
    }
    // Without the floor 1-GPU pods (the stream's too) hold reservations; with it, none does.
    CHECK(one_held == (min_pod_gpus == 0));
    CHECK((w.plugin().figures().made > 0) == (min_pod_gpus == 0));
    if (min_pod_gpus == 0) continue;
    CHECK_FALSE(w.NodeOf("default/one").has_value());
    // The big pod still gets one.
    w.Big();
    w.h.RunUntilIdle();
    for (int m = 0; m < 15 && w.plugin().held().empty(); ++m) w.Minute();
    REQUIRE(w.plugin().held().size() == 1);
    CHECK(w.plugin().held().begin()->second.holder == "default/big");
  }
}

TEST_CASE("reservation: a holder its quota then holds back lets go of the node (QuotaExceeded)") {
  // The team's queue has 8 GPUs: the big pod's reservation is made while it is within them.
  Stream w(120, 2, ", minPodGpus: 2");
  TeamQueue(w.h, "8");
  const std::string node = Reserve(w, "team");
  REQUIRE(w.plugin().held().begin()->second.holder == "team/big");
  // Another pod of the team (more important than the stream, so that it passes the reserved
  // node too) takes a GPU of the queue: the big pod is over its quota now.
  w.h.AddPod(PodBuilder("other", "team").Requests("cpu:1,nvidia.com/gpu:1").Priority(100).Created(w.Now()).Build());
  w.h.RunUntilIdle();
  for (int m = 0; m < 3 && !w.NodeOf("team/other").has_value(); ++m) w.Minute();
  REQUIRE(w.NodeOf("team/other").has_value());
  // Its next failed attempt (at the latest the queue's 5-minute retry: the GPU one pod frees
  // does not wake it), rejected by the quota, releases the node instead of renewing it.
  for (int m = 0; m < 6 && !w.plugin().held().empty(); ++m) w.Minute();
  CHECK(w.plugin().held().empty());
  const reservation::ReservationFigures f = w.plugin().figures();
  CHECK(f.made == 1);
  CHECK(f.released.contains(std::string(reservation::kQuotaExceeded)));
  CHECK_FALSE(f.released.contains(std::string(reservation::kExpired)));
  // The stream's pods land on the node again (those it held back, at their next retry), and
  // nothing is reserved for the big pod while its quota holds it back.
  const int64_t released_by = w.Now();
  for (int m = 0; m < 10; ++m) w.Minute();
  bool landed = false;
  for (const auto& [pod, at] : w.bound_at) landed |= at.first > released_by && at.second == node;
  CHECK(landed);
  CHECK(w.plugin().figures().made == 1);
  CHECK_FALSE(w.NodeOf("team/big").has_value());
}

TEST_CASE("reservation: a pod of a queue with two flavors holds one node, of its first flavor, "
          "and runs there", "[flavor]") {
  // n1 is the queue's first flavor (reserved), n2 its second (on-demand); both kept full.
  Stream w(120, 2, ", minPodGpus: 2", {"reserved", "on-demand"});
  TeamQueue(w.h, "16", {"reserved", "on-demand"});
  w.h.clock.Advance(absl::Seconds(30));
  w.Big("team");
  w.h.RunUntilIdle();
  for (int m = 0; m < 60 && !w.NodeOf("team/big").has_value(); ++m) {
    w.Minute();
    for (const auto& [level, held] : w.plugin().held()) CHECK(held.nodes.front().node == "n1");
  }
  REQUIRE(w.NodeOf("team/big").has_value());
  CHECK(*w.NodeOf("team/big") == "n1");
  const reservation::ReservationFigures f = w.plugin().figures();
  CHECK(f.made == 1);
  CHECK(f.released.at(std::string(reservation::kPlaced)) == 1);
  CHECK_FALSE(f.released.contains(std::string(reservation::kNoFit)));
  int reserved_events = 0;
  for (const std::string& e : w.h.api.events) reserved_events += e.starts_with("team/big Normal Reserved: ");
  CHECK(reserved_events == 1);
}

}  // namespace reservation_test
}  // namespace tessel
