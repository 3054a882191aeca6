// PodTopologySpread: the skew rule with minDomains and the node inclusion policies, scoring with
// kube-scheduler's log weights, default constraints, args, and a seeded property: placing a
// stream of pods never lets the skew exceed maxSkew, and the plugin accepts exactly the nodes an
// independent count says keep the skew within maxSkew.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "plugins/pod_topology_spread/pod_topology_spread.h"
#include "tests/unit/pod_rules_harness.h"

namespace tessel::pod_topology_spread {
namespace pod_topology_spread_test {

using testing::FakeHandle;
using testing::LabeledPod;
using testing::MatchLabels;
using testing::NodeBuilder;
using When = TopologySpreadConstraint::WhenUnsatisfiable;

const std::string kSkew = "Unschedulable: " + std::string(kReason);
const std::string kMissing = "UnschedulableAndUnresolvable: " + std::string(kMissingLabelReason);

TopologySpreadConstraint ZoneSpread(int32_t skew, When when = When::kDoNotSchedule) {
  return {.max_skew = skew, .topology_key = std::string(kZoneKey), .when_unsatisfiable = when,
          .label_selector = MatchLabels({{"app", "web"}})};
}

// za-1, za-2 in zone a; zb-1 in zone b; zc-1 in zone c (tainted NoSchedule); nz without a zone.
// Two web pods in a, one in b; pods that must not count: another namespace, terminating, other app.
void Cluster(FakeHandle& h) {
  const std::pair<const char*, const char*> nodes[] = {{"za-1", "a"}, {"za-2", "a"}, {"zb-1", "b"}, {"zc-1", "c"}, {"nz", ""}};
  for (auto [name, zone] : nodes) {
    NodeBuilder b(name);
    b.Label(std::string(kHostnameKey), name);
    if (*zone) b.Label(std::string(kZoneKey), zone);
    if (std::string(zone) == "c") b.Taint("dedicated", "x", TaintEffect::kNoSchedule);
    h.AddNode(b.Build());
  }
  h.AddPod(LabeledPod("w1", {{"app", "web"}}, "za-1"));
  h.AddPod(LabeledPod("w2", {{"app", "web"}}, "za-2"));
  h.AddPod(LabeledPod("w3", {{"app", "web"}}, "zb-1"));
  h.AddPod(LabeledPod("elsewhere", {{"app", "web"}}, "zc-1", "other"));
  Pod leaving = LabeledPod("leaving", {{"app", "web"}}, "zc-1");
  leaving.meta.deletion_timestamp = absl::FromUnixSeconds(1);
  h.AddPod(leaving);
  h.AddPod(LabeledPod("db", {{"app", "db"}}, "zc-1"));
}

TEST_CASE("PodTopologySpread Filter applies the skew rule", "[plugins][podtopologyspread]") {
  struct Case {
    std::string name;
    Pod pod;
    std::map<std::string, std::string> want;
  };
  auto web = [](auto edit) {
    Pod p = LabeledPod("new", {{"app", "web"}});
    edit(p);
    return p;
  };
  const std::vector<Case> cases = {
      {"no constraints and no controller: skip", LabeledPod("new", {{"app", "web"}}),
       {{"za-1", "skip"}, {"za-2", "skip"}, {"zb-1", "skip"}, {"zc-1", "skip"}, {"nz", "skip"}}},
      {"maxSkew 1: counts a=2 b=1 c=0, so only c", web([](Pod& p) { p.topology_spread_constraints = {ZoneSpread(1)}; }),
       {{"za-1", kSkew}, {"za-2", kSkew}, {"zb-1", kSkew}, {"zc-1", "ok"}, {"nz", kMissing}}},
      {"maxSkew 2 admits b", web([](Pod& p) { p.topology_spread_constraints = {ZoneSpread(2)}; }),
       {{"za-1", kSkew}, {"za-2", kSkew}, {"zb-1", "ok"}, {"zc-1", "ok"}, {"nz", kMissing}}},
      {"a pod its selector does not select adds nothing to the skew",
       [] { Pod p = LabeledPod("new", {{"app", "other"}}); p.topology_spread_constraints = {ZoneSpread(1)}; return p; }(),
       {{"za-1", kSkew}, {"za-2", kSkew}, {"zb-1", "ok"}, {"zc-1", "ok"}, {"nz", kMissing}}},
      {"nodeTaintsPolicy Honor drops the tainted zone c: min is b's 1",
       web([](Pod& p) {
         p.topology_spread_constraints = {ZoneSpread(1)};
         p.topology_spread_constraints[0].node_taints_policy = NodeInclusionPolicy::kHonor;
       }),
       {{"za-1", kSkew}, {"za-2", kSkew}, {"zb-1", "ok"}, {"zc-1", "ok"}, {"nz", kMissing}}},
      {"minDomains above the eligible domains makes the minimum 0",
       web([](Pod& p) {
         p.topology_spread_constraints = {ZoneSpread(1)};
         p.topology_spread_constraints[0].node_taints_policy = NodeInclusionPolicy::kHonor;
         p.topology_spread_constraints[0].min_domains = 3;
       }),
       {{"za-1", kSkew}, {"za-2", kSkew}, {"zb-1", kSkew}, {"zc-1", "ok"}, {"nz", kMissing}}},
      {"nodeAffinityPolicy Honor (default) counts only zones the pod may use",
       web([](Pod& p) {
         p.topology_spread_constraints = {ZoneSpread(1)};
         p.node_affinity.required = std::vector<NodeSelectorTerm>{NodeSelectorTerm{.match_expressions = {{.key = std::string(kZoneKey), .op = NodeSelectorRequirement::Operator::kIn, .values = {"a", "b"}}}}};
       }),
       {{"za-1", kSkew}, {"za-2", kSkew}, {"zb-1", "ok"}, {"zc-1", "ok"}, {"nz", kMissing}}},
      {"nodeAffinityPolicy Ignore counts zone c too",
       web([](Pod& p) {
         p.topology_spread_constraints = {ZoneSpread(1)};
         p.topology_spread_constraints[0].node_affinity_policy = NodeInclusionPolicy::kIgnore;
         p.node_affinity.required = std::vector<NodeSelectorTerm>{NodeSelectorTerm{.match_expressions = {{.key = std::string(kZoneKey), .op = NodeSelectorRequirement::Operator::kIn, .values = {"a", "b"}}}}};
       }),
       {{"za-1", kSkew}, {"za-2", kSkew}, {"zb-1", kSkew}, {"zc-1", "ok"}, {"nz", kMissing}}},
      {"hostname spread: each node is a domain (nz has no zone but a hostname)",
       web([](Pod& p) {
         p.topology_spread_constraints = {ZoneSpread(1)};
         p.topology_spread_constraints[0].topology_key = std::string(kHostnameKey);
       }),
       {{"za-1", kSkew}, {"za-2", kSkew}, {"zb-1", kSkew}, {"zc-1", "ok"}, {"nz", "ok"}}},
      {"ScheduleAnyway constraints do not filter",
       web([](Pod& p) { p.topology_spread_constraints = {ZoneSpread(1, When::kScheduleAnyway)}; }),
       {{"za-1", "skip"}, {"za-2", "skip"}, {"zb-1", "skip"}, {"zc-1", "skip"}, {"nz", "skip"}}},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      FakeHandle h;
      Cluster(h);
      auto plugin = PodTopologySpread::New({}, h);
      REQUIRE(plugin.ok());
      CHECK(testing::RunFilter(**plugin, h, c.pod).by_node == c.want);
    }
  }
}

TEST_CASE("PodTopologySpread PreFilter state answers what-if questions", "[plugins][podtopologyspread]") {
  FakeHandle h;
  Cluster(h);
  auto plugin = PodTopologySpread::New({}, h);
  REQUIRE(plugin.ok());
  Pod pod = LabeledPod("new", {{"app", "web"}});
  pod.topology_spread_constraints = {ZoneSpread(1)};
  pod.topology_spread_constraints[0].node_taints_policy = NodeInclusionPolicy::kHonor;
  CycleState state;
  REQUIRE((*plugin)->PreFilter(state, pod).ok());
  const NodeInfo* za1 = h.snapshot().Get("za-1");
  CHECK((*plugin)->Filter(state, pod, *za1).IsRejected());  // a=2 b=1: 2 + 1 - 1 > 1
  CycleState what_if = state.Clone();
  auto* s = const_cast<PreFilterState*>(what_if.Read<PreFilterState>(PodTopologySpread::kName));
  s->UpdateWithPod(pod, *za1->FindPod("default/w1"), *za1->node(), -1);  // a=1 b=1
  CHECK((*plugin)->Filter(what_if, pod, *za1).ok());
  CHECK((*plugin)->Filter(state, pod, *za1).IsRejected());
}

TEST_CASE("PodTopologySpread Filter without its PreFilter computes the same answer", "[plugins][podtopologyspread]") {
  FakeHandle h;
  Cluster(h);
  auto plugin = PodTopologySpread::New({}, h);
  REQUIRE(plugin.ok());
  Pod pod = LabeledPod("new", {{"app", "web"}});
  pod.topology_spread_constraints = {ZoneSpread(2)};
  const CycleState empty;
  std::map<std::string, std::string> without;
  for (const NodeInfo* n : h.snapshot().nodes()) without[n->name()] = testing::Describe((*plugin)->Filter(empty, pod, *n));
  CHECK(without == testing::RunFilter(**plugin, h, pod).by_node);
  CHECK(without.at("zb-1") == "ok");
  CHECK(without.at("za-1") == kSkew);
}

TEST_CASE("LnMicro is ln in integers", "[plugins][podtopologyspread]") {
  CHECK(LnMicro(1) == 0);
  CHECK(LnMicro(2) == 693147);
  CHECK(LnMicro(5) == 1609438);
  for (int64_t n = 2; n < 20000; n += 7) {
    CAPTURE(n);
    CHECK(std::llabs(LnMicro(n) - std::llround(std::log(static_cast<double>(n)) * 1e6)) <= 1);
  }
}

TEST_CASE("PodTopologySpread Score prefers emptier domains", "[plugins][podtopologyspread]") {
  FakeHandle h;
  Cluster(h);
  auto plugin = PodTopologySpread::New({}, h);
  REQUIRE(plugin.ok());
  SECTION("ScheduleAnyway zone spread: nodes without the key are ignored (0)") {
    Pod pod = LabeledPod("new", {{"app", "web"}});
    pod.topology_spread_constraints = {ZoneSpread(1, When::kScheduleAnyway)};
    // 3 zones: weight ln 5; raw a = round(2 * 1.609) = 3, b = 2, c = 0; 100 * (3 + 0 - s) / 3.
    CHECK(testing::RunScore(**plugin, h, pod) ==
          std::map<std::string, int64_t>{{"za-1", 0}, {"za-2", 0}, {"zb-1", 33}, {"zc-1", 100}, {"nz", 0}});
  }
  SECTION("system defaults spread a ReplicaSet's pods by hostname and zone") {
    auto owned = [](std::string name, std::string node, std::string uid) {
      Pod p = LabeledPod(std::move(name), {}, std::move(node));
      p.meta.owner_references = {{.kind = "ReplicaSet", .name = "rs", .uid = std::move(uid), .controller = true}};
      return p;
    };
    h.AddPod(owned("r1", "za-1", "rs-1"));
    h.AddPod(owned("r2", "za-1", "rs-1"));
    h.AddPod(owned("r3", "zb-1", "rs-1"));
    h.AddPod(owned("other-rs", "zc-1", "rs-2"));
    // hostname (maxSkew 3, 5 nodes: ln 7) + zone (maxSkew 5, 3 zones: ln 5); nz has no zone
    // but is still spread by hostname:
    //   za-1: 2*1.946 + 2 + 2*1.609 + 4 = 13.1 -> 13   za-2: 0 + 2 + 3.2 + 4 = 9.2 -> 9
    //   zb-1: 1.946 + 2 + 1.609 + 4 = 9.6 -> 10         zc-1: 2 + 0 + 4 = 6    nz: 2
    // normalised 100 * (13 + 2 - s) / 13.
    CHECK(testing::RunScore(**plugin, h, owned("new", "", "rs-1")) ==
          std::map<std::string, int64_t>{{"za-1", 15}, {"za-2", 46}, {"zb-1", 38}, {"zc-1", 69}, {"nz", 100}});
    CHECK(testing::RunScore(**plugin, h, LabeledPod("loose", {})).empty());  // no controller
  }
}

TEST_CASE("PodTopologySpread args", "[plugins][podtopologyspread]") {
  FakeHandle h;
  Cluster(h);
  SECTION("List defaults replace the system ones") {
    auto plugin = PodTopologySpread::New(*PodTopologySpread::ParseArgs(YAML::Load(R"({defaultingType: List, defaultConstraints: [
        {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]})")), h);
    REQUIRE(plugin.ok());
    Pod pod = LabeledPod("new", {});
    pod.meta.owner_references = {{.kind = "StatefulSet", .name = "ss", .uid = "ss-1", .controller = true}};
    auto constraints = (*plugin)->ConstraintsFor(pod, When::kDoNotSchedule);
    REQUIRE(constraints.size() == 1);
    CHECK(constraints[0].max_skew == 1);
    CHECK(constraints[0].controller_uid == "ss-1");
    CHECK((*plugin)->ConstraintsFor(pod, When::kScheduleAnyway).empty());
  }
  SECTION("errors name the field") {
    struct Bad {
      std::string yaml, error;
    };
    for (const Bad& b : std::vector<Bad>{
             {"{defaultingType: Sometimes}",
              "PodTopologySpread: args.defaultingType: unknown value \"Sometimes\" (want System or List)"},
             {"{defaultConstraints: [{maxSkew: 1, topologyKey: k, whenUnsatisfiable: DoNotSchedule}]}",
              "PodTopologySpread: args.defaultConstraints: must be empty with defaultingType System (use List)"},
             {"{defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: k, whenUnsatisfiable: Never}]}",
              "PodTopologySpread: args.defaultConstraints[0].whenUnsatisfiable: unknown value \"Never\" (want "
              "DoNotSchedule or ScheduleAnyway)"},
             {"{defaultingType: List, defaultConstraints: [{maxSkew: 0, topologyKey: k, whenUnsatisfiable: DoNotSchedule}]}",
              "PodTopologySpread: args.defaultConstraints[0].maxSkew: want an integer in 1..2147483647, got \"0\""},
         }) {
      CAPTURE(b.yaml);
      CHECK(PodTopologySpread::ParseArgs(YAML::Load(b.yaml)).status().message() == b.error);
    }
  }
}

// Property: a seeded stream of pods spread by zone with maxSkew s (DoNotSchedule), over zones
// whose nodes fill up (maxPods). Each pod goes to a random node the plugin accepts among those
// with room. The plugin must accept exactly the nodes with room whose zone keeps
// count + 1 - min <= s (min over the eligible zones, 0 while fewer than minDomains), and the
// skew (max - min over eligible zones) never exceeds s.
TEST_CASE("PodTopologySpread keeps the skew within maxSkew (seeded property)", "[plugins][podtopologyspread][property]") {
  int placed_total = 0, refused_total = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    FakeHandle h;
    auto plugin = PodTopologySpread::New({}, h);
    REQUIRE(plugin.ok());
    const int zones = uniform(1, 4);
    const int32_t max_skew = uniform(1, 3);
    const int32_t min_domains = uniform(0, 1) ? uniform(1, 5) : 1;
    std::map<std::string, std::string> zone_of;
    std::map<std::string, int> room;
    std::map<std::string, int64_t> count;  // the test's own count per zone
    for (int z = 0; z < zones; ++z) {
      const std::string zone = "z" + std::to_string(z);
      count[zone] = 0;
      for (int k = uniform(1, 3); k > 0; --k) {
        const std::string name = zone + "-n" + std::to_string(k);
        h.AddNode(NodeBuilder(name).Label(std::string(kZoneKey), zone).Build());
        zone_of[name] = zone;
        room[name] = uniform(0, 6);
      }
    }
    for (int i = 0; i < 40; ++i) {
      const bool counted = uniform(0, 4) != 0;  // some pods are of another app
      Pod pod = LabeledPod("p" + std::to_string(i), {{"app", counted ? "web" : "db"}});
      TopologySpreadConstraint c = ZoneSpread(max_skew);
      if (min_domains > 1) c.min_domains = min_domains;
      pod.topology_spread_constraints = {c};
      int64_t min = INT64_MAX;
      for (const auto& [zone, n] : count) min = std::min(min, n);
      if (zones < min_domains) min = 0;
      auto run = testing::RunFilter(**plugin, h, pod);
      std::vector<std::string> candidates;
      for (const auto& [node, result] : run.by_node) {
        const int64_t self = counted ? 1 : 0;
        const bool oracle = count[zone_of[node]] + self - min <= max_skew;
        CAPTURE(node, result, count[zone_of[node]], min);
        REQUIRE((result == "ok") == oracle);
        if (oracle && room[node] > 0) candidates.push_back(node);
      }
      if (candidates.empty()) {
        ++refused_total;
        continue;
      }
      const std::string node = candidates[uniform(0, static_cast<int>(candidates.size()) - 1)];
      --room[node];
      ++placed_total;
      Pod placed = pod;
      placed.node_name = node;
      h.AddPod(placed);
      if (counted) ++count[zone_of[node]];
      int64_t lo = INT64_MAX, hi = 0;
      for (const auto& [zone, n] : count) {
        lo = std::min(lo, n);
        hi = std::max(hi, n);
      }
      REQUIRE(hi - lo <= max_skew);
    }
  }
  // The family exercises both outcomes.
  CHECK(placed_total > 1000);
  CHECK(refused_total > 100);
}

}  // namespace pod_topology_spread_test
}  // namespace tessel::pod_topology_spread
