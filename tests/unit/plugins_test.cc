// The standard plugins, one table each: {name, pod, node, want}.
#include <catch2/catch.hpp>

#include <random>

#include "scheduler/testing/builders.h"
#include "plugins/node_affinity/node_affinity.h"
#include "plugins/node_name/node_name.h"
#include "plugins/node_resources_fit/node_resources_fit.h"
#include "plugins/node_unschedulable/node_unschedulable.h"
#include "plugins/taint_toleration/taint_toleration.h"
#include "scheduler/framework/plugin_util.h"

namespace tessel {
namespace plugins_test {

using testing::NodeBuilder;
using testing::PodBuilder;

NodeInfo Info(Node node, std::vector<Pod> pods = {}) {
  NodeInfo info(std::make_shared<const Node>(std::move(node)));
  for (Pod& p : pods) info.AddPod(std::make_shared<const Pod>(std::move(p)));
  return info;
}

struct FilterCase {
  std::string name;
  Pod pod;
  NodeInfo node;
  Code want;
  std::vector<std::string> reasons;
};

void RunFilterTable(const FilterPlugin& plugin, const std::vector<FilterCase>& cases) {
  for (const FilterCase& c : cases) {
    SECTION(c.name) {
      CycleState state;
      Status st = plugin.Filter(state, c.pod, c.node);
      CHECK(st.code() == c.want);
      CHECK(st.reasons() == c.reasons);
    }
  }
}

Toleration Tol(std::string key, Toleration::Operator op, std::string value, std::optional<TaintEffect> effect) {
  return Toleration{.key = std::move(key), .op = op, .value = std::move(value), .effect = effect};
}

TEST_CASE("NodeResourcesFit filter", "[plugins][fit]") {
  node_resources_fit::NodeResourcesFit fit({});
  auto node = [] { return NodeBuilder("n").Allocatable("cpu:8,memory:32Gi,nvidia.com/gpu:4,ephemeral-storage:100Gi,pods:3").Build(); };
  auto running = [](std::string_view req) { return PodBuilder("r").Requests(req).Node("n").Build(); };
  RunFilterTable(fit, {
      {"fits", PodBuilder("p").Requests("cpu:2,nvidia.com/gpu:4").Build(), Info(node()), Code::kSuccess, {}},
      {"exactly full", PodBuilder("p").Requests("cpu:6,memory:16Gi").Build(),
       Info(node(), {running("cpu:2,memory:16Gi")}), Code::kSuccess, {}},
      {"not enough GPUs", PodBuilder("p").Requests("nvidia.com/gpu:2").Build(),
       Info(node(), {running("nvidia.com/gpu:3")}), Code::kUnschedulable, {"Insufficient nvidia.com/gpu"}},
      {"several shortages", PodBuilder("p").Requests("cpu:9,memory:33Gi").Build(), Info(node()),
       Code::kUnschedulable, {"Insufficient cpu", "Insufficient memory"}},
      {"ephemeral storage", PodBuilder("p").Requests("ephemeral-storage:101Gi").Build(), Info(node()),
       Code::kUnschedulable, {"Insufficient ephemeral-storage"}},
      {"unknown extended resource", PodBuilder("p").Requests("example.com/fpga:1").Build(), Info(node()),
       Code::kUnschedulable, {"Insufficient example.com/fpga"}},
      {"too many pods", PodBuilder("p").Requests("cpu:1").Build(),
       Info(node(), {running("cpu:1"), PodBuilder("r2").Node("n").Build(), PodBuilder("r3").Node("n").Build()}),
       Code::kUnschedulable, {"Too many pods"}},
      {"milli GPU precision", PodBuilder("p").Requests("nvidia.com/gpu:1").Build(),
       Info(NodeBuilder("n").Allocatable("nvidia.com/gpu:999m").Build()), Code::kUnschedulable,
       {"Insufficient nvidia.com/gpu"}},
  });
}

TEST_CASE("property: NodeResourcesFit's preemption screen agrees with Filter once the pods have left",
          "[plugins][fit][property]") {
  // Preemption skips a node's dry run when MayFitAfterFreeing says no: it must say no exactly
  // when Filter rejects the pod on the node without those pods (here: any subset of its pods).
  std::mt19937_64 rng(7);
  auto pick = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
  for (const bool ignore_gpu : {false, true}) {
    node_resources_fit::NodeResourcesFitArgs args;
    if (ignore_gpu) args.ignored = {"nvidia.com/gpu"};
    node_resources_fit::NodeResourcesFit fit(args);
    int agreed_no = 0, agreed_yes = 0;
    for (int c = 0; c < 400; ++c) {
      Node node = NodeBuilder("n").Allocatable(StrCat("cpu:", pick(2, 16), ",memory:", pick(4, 64), "Gi,nvidia.com/gpu:",
                                                      pick(0, 8), ",pods:", pick(2, 8))).Build();
      std::vector<Pod> running;
      for (int i = 0, n = pick(0, 7); i < n; ++i) {
        running.push_back(PodBuilder(StrCat("r", i)).Node("n")
                              .Requests(StrCat("cpu:", pick(0, 4), ",memory:", pick(0, 16), "Gi,nvidia.com/gpu:", pick(0, 4)))
                              .Build());
      }
      const Pod pod = PodBuilder("p").Requests(StrCat("cpu:", pick(0, 8), ",memory:", pick(0, 32), "Gi,nvidia.com/gpu:",
                                                      pick(0, 8))).Build();
      std::vector<Pod> staying;
      Resources freed;
      for (const Pod& r : running) {
        if (rng() % 2) {
          REQUIRE(freed.Add(r.requests).ok());
        } else {
          staying.push_back(r);
        }
      }
      const bool screen = fit.MayFitAfterFreeing(CycleState(), pod, Info(node, running), freed);
      const bool filter = fit.Filter(CycleState(), pod, Info(node, staying)).ok();
      INFO("case " << c << ", ignoring GPUs " << ignore_gpu);
      REQUIRE(screen == filter);
      (screen ? agreed_yes : agreed_no)++;
    }
    CHECK(agreed_yes > 50);
    CHECK(agreed_no > 50);
  }
}

TEST_CASE("NodeResourcesFit scoring strategies", "[plugins][fit]") {
  using node_resources_fit::AllocationScore;
  using Args = node_resources_fit::NodeResourcesFitArgs;
  using node_resources_fit::Strategy;
  NodeInfo node = Info(NodeBuilder("n").Allocatable("cpu:10,memory:10Gi,nvidia.com/gpu:8").Build(),
                       {PodBuilder("r").Requests("cpu:2,memory:4Gi,nvidia.com/gpu:2").Node("n").Build()});
  Pod pod = PodBuilder("p").Requests("cpu:3,memory:1Gi,nvidia.com/gpu:2").Build();
  // After placing: cpu 5/10, memory 5/10, gpu 4/8.
  CHECK(AllocationScore(Args{.strategy = Strategy::kLeastAllocated}, pod, node) == 50);
  CHECK(AllocationScore(Args{.strategy = Strategy::kMostAllocated, .resources = {{"nvidia.com/gpu", 1}}}, pod, node) == 50);
  Pod small = PodBuilder("s").Requests("cpu:1,nvidia.com/gpu:1").Build();
  // cpu 3/10 -> most 30, least 70; gpu 3/8 -> most 37, least 62; weights cpu 1, gpu 3
  CHECK(AllocationScore(Args{.strategy = Strategy::kMostAllocated,
                             .resources = {{"cpu", 1}, {"nvidia.com/gpu", 3}}}, small, node) == (30 + 37 * 3) / 4);
  CHECK(AllocationScore(Args{.strategy = Strategy::kLeastAllocated,
                             .resources = {{"cpu", 1}, {"nvidia.com/gpu", 3}}}, small, node) == (70 + 62 * 3) / 4);
  // A resource the node lacks is left out of the average.
  NodeInfo cpu_only = Info(NodeBuilder("c").Allocatable("cpu:10").Build());
  CHECK(AllocationScore(Args{.strategy = Strategy::kMostAllocated,
                             .resources = {{"cpu", 1}, {"nvidia.com/gpu", 5}}}, small, cpu_only) == 10);
}

TEST_CASE("NodeName filter", "[plugins]") {
  node_name::NodeName plugin;
  RunFilterTable(plugin, {
      {"no node name", PodBuilder("p").Build(), Info(NodeBuilder("a").Build()), Code::kSuccess, {}},
      {"same node", PodBuilder("p").Node("a").Build(), Info(NodeBuilder("a").Build()), Code::kSuccess, {}},
      {"other node", PodBuilder("p").Node("b").Build(), Info(NodeBuilder("a").Build()),
       Code::kUnschedulableAndUnresolvable, {"node(s) didn't match the requested node name"}},
  });
}

TEST_CASE("NodeUnschedulable filter: cordoned and not-ready nodes", "[plugins]") {
  node_unschedulable::NodeUnschedulable plugin;
  const auto kExists = Toleration::Operator::kExists;
  RunFilterTable(plugin, {
      {"ready node", PodBuilder("p").Build(), Info(NodeBuilder("a").Build()), Code::kSuccess, {}},
      {"cordoned", PodBuilder("p").Build(), Info(NodeBuilder("a").Unschedulable().Build()),
       Code::kUnschedulableAndUnresolvable, {"node(s) were unschedulable"}},
      {"cordoned but tolerated",
       PodBuilder("p").Tolerate(Tol("node.kubernetes.io/unschedulable", kExists, "", TaintEffect::kNoSchedule)).Build(),
       Info(NodeBuilder("a").Unschedulable().Build()), Code::kSuccess, {}},
      {"not ready", PodBuilder("p").Build(), Info(NodeBuilder("a").Ready(ConditionStatus::kFalse).Build()),
       Code::kUnschedulableAndUnresolvable, {"node(s) were not ready"}},
      {"readiness unknown", PodBuilder("p").Build(), Info(NodeBuilder("a").Ready(ConditionStatus::kUnknown).Build()),
       Code::kUnschedulableAndUnresolvable, {"node(s) were not ready"}},
      {"not ready but tolerated", PodBuilder("p").Tolerate(Tol("", kExists, "", std::nullopt)).Build(),
       Info(NodeBuilder("a").Ready(ConditionStatus::kFalse).Build()), Code::kSuccess, {}},
  });
}

TEST_CASE("NodeAffinity filter: selectors and every operator", "[plugins][affinity]") {
  node_affinity::NodeAffinity plugin;
  using Op = NodeSelectorRequirement::Operator;
  auto with_terms = [](std::vector<NodeSelectorTerm> terms) {
    Pod p = PodBuilder("p").Build();
    p.node_affinity.required = std::move(terms);
    return p;
  };
  auto term = [](std::string key, Op op, std::vector<std::string> values) {
    return NodeSelectorTerm{.match_expressions = {{std::move(key), op, std::move(values)}}};
  };
  Node gpu = NodeBuilder("gpu-1").Label("nvidia.com/gpu.product", "A100").Label("nvidia.com/gpu.count", "8").Build();
  const std::string kNo = "node(s) didn't match Pod's node affinity/selector";
  const Code kUnres = Code::kUnschedulableAndUnresolvable;
  RunFilterTable(plugin, {
      {"selector matches", PodBuilder("p").Selector("nvidia.com/gpu.product", "A100").Build(), Info(gpu), Code::kSuccess, {}},
      {"selector value differs", PodBuilder("p").Selector("nvidia.com/gpu.product", "T4").Build(), Info(gpu), kUnres, {kNo}},
      {"selector label missing", PodBuilder("p").Selector("zone", "a").Build(), Info(gpu), kUnres, {kNo}},
      {"In", with_terms({term("nvidia.com/gpu.product", Op::kIn, {"T4", "A100"})}), Info(gpu), Code::kSuccess, {}},
      {"NotIn", with_terms({term("nvidia.com/gpu.product", Op::kNotIn, {"A100"})}), Info(gpu), kUnres, {kNo}},
      {"NotIn on a missing label matches", with_terms({term("zone", Op::kNotIn, {"a"})}), Info(gpu), Code::kSuccess, {}},
      {"Exists", with_terms({term("nvidia.com/gpu.count", Op::kExists, {})}), Info(gpu), Code::kSuccess, {}},
      {"DoesNotExist", with_terms({term("nvidia.com/gpu.count", Op::kDoesNotExist, {})}), Info(gpu), kUnres, {kNo}},
      {"Gt", with_terms({term("nvidia.com/gpu.count", Op::kGt, {"4"})}), Info(gpu), Code::kSuccess, {}},
      {"Gt equal fails", with_terms({term("nvidia.com/gpu.count", Op::kGt, {"8"})}), Info(gpu), kUnres, {kNo}},
      {"Lt", with_terms({term("nvidia.com/gpu.count", Op::kLt, {"16"})}), Info(gpu), Code::kSuccess, {}},
      {"Lt with a non-integer label fails", with_terms({term("nvidia.com/gpu.product", Op::kLt, {"16"})}), Info(gpu), kUnres, {kNo}},
      {"terms are ORed", with_terms({term("zone", Op::kExists, {}), term("nvidia.com/gpu.count", Op::kIn, {"8"})}),
       Info(gpu), Code::kSuccess, {}},
      {"an empty term list matches nothing", with_terms({}), Info(gpu), kUnres, {kNo}},
      {"matchFields on the node name",
       with_terms({NodeSelectorTerm{.match_fields = {{"metadata.name", Op::kIn, {"gpu-1"}}}}}), Info(gpu), Code::kSuccess, {}},
  });
}

TEST_CASE("NodeAffinity score: preferred terms' weights, normalised", "[plugins][affinity]") {
  node_affinity::NodeAffinity plugin;
  Pod pod = PodBuilder("p").Build();
  pod.node_affinity.preferred = {
      {30, {.match_expressions = {{"zone", NodeSelectorRequirement::Operator::kIn, {"a"}}}}},
      {10, {.match_expressions = {{"fast", NodeSelectorRequirement::Operator::kExists, {}}}}}};
  CycleState state;
  NodeScoreList scores;
  for (auto node : {NodeBuilder("n1").Label("zone", "a").Label("fast", "").Build(),
                    NodeBuilder("n2").Label("zone", "a").Build(), NodeBuilder("n3").Build()}) {
    scores.push_back({node.name(), plugin.Score(state, pod, Info(node)).score});
  }
  CHECK(scores[0].score == 40);
  CHECK(scores[1].score == 30);
  REQUIRE(plugin.NormalizeScore(state, pod, scores).ok());
  CHECK(scores[0].score == 100);
  CHECK(scores[1].score == 75);
  CHECK(scores[2].score == 0);
}

TEST_CASE("TaintToleration filter", "[plugins][taints]") {
  taint_toleration::TaintToleration plugin;
  const auto kEqual = Toleration::Operator::kEqual;
  const auto kExists = Toleration::Operator::kExists;
  Node tainted = NodeBuilder("n").Taint("nvidia.com/gpu", "true", TaintEffect::kNoSchedule).Build();
  const std::string kUntolerated = "node(s) had untolerated taint {nvidia.com/gpu: true}";
  const Code kUnres = Code::kUnschedulableAndUnresolvable;
  RunFilterTable(plugin, {
      {"no taints", PodBuilder("p").Build(), Info(NodeBuilder("n").Build()), Code::kSuccess, {}},
      {"untolerated", PodBuilder("p").Build(), Info(tainted), kUnres, {kUntolerated}},
      {"Equal with the value", PodBuilder("p").Tolerate(Tol("nvidia.com/gpu", kEqual, "true", TaintEffect::kNoSchedule)).Build(),
       Info(tainted), Code::kSuccess, {}},
      {"Equal with another value", PodBuilder("p").Tolerate(Tol("nvidia.com/gpu", kEqual, "false", std::nullopt)).Build(),
       Info(tainted), kUnres, {kUntolerated}},
      {"Exists on the key, any effect", PodBuilder("p").Tolerate(Tol("nvidia.com/gpu", kExists, "", std::nullopt)).Build(),
       Info(tainted), Code::kSuccess, {}},
      {"wrong effect", PodBuilder("p").Tolerate(Tol("nvidia.com/gpu", kExists, "", TaintEffect::kNoExecute)).Build(),
       Info(tainted), kUnres, {kUntolerated}},
      {"empty key Exists tolerates all", PodBuilder("p").Tolerate(Tol("", kExists, "", std::nullopt)).Build(),
       Info(tainted), Code::kSuccess, {}},
      {"NoExecute filters too", PodBuilder("p").Build(),
       Info(NodeBuilder("n").Taint("dedicated", "ml", TaintEffect::kNoExecute).Build()), kUnres,
       {"node(s) had untolerated taint {dedicated: ml}"}},
      {"PreferNoSchedule does not filter", PodBuilder("p").Build(),
       Info(NodeBuilder("n").Taint("spot", "true", TaintEffect::kPreferNoSchedule).Build()), Code::kSuccess, {}},
  });
}

TEST_CASE("TaintToleration score prefers fewer untolerated PreferNoSchedule taints", "[plugins][taints]") {
  taint_toleration::TaintToleration plugin;
  Pod pod = PodBuilder("p").Tolerate(Tol("spot", Toleration::Operator::kExists, "", std::nullopt)).Build();
  CycleState state;
  NodeScoreList scores;
  for (auto node : {NodeBuilder("clean").Build(),
                    NodeBuilder("one").Taint("old", "x", TaintEffect::kPreferNoSchedule).Build(),
                    NodeBuilder("two").Taint("old", "x", TaintEffect::kPreferNoSchedule)
                        .Taint("slow", "x", TaintEffect::kPreferNoSchedule).Build(),
                    NodeBuilder("tolerated").Taint("spot", "x", TaintEffect::kPreferNoSchedule).Build()}) {
    scores.push_back({node.name(), plugin.Score(state, pod, Info(node)).score});
  }
  REQUIRE(plugin.NormalizeScore(state, pod, scores).ok());
  CHECK(scores[0].score == 100);
  CHECK(scores[1].score == 50);
  CHECK(scores[2].score == 0);
  CHECK(scores[3].score == 100);
}

TEST_CASE("DefaultNormalizeScore", "[plugins]") {
  NodeScoreList s = {{"a", 0}, {"b", 5}, {"c", 10}};
  DefaultNormalizeScore(s);
  CHECK((s[0].score == 0 && s[1].score == 50 && s[2].score == 100));
  NodeScoreList zeros = {{"a", 0}, {"b", 0}};
  DefaultNormalizeScore(zeros, /*reverse=*/true);
  CHECK((zeros[0].score == 100 && zeros[1].score == 100));
}

}  // namespace plugins_test
}  // namespace tessel
