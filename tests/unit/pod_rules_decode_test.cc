// Decoding podAffinity/podAntiAffinity, topologySpreadConstraints and host ports, and the shared
// label selector matching.
#include <catch2/catch.hpp>

#include "scheduler/api/decode.h"

namespace tessel {
namespace pod_rules_decode_test {

using nlohmann::json;
using Op = LabelSelectorRequirement::Operator;

json PodJson(json spec, json labels = json::object()) {
  return json{{"kind", "Pod"},
              {"metadata", {{"name", "p"}, {"namespace", "ml"}, {"labels", labels}}},
              {"spec", spec}};
}

TEST_CASE("label selectors match as metav1.LabelSelector", "[decode][labels]") {
  const StringMap labels = {{"app", "web"}, {"tier", "front"}};
  struct Case {
    std::string name;
    std::optional<LabelSelector> selector;
    bool want;
  };
  const std::vector<Case> cases = {
      {"nil selects nothing", std::nullopt, false},
      {"empty selects everything", LabelSelector{}, true},
      {"matchLabels", LabelSelector{.match_labels = {{"app", "web"}}}, true},
      {"matchLabels mismatch", LabelSelector{.match_labels = {{"app", "db"}}}, false},
      {"In", LabelSelector{.match_expressions = {{"tier", Op::kIn, {"back", "front"}}}}, true},
      {"In without the label", LabelSelector{.match_expressions = {{"zone", Op::kIn, {"a"}}}}, false},
      {"NotIn without the label", LabelSelector{.match_expressions = {{"zone", Op::kNotIn, {"a"}}}}, true},
      {"NotIn listed", LabelSelector{.match_expressions = {{"app", Op::kNotIn, {"web"}}}}, false},
      {"Exists", LabelSelector{.match_expressions = {{"tier", Op::kExists, {}}}}, true},
      {"DoesNotExist", LabelSelector{.match_expressions = {{"tier", Op::kDoesNotExist, {}}}}, false},
      {"labels and expressions are ANDed",
       LabelSelector{.match_labels = {{"app", "web"}}, .match_expressions = {{"tier", Op::kIn, {"back"}}}}, false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    CHECK(MatchesLabelSelector(c.selector, labels) == c.want);
  }
}

TEST_CASE("pod affinity, topology spread and host ports decode", "[decode]") {
  json spec = json::parse(R"({
    "containers": [{"name": "main", "ports": [
        {"containerPort": 80, "hostPort": 8080},
        {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"},
        {"containerPort": 9000}]}],
    "affinity": {
      "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
          "labelSelector": {"matchLabels": {"app": "cache"},
                            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["cold"]}]},
          "namespaces": ["shared"], "namespaceSelector": {},
          "topologyKey": "kubernetes.io/hostname",
          "matchLabelKeys": ["pod-template-hash", "absent"], "mismatchLabelKeys": ["tenant"]}]},
      "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
          "weight": 40, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}},
                                            "topologyKey": "topology.kubernetes.io/zone"}}]}},
    "topologySpreadConstraints": [
      {"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
       "labelSelector": {"matchLabels": {"app": "web"}}, "minDomains": 3,
       "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor", "matchLabelKeys": ["pod-template-hash"]},
      {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}]
  })");
  auto pod = DecodePod(PodJson(spec, {{"app", "web"}, {"pod-template-hash", "abc"}, {"tenant", "t1"}}));
  REQUIRE(pod.ok());

  REQUIRE(pod->containers[0].host_ports.size() == 2);  // containerPort without hostPort binds nothing
  CHECK(pod->containers[0].host_ports[0] == HostPort{.host_ip = "", .protocol = "TCP", .port = 8080});
  CHECK(pod->containers[0].host_ports[1] == HostPort{.host_ip = "10.0.0.1", .protocol = "UDP", .port = 53});

  REQUIRE(pod->pod_affinity.required.size() == 1);
  const PodAffinityTerm& t = pod->pod_affinity.required[0];
  CHECK(t.topology_key == "kubernetes.io/hostname");
  CHECK(t.namespaces == std::vector<std::string>{"shared"});
  REQUIRE(t.namespace_selector.has_value());
  CHECK(t.namespace_selector->empty());
  REQUIRE(t.label_selector.has_value());
  CHECK(t.label_selector->match_labels == StringMap{{"app", "cache"}});
  // NotIn from the spec, then matchLabelKeys (the absent key is ignored), then mismatchLabelKeys.
  REQUIRE(t.label_selector->match_expressions.size() == 3);
  CHECK(t.label_selector->match_expressions[1].key == "pod-template-hash");
  CHECK(t.label_selector->match_expressions[1].op == Op::kIn);
  CHECK(t.label_selector->match_expressions[1].values == std::vector<std::string>{"abc"});
  CHECK(t.label_selector->match_expressions[2].key == "tenant");
  CHECK(t.label_selector->match_expressions[2].op == Op::kNotIn);
  CHECK(pod->pod_affinity.preferred.empty());
  REQUIRE(pod->pod_anti_affinity.preferred.size() == 1);
  CHECK(pod->pod_anti_affinity.preferred[0].weight == 40);
  CHECK(pod->pod_anti_affinity.preferred[0].term.topology_key == "topology.kubernetes.io/zone");

  REQUIRE(pod->topology_spread_constraints.size() == 2);
  const TopologySpreadConstraint& c = pod->topology_spread_constraints[0];
  CHECK(c.max_skew == 2);
  CHECK(c.min_domains == 3);
  CHECK(c.node_affinity_policy == NodeInclusionPolicy::kIgnore);
  CHECK(c.node_taints_policy == NodeInclusionPolicy::kHonor);
  REQUIRE(c.label_selector.has_value());
  REQUIRE(c.label_selector->match_expressions.size() == 1);  // merged matchLabelKeys
  CHECK(c.label_selector->match_expressions[0].values == std::vector<std::string>{"abc"});
  const TopologySpreadConstraint& h = pod->topology_spread_constraints[1];
  CHECK(h.when_unsatisfiable == TopologySpreadConstraint::WhenUnsatisfiable::kScheduleAnyway);
  CHECK_FALSE(h.label_selector.has_value());  // nil: selects no pod
  CHECK_FALSE(h.node_affinity_policy.has_value());
}

TEST_CASE("bad pod terms name the field", "[decode]") {
  struct Case {
    std::string spec, error;
  };
  const std::string pa = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]";
  const std::vector<Case> cases = {
      {R"({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}}})",
       pa + ".topologyKey: missing"},
      {R"({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k",
          "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}}]}}})",
       pa + ".labelSelector.matchExpressions[0].operator: unknown operator \"Gt\" (want In, NotIn, Exists or DoesNotExist)"},
      {R"({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k",
          "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}]}}})",
       pa + ".labelSelector.matchExpressions[0].values: must be non-empty for operator In"},
      {R"({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k",
          "matchLabelKeys": ["app"]}]}}})",
       pa + ".matchLabelKeys: needs labelSelector to be set"},
      {R"({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0,
          "podAffinityTerm": {"topologyKey": "k"}}]}}})",
       "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: must be in 1..100, got 0"},
      {R"({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 4294967346,
          "podAffinityTerm": {"topologyKey": "k"}}]}}})",
       "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: must be in 1..100, got 4294967346"},
      {R"({"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule"}]})",
       "spec.topologySpreadConstraints[0].maxSkew: must be at least 1, got 0"},
      {R"({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "Sometimes"}]})",
       "spec.topologySpreadConstraints[0].whenUnsatisfiable: unknown value \"Sometimes\" (want DoNotSchedule or ScheduleAnyway)"},
      {R"({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}]})",
       "spec.topologySpreadConstraints[0].minDomains: may only be set with whenUnsatisfiable DoNotSchedule"},
      {R"({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "Maybe"}]})",
       "spec.topologySpreadConstraints[0].nodeTaintsPolicy: unknown policy \"Maybe\" (want Honor or Ignore)"},
      {R"({"containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 70000}]}]})",
       "spec.containers[0].ports[0].hostPort: must be in 0..65535, got 70000"},
      {R"({"containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 80, "protocol": "ICMP"}]}]})",
       "spec.containers[0].ports[0].protocol: unknown protocol \"ICMP\" (want TCP, UDP or SCTP)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.spec);
    auto pod = DecodePod(PodJson(json::parse(c.spec)));
    REQUIRE_FALSE(pod.ok());
    CHECK(pod.status().message() == "Pod ml/p: " + c.error);
  }
}

}  // namespace pod_rules_decode_test
}  // namespace tessel
