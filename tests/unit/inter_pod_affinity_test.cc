// InterPodAffinity: required affinity/anti-affinity (with the symmetry rule and the first pod of
// a self-affine group), namespaces and namespaceSelector, preferred weights in Score, and the
// what-if update of the PreFilter state.
#include <catch2/catch.hpp>

#include "plugins/inter_pod_affinity/inter_pod_affinity.h"
#include "tests/unit/pod_rules_harness.h"

namespace tessel::inter_pod_affinity {
namespace inter_pod_affinity_test {

using testing::FakeHandle;
using testing::LabeledPod;
using testing::MatchLabels;
using testing::NodeBuilder;

constexpr const char* kZone = "topology.kubernetes.io/zone";
constexpr const char* kHost = "kubernetes.io/hostname";
const std::string kUnresolvable = "UnschedulableAndUnresolvable: " + std::string(kAffinityReason);
const std::string kAnti = "Unschedulable: " + std::string(kAntiAffinityReason);
const std::string kExisting = "Unschedulable: " + std::string(kExistingAntiAffinityReason);

PodAffinityTerm Term(StringMap labels, std::string key) {
  return PodAffinityTerm{.label_selector = MatchLabels(std::move(labels)), .topology_key = std::move(key)};
}

// n1, n2 in zone a; n3 in zone b; n4 without a zone. A cache pod on n1; on n3 a web pod that
// refuses db pods on its node; in namespace "team" a pod app=batch on n3.
void Cluster(FakeHandle& h) {
  const std::pair<const char*, const char*> nodes[] = {{"n1", "a"}, {"n2", "a"}, {"n3", "b"}, {"n4", ""}};
  for (auto [name, zone] : nodes) {
    NodeBuilder b(name);
    b.Label(kHost, name);
    if (*zone) b.Label(kZone, zone);
    h.AddNode(b.Build());
  }
  h.AddPod(LabeledPod("cache", {{"app", "cache"}}, "n1"));
  Pod web = LabeledPod("web", {{"app", "web"}}, "n3");
  web.pod_anti_affinity.required.push_back(Term({{"app", "db"}}, kHost));
  h.AddPod(web);
  h.AddPod(LabeledPod("batch", {{"app", "batch"}}, "n3", "team"));
  h.SetNamespaceLabels("team", {{"tier", "gpu"}});
}

TEST_CASE("InterPodAffinity Filter follows kube-scheduler's required rules", "[plugins][interpodaffinity]") {
  struct Case {
    std::string name;
    Pod pod;
    std::map<std::string, std::string> want;
  };
  auto with = [](Pod p, auto edit) {
    edit(p);
    return p;
  };
  const Pod plain = LabeledPod("p", {{"app", "p"}});
  PodAffinityTerm all_ns = Term({{"app", "batch"}}, kHost);
  all_ns.namespace_selector = LabelSelector{};
  PodAffinityTerm gpu_ns = Term({{"app", "batch"}}, kHost);
  gpu_ns.namespace_selector = MatchLabels({{"tier", "gpu"}});
  PodAffinityTerm cpu_ns = Term({{"app", "batch"}}, kHost);
  cpu_ns.namespace_selector = MatchLabels({{"tier", "cpu"}});
  PodAffinityTerm listed_ns = Term({{"app", "batch"}}, kHost);
  listed_ns.namespaces = {"team"};
  PodAffinityTerm nil_selector{.topology_key = kZone};

  const std::vector<Case> cases = {
      {"no terms and no anti-affinity against it: skip", plain,
       {{"n1", "skip"}, {"n2", "skip"}, {"n3", "skip"}, {"n4", "skip"}}},
      {"affinity to the cache's zone", with(plain, [](Pod& p) { p.pod_affinity.required.push_back(Term({{"app", "cache"}}, kZone)); }),
       {{"n1", "ok"}, {"n2", "ok"}, {"n3", kUnresolvable}, {"n4", kUnresolvable}}},
      {"affinity to the cache's node", with(plain, [](Pod& p) { p.pod_affinity.required.push_back(Term({{"app", "cache"}}, kHost)); }),
       {{"n1", "ok"}, {"n2", kUnresolvable}, {"n3", kUnresolvable}, {"n4", kUnresolvable}}},
      {"two affinity terms must be matched by the same pods",
       with(plain, [](Pod& p) {
         p.pod_affinity.required.push_back(Term({{"app", "cache"}}, kZone));
         p.pod_affinity.required.push_back(Term({{"app", "web"}}, kZone));
       }),
       {{"n1", kUnresolvable}, {"n2", kUnresolvable}, {"n3", kUnresolvable}, {"n4", kUnresolvable}}},
      {"anti-affinity to the cache's node", with(plain, [](Pod& p) { p.pod_anti_affinity.required.push_back(Term({{"app", "cache"}}, kHost)); }),
       {{"n1", kAnti}, {"n2", "ok"}, {"n3", "ok"}, {"n4", "ok"}}},
      {"anti-affinity to the cache's zone (a node without the key is not in it)",
       with(plain, [](Pod& p) { p.pod_anti_affinity.required.push_back(Term({{"app", "cache"}}, kZone)); }),
       {{"n1", kAnti}, {"n2", kAnti}, {"n3", "ok"}, {"n4", "ok"}}},
      {"symmetry: the web pod's anti-affinity keeps a db pod off n3", LabeledPod("db", {{"app", "db"}}),
       {{"n1", "ok"}, {"n2", "ok"}, {"n3", kExisting}, {"n4", "ok"}}},
      {"symmetry ignores a db pod of another namespace (the term is in web's namespace)",
       LabeledPod("db", {{"app", "db"}}, "", "team"),
       {{"n1", "skip"}, {"n2", "skip"}, {"n3", "skip"}, {"n4", "skip"}}},
      {"first pod of a self-affine group goes where the key exists",
       with(LabeledPod("g", {{"app", "group"}}), [](Pod& p) { p.pod_affinity.required.push_back(Term({{"app", "group"}}, kZone)); }),
       {{"n1", "ok"}, {"n2", "ok"}, {"n3", "ok"}, {"n4", kUnresolvable}}},
      {"no exception when the pod does not match its own term",
       with(plain, [](Pod& p) { p.pod_affinity.required.push_back(Term({{"app", "group"}}, kZone)); }),
       {{"n1", kUnresolvable}, {"n2", kUnresolvable}, {"n3", kUnresolvable}, {"n4", kUnresolvable}}},
      {"a term sees only its own namespace by default",
       with(plain, [](Pod& p) { p.pod_affinity.required.push_back(Term({{"app", "batch"}}, kHost)); }),
       {{"n1", kUnresolvable}, {"n2", kUnresolvable}, {"n3", kUnresolvable}, {"n4", kUnresolvable}}},
      {"namespaces lists another namespace", with(plain, [&](Pod& p) { p.pod_affinity.required.push_back(listed_ns); }),
       {{"n1", kUnresolvable}, {"n2", kUnresolvable}, {"n3", "ok"}, {"n4", kUnresolvable}}},
      {"namespaceSelector {} is every namespace", with(plain, [&](Pod& p) { p.pod_affinity.required.push_back(all_ns); }),
       {{"n1", kUnresolvable}, {"n2", kUnresolvable}, {"n3", "ok"}, {"n4", kUnresolvable}}},
      {"namespaceSelector by the namespace's labels", with(plain, [&](Pod& p) { p.pod_affinity.required.push_back(gpu_ns); }),
       {{"n1", kUnresolvable}, {"n2", kUnresolvable}, {"n3", "ok"}, {"n4", kUnresolvable}}},
      {"namespaceSelector that selects no namespace", with(plain, [&](Pod& p) { p.pod_affinity.required.push_back(cpu_ns); }),
       {{"n1", kUnresolvable}, {"n2", kUnresolvable}, {"n3", kUnresolvable}, {"n4", kUnresolvable}}},
      {"a nil labelSelector selects no pod (anti-affinity never fires)",
       with(plain, [&](Pod& p) { p.pod_anti_affinity.required.push_back(nil_selector); }),
       {{"n1", "ok"}, {"n2", "ok"}, {"n3", "ok"}, {"n4", "ok"}}},
      {"matchExpressions NotIn", with(plain, [](Pod& p) {
         PodAffinityTerm t{.label_selector = LabelSelector{.match_expressions = {{.key = "app", .op = LabelSelectorRequirement::Operator::kNotIn, .values = {"cache"}}}},
                           .topology_key = kHost};
         p.pod_anti_affinity.required.push_back(t);
       }),
       {{"n1", "ok"}, {"n2", "ok"}, {"n3", kAnti}, {"n4", "ok"}}},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      FakeHandle h;
      Cluster(h);
      auto plugin = InterPodAffinity::New({}, h);
      REQUIRE(plugin.ok());
      CHECK(testing::RunFilter(**plugin, h, c.pod).by_node == c.want);
    }
  }
}

TEST_CASE("InterPodAffinity PreFilter state answers what-if questions", "[plugins][interpodaffinity]") {
  FakeHandle h;
  Cluster(h);
  auto plugin = InterPodAffinity::New({}, h);
  REQUIRE(plugin.ok());
  Pod pod = LabeledPod("db", {{"app", "db"}});
  pod.pod_affinity.required.push_back(Term({{"app", "cache"}}, kHost));
  CycleState state;
  REQUIRE((*plugin)->PreFilter(state, pod).ok());
  const NodeInfo* n1 = h.snapshot().Get("n1");
  const NodeInfo* n3 = h.snapshot().Get("n3");
  CHECK((*plugin)->Filter(state, pod, *n1).ok());
  CHECK((*plugin)->Filter(state, pod, *n3).IsRejected());

  CycleState what_if = state.Clone();
  auto* s = const_cast<PreFilterState*>(what_if.Read<PreFilterState>(InterPodAffinity::kName));
  REQUIRE(s != nullptr);
  auto no_ns = [](std::string_view) -> const StringMap* { return nullptr; };
  SECTION("without the cache pod, n1 no longer satisfies the affinity") {
    s->UpdateWithPod(pod, *n1->FindPod("default/cache"), *n1->node(), no_ns, -1);
    CHECK((*plugin)->Filter(what_if, pod, *n1).IsRejected());
    CHECK((*plugin)->Filter(state, pod, *n1).ok());  // the original is untouched
  }
  SECTION("without the web pod, its anti-affinity no longer guards n3") {
    s->UpdateWithPod(pod, *n3->FindPod("default/web"), *n3->node(), no_ns, -1);
    s->UpdateWithPod(pod, *n1->FindPod("default/cache"), *n3->node(), no_ns, +1);  // a cache on n3
    CHECK((*plugin)->Filter(what_if, pod, *n3).ok());
    CHECK((*plugin)->Filter(state, pod, *n3).IsRejected());
  }
}

TEST_CASE("InterPodAffinity Score weighs preferred terms both ways", "[plugins][interpodaffinity]") {
  FakeHandle h;
  Cluster(h);
  auto plugin = InterPodAffinity::New({}, h);
  REQUIRE(plugin.ok());

  SECTION("no preferences anywhere: skipped") {
    CHECK(testing::RunScore(**plugin, h, LabeledPod("p", {})).empty());
  }
  SECTION("the pod's own preferred affinity and anti-affinity, normalised (s - min) * 100 / (max - min)") {
    Pod pod = LabeledPod("p", {});
    pod.pod_affinity.preferred.push_back({.weight = 80, .term = Term({{"app", "cache"}}, kZone)});
    pod.pod_anti_affinity.preferred.push_back({.weight = 20, .term = Term({{"app", "web"}}, kHost)});
    // raw: n1 80, n2 80, n3 -20, n4 0
    CHECK(testing::RunScore(**plugin, h, pod) ==
          std::map<std::string, int64_t>{{"n1", 100}, {"n2", 100}, {"n3", 0}, {"n4", 20}});
  }
  SECTION("existing pods' preferred terms and required affinity (hardPodAffinityWeight) count for the incoming pod") {
    Pod fan = LabeledPod("fan", {}, "n3");
    fan.pod_affinity.preferred.push_back({.weight = 30, .term = Term({{"app", "p"}}, kZone)});
    fan.pod_affinity.required.push_back(Term({{"app", "p"}}, kHost));
    h.AddPod(fan);
    Pod hater = LabeledPod("hater", {}, "n2");
    hater.pod_anti_affinity.preferred.push_back({.weight = 10, .term = Term({{"app", "p"}}, kHost)});
    h.AddPod(hater);
    // raw: n1 0, n2 -10, n3 30 + 1, n4 0
    CHECK(testing::RunScore(**plugin, h, LabeledPod("p", {{"app", "p"}})) ==
          std::map<std::string, int64_t>{{"n1", 24}, {"n2", 0}, {"n3", 100}, {"n4", 24}});
    auto quiet = InterPodAffinity::New({.hard_pod_affinity_weight = 0, .ignore_preferred_terms_of_existing_pods = true}, h);
    REQUIRE(quiet.ok());
    CHECK(testing::RunScore(**quiet, h, LabeledPod("p", {{"app", "p"}})).empty());
  }
}

TEST_CASE("InterPodAffinity Filter without its PreFilter computes the same answer", "[plugins][interpodaffinity]") {
  FakeHandle h;
  Cluster(h);
  auto plugin = InterPodAffinity::New({}, h);
  REQUIRE(plugin.ok());
  Pod pod = LabeledPod("db", {{"app", "db"}});
  pod.pod_affinity.required.push_back(Term({{"app", "cache"}}, kZone));
  const CycleState empty;
  std::map<std::string, std::string> without;
  for (const NodeInfo* n : h.snapshot().nodes()) without[n->name()] = testing::Describe((*plugin)->Filter(empty, pod, *n));
  CHECK(without == std::map<std::string, std::string>{{"n1", "ok"}, {"n2", "ok"}, {"n3", kUnresolvable}, {"n4", kUnresolvable}});
}

TEST_CASE("InterPodAffinity args are validated", "[plugins][interpodaffinity]") {
  CHECK(InterPodAffinity::ParseArgs(YAML::Load("{hardPodAffinityWeight: 101}")).status().message() ==
        "InterPodAffinity: args.hardPodAffinityWeight: want an integer in 0..100, got \"101\"");
  CHECK_FALSE(InterPodAffinity::ParseArgs(YAML::Load("{hardPodAfinityWeight: 1}")).ok());
}

}  // namespace inter_pod_affinity_test
}  // namespace tessel::inter_pod_affinity
