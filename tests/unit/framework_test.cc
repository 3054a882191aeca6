// Framework plumbing: plugins returning each status code at each point, skip handling,
// weights and normalisation, reserve rollback, permit waiting, registry and profile errors.
#include <catch2/catch.hpp>

#include "scheduler/testing/builders.h"
#include "fake_handle.h"
#include "plugins/registry.h"
#include "scheduler/framework/fit_error.h"
#include "scheduler/framework/framework.h"
#include "scheduler/framework/plugin_util.h"

namespace tessel {
namespace framework_test {

using testing::FakeHandle;
using testing::NodeBuilder;
using testing::PodBuilder;

// A plugin at every point whose answers come from its args:
//   {prefilter: Skip, filter: Unschedulable, filterNode: n2, score: 7, reserve: Error, permit: Wait}
class Scripted final : public PreFilterPlugin, public FilterPlugin, public PreScorePlugin,
                       public ScorePlugin, public ReservePlugin, public PermitPlugin,
                       public PreBindPlugin, public BindPlugin {
 public:
  Scripted(std::string name, YAML::Node args) : name_(std::move(name)), args_(YAML::Clone(args)) {}
  std::string_view Name() const override { return name_; }

  static Code CodeFrom(const std::string& s) {
    if (s == "Unschedulable") return Code::kUnschedulable;
    if (s == "UnschedulableAndUnresolvable") return Code::kUnschedulableAndUnresolvable;
    if (s == "Error") return Code::kError;
    if (s == "Wait") return Code::kWait;
    if (s == "Skip") return Code::kSkip;
    return Code::kSuccess;
  }
  Status At(const char* point) const {
    if (!args_ || !args_[point]) return Status::Ok();
    Code c = CodeFrom(args_[point].as<std::string>());
    if (c == Code::kSuccess) return Status::Ok();
    return Status(c, std::string(name_) + " says " + args_[point].as<std::string>());
  }
  Status PreFilter(CycleState&, const Pod&) override { return At("prefilter"); }
  Status Filter(const CycleState&, const Pod&, const NodeInfo& node) const override {
    ++filter_calls;
    if (args_["filterNode"] && args_["filterNode"].as<std::string>() != node.name()) return Status::Ok();
    return At("filter");
  }
  Status PreScore(CycleState&, const Pod&, const std::vector<const NodeInfo*>&) override {
    return At("prescore");
  }
  ScoreResult Score(const CycleState&, const Pod&, const NodeInfo& node) const override {
    // Scores by the node's name: n1 -> 1, n2 -> 2, ... times "score".
    int64_t base = args_["score"] ? args_["score"].as<int64_t>() : 0;
    return {base * (node.name().back() - '0'), Status::Ok()};
  }
  Status NormalizeScore(const CycleState&, const Pod&, NodeScoreList& scores) const override {
    if (args_["normalize"]) DefaultNormalizeScore(scores);
    return Status::Ok();
  }
  Status Reserve(CycleState&, const Pod&, const std::string&) override {
    reserved = true;
    return At("reserve");
  }
  void Unreserve(CycleState&, const Pod&, const std::string&) override { unreserved = true; }
  PermitResult Permit(CycleState&, const Pod&, const std::string&) override {
    return {At("permit"), absl::Seconds(10)};
  }
  Status PreBind(CycleState&, const Pod&, const std::string&) override { return At("prebind"); }
  Status Bind(CycleState&, const Pod&, const std::string&) override { return At("bind"); }

  mutable std::atomic<int> filter_calls{0};
  bool reserved = false;
  bool unreserved = false;

 private:
  std::string name_;
  YAML::Node args_;
};

struct Fixture {
  Fixture() {
    for (const char* n : {"n1", "n2", "n3"}) handle.AddNode(NodeBuilder(n).Build());
    for (const char* name : {"A", "B"}) {
      REQUIRE(registry.Register(name, [this, name](const YAML::Node& args, Handle&)
                                          -> absl::StatusOr<std::unique_ptr<Plugin>> {
        auto p = std::make_unique<Scripted>(name, args);
        made[name] = p.get();
        return std::unique_ptr<Plugin>(std::move(p));
      }).ok());
    }
    REQUIRE(registry.Register("PrioritySort", *InTreeRegistry().Find("PrioritySort")).ok());
  }
  std::unique_ptr<Framework> Make(const std::string& yaml) {
    auto config = ParseSchedulerConfig(yaml);
    REQUIRE(config.ok());
    auto fw = Framework::New(registry, config->profiles.at(0), handle, {.parallelism = 2});
    if (!fw.ok()) FAIL(fw.status().message());
    return *std::move(fw);
  }
  FakeHandle handle;
  Registry registry;
  std::map<std::string, Scripted*> made;
};

constexpr const char* kBase = R"(
profiles:
- schedulerName: tessel
  plugins:
    queueSort: {enabled: [{name: PrioritySort}]}
    multiPoint: {enabled: [{name: A}]}
)";

std::string WithArgs(const std::string& args_a) {
  return std::string(kBase) + "  pluginConfig:\n  - name: A\n    args: " + args_a + "\n";
}

TEST_CASE("each status code at PreFilter and Filter", "[framework]") {
  Fixture f;
  Pod pod = PodBuilder("p").Build();
  struct Case {
    std::string args;
    Code prefilter;
    size_t feasible;
  };
  const std::vector<Case> cases = {
      {"{}", Code::kSuccess, 3},
      {"{prefilter: Unschedulable}", Code::kUnschedulable, 0},
      {"{prefilter: UnschedulableAndUnresolvable}", Code::kUnschedulableAndUnresolvable, 0},
      {"{prefilter: Error}", Code::kError, 0},
      {"{prefilter: Skip, filter: Unschedulable}", Code::kSuccess, 3},  // Skip skips Filter too
      {"{filter: Unschedulable, filterNode: n2}", Code::kSuccess, 2},
      {"{filter: UnschedulableAndUnresolvable}", Code::kSuccess, 0},
  };
  for (const Case& c : cases) {
    SECTION(c.args) {
      auto fw = f.Make(WithArgs(c.args));
      CycleState state;
      Status pre = fw->RunPreFilter(state, pod);
      CHECK(pre.code() == c.prefilter);
      if (!pre.ok()) {
        CHECK(pre.plugin() == "A");
        continue;
      }
      FilterOutcome out = fw->FindFeasibleNodes(state, pod, f.handle.snapshot().nodes());
      CHECK(out.feasible.size() == c.feasible);
      CHECK(out.feasible.size() + out.rejected.size() == 3);
      for (const auto& [node, st] : out.rejected) CHECK(st.plugin() == "A");
    }
  }
}

TEST_CASE("a filter returning Wait or Skip is reported as an error", "[framework]") {
  Fixture f;
  auto fw = f.Make(WithArgs("{filter: Wait}"));
  CycleState state;
  Status st = fw->RunFilters(state, PodBuilder("p").Build(), *f.handle.snapshot().Get("n1"));
  CHECK(st.code() == Code::kError);
}

TEST_CASE("scores are normalised, weighted and summed", "[framework]") {
  Fixture f;
  auto fw = f.Make(R"(
profiles:
- plugins:
    queueSort: {enabled: [{name: PrioritySort}]}
    score: {enabled: [{name: A, weight: 2}, {name: B, weight: 3}]}
    bind: {enabled: [{name: A}]}
  pluginConfig:
  - {name: A, args: {score: 10}}
  - {name: B, args: {score: 5, normalize: true}}
)");
  CycleState state;
  Pod pod = PodBuilder("p").Build();
  std::vector<const NodeInfo*> nodes(f.handle.snapshot().nodes().begin(), f.handle.snapshot().nodes().end());
  auto scores = fw->RunScore(state, pod, nodes);
  REQUIRE(scores.ok());
  // A: 10,20,30 x2; B: 5,10,15 normalised to 33,66,100 x3
  CHECK((*scores)[0].score == 20 + 99);
  CHECK((*scores)[1].score == 40 + 198);
  CHECK((*scores)[2].score == 60 + 300);

  auto bad = f.Make(WithArgs("{score: 60}"));  // 60*3 = 180 is out of range and not normalised
  auto out = bad->RunScore(state, pod, nodes);
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(std::string(out.status().message()), Catch::Contains("outside 0..100"));
}

TEST_CASE("a failed Reserve unreserves; Permit can wait or reject; Bind errors surface", "[framework]") {
  Fixture f;
  Pod pod = PodBuilder("p").Build();
  CycleState state;
  SECTION("reserve error") {
    auto fw = f.Make(WithArgs("{reserve: Error}"));
    CHECK(fw->RunReserve(state, pod, "n1").code() == Code::kError);
    CHECK(f.made["A"]->unreserved);
  }
  SECTION("permit wait") {
    auto fw = f.Make(WithArgs("{permit: Wait}"));
    PermitResult r = fw->RunPermit(state, pod, "n1");
    CHECK(r.status.IsWait());
    CHECK(r.timeout == absl::Seconds(10));
  }
  SECTION("permit reject") {
    auto fw = f.Make(WithArgs("{permit: Unschedulable}"));
    CHECK(fw->RunPermit(state, pod, "n1").status.code() == Code::kUnschedulable);
  }
  SECTION("bind skip falls through to no binder") {
    auto fw = f.Make(WithArgs("{bind: Skip}"));
    CHECK(fw->RunBind(state, pod, "n1").code() == Code::kError);
  }
  SECTION("prebind error") {
    auto fw = f.Make(WithArgs("{prebind: Error}"));
    CHECK(fw->RunPreBind(state, pod, "n1").code() == Code::kError);
  }
}

TEST_CASE("profiles are checked when built", "[framework]") {
  Fixture f;
  auto build = [&](const std::string& yaml) {
    auto config = ParseSchedulerConfig(yaml);
    REQUIRE(config.ok());
    return Framework::New(f.registry, config->profiles.at(0), f.handle).status();
  };
  CHECK_THAT(std::string(build("profiles: [{plugins: {filter: {enabled: [{name: Nope}]}}}]").message()),
             Catch::Contains("unknown plugin \"Nope\""));
  CHECK_THAT(std::string(build("profiles: [{plugins: {multiPoint: {enabled: [{name: A}]}}}]").message()),
             Catch::Contains("no queueSort plugin"));
  CHECK_THAT(std::string(build("profiles: [{plugins: {queueSort: {enabled: [{name: A}]}}}]").message()),
             Catch::Contains("plugin \"A\" does not implement queueSort"));
  CHECK_THAT(std::string(build(std::string(kBase) + "  pluginConfig: [{name: B, args: {}}]\n").message()),
             Catch::Contains("pluginConfig names \"B\", which no extension point enables"));
  CHECK(f.registry.Register("A", nullptr).code() == absl::StatusCode::kAlreadyExists);
}

TEST_CASE("Filter covers every node, in parallel when there are many", "[framework]") {
  FakeHandle handle;
  for (int i = 0; i < 1000; ++i) handle.AddNode(NodeBuilder("node-" + std::to_string(i)).Build());
  Registry registry = InTreeRegistry();
  auto fw = Framework::New(registry, ResolveProfile(ProfileConfig{}, DefaultProfile()), handle,
                           {.parallelism = 4});
  REQUIRE(fw.ok());
  CycleState state;
  Pod pod = PodBuilder("p").Requests("cpu:1").Selector("pick", "me").Build();
  FilterOutcome out = (*fw)->FindFeasibleNodes(state, pod, handle.snapshot().nodes());
  CHECK(out.feasible.empty());
  CHECK(out.rejected.size() == 1000);
  CHECK(FormatFitError(1000, out.rejected) ==
        "0/1000 nodes are available: 1000 node(s) didn't match Pod's node affinity/selector.");
}

TEST_CASE("FormatFitError sorts and counts reasons like kube-scheduler", "[framework]") {
  NodeStatusMap rejected;
  rejected["a"] = Status::Unresolvable("node(s) were unschedulable");
  rejected["b"] = Status(Code::kUnschedulable, std::vector<std::string>{"Insufficient cpu", "Insufficient nvidia.com/gpu"});
  rejected["c"] = Status::Unschedulable("Insufficient nvidia.com/gpu");
  rejected["d"] = Status::Unresolvable("node(s) had untolerated taint {nvidia.com/gpu: true}");
  rejected["e"] = Status::Unresolvable("node(s) had untolerated taint {nvidia.com/gpu: true}");
  CHECK(FormatFitError(5, rejected) ==
        "0/5 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable, "
        "2 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint {nvidia.com/gpu: true}.");
  CHECK(FormatFitError(0, {}) == "0/0 nodes are available.");
}

TEST_CASE("SummarizeFitError: a histogram of distinct rejections reads as every node's", "[framework]") {
  const Status gpu = Status::Unschedulable("Insufficient nvidia.com/gpu").WithPlugin("NodeResourcesFit");
  const Status both = Status(Code::kUnschedulable, std::vector<std::string>{"Insufficient cpu", "Insufficient nvidia.com/gpu"})
                          .WithPlugin("NodeResourcesFit");
  const Status taint = Status::Unresolvable("node(s) had untolerated taint {a: b}").WithPlugin("TaintToleration");
  NodeStatusMap rejected;
  for (int i = 0; i < 7; ++i) rejected[StrCat("g", i)] = gpu;
  for (int i = 0; i < 2; ++i) rejected[StrCat("b", i)] = both;
  rejected["t"] = taint;
  const FitError from_nodes = SummarizeFitError(10, rejected);
  const FitError from_histogram = SummarizeFitError(10, std::vector<NodeRejections>{{&gpu, 7}, {&taint, 1}, {&both, 2}});
  CHECK(from_histogram.message ==
        "0/10 nodes are available: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu, "
        "9 Insufficient nvidia.com/gpu.");
  CHECK(from_nodes.message == from_histogram.message);
  CHECK(from_histogram.rejecting_plugins == std::vector<std::string>{"NodeResourcesFit", "TaintToleration"});
  CHECK(from_nodes.rejecting_plugins == from_histogram.rejecting_plugins);
  CHECK(from_histogram.error == nullptr);
  // A node that failed is reported as the error; a rejection no node gives any more is not counted.
  const Status broken = Status::Error("boom").WithPlugin("X");
  const FitError failed = SummarizeFitError(10, std::vector<NodeRejections>{{&gpu, 0}, {&broken, 1}});
  REQUIRE(failed.error == &broken);
  CHECK(failed.rejecting_plugins == std::vector<std::string>{"X"});
}

// A PostFilter plugin with a fixed answer.
class Answer final : public PostFilterPlugin {
 public:
  Answer(std::string name, PostFilterResult r) : name_(std::move(name)), r_(std::move(r)) {}
  std::string_view Name() const override { return name_; }
  PostFilterResult PostFilter(CycleState&, const Pod&, const NodeStatusMap&) override { return r_; }

 private:
  std::string name_;
  PostFilterResult r_;
};

TEST_CASE("PostFilter: plugins that do not help undo nothing an earlier one did", "[framework]") {
  using Nomination = PostFilterResult::Nomination;
  FakeHandle handle;
  Registry registry;
  for (const char* name : {"PrioritySort", "DefaultBinder"}) {
    REQUIRE(registry.Register(name, *InTreeRegistry().Find(name)).ok());
  }
  auto add = [&registry](std::string name, PostFilterResult r) {
    REQUIRE(registry.Register(name, [name, r](const YAML::Node&, Handle&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      return std::unique_ptr<Plugin>(std::make_unique<Answer>(name, r));
    }).ok());
  };
  const PreemptionVictim victim{.pod = std::make_shared<const Pod>(PodBuilder("v").Build()), .reason = "LowerPriority"};
  // Refused evictions and a cleared nomination, as DefaultPreemption answers when budgets say no.
  add("Clears", {.status = Status::Unschedulable("refused"), .nomination = Nomination::kOverride, .victims = {victim}});
  add("Notes", {.status = Status::Unschedulable("noted")});
  add("Helps", {.status = Status::Ok(), .nomination = Nomination::kOverride, .nominated_node = "n2"});
  auto run = [&](const std::string& plugins) {
    auto config = ParseSchedulerConfig(StrCat(
        "profiles:\n- schedulerName: tessel\n  plugins:\n    queueSort: {enabled: [{name: PrioritySort}]}\n"
        "    bind: {enabled: [{name: DefaultBinder}]}\n    postFilter: {enabled: ", plugins, "}\n"));
    REQUIRE(config.ok());
    auto fw = Framework::New(registry, config->profiles.at(0), handle, {.parallelism = 1});
    INFO(fw.status().message());
    REQUIRE(fw.ok());
    CycleState state;
    return (*fw)->RunPostFilter(state, PodBuilder("p").Build(), {});
  };
  SECTION("none helps: the last status, every victim, the nomination cleared") {
    const PostFilterResult r = run("[{name: Clears}, {name: Notes}]");
    CHECK(r.status.plugin() == "Notes");
    CHECK(r.nomination == Nomination::kOverride);
    CHECK(r.nominated_node.empty());
    REQUIRE(r.victims.size() == 1);
    CHECK(r.victims[0].pod->Key() == "default/v");
  }
  SECTION("one helps: it stops the chain, and its nomination wins") {
    const PostFilterResult r = run("[{name: Clears}, {name: Helps}, {name: Notes}]");
    CHECK(r.status.ok());
    CHECK(r.nomination == Nomination::kOverride);
    CHECK(r.nominated_node == "n2");
    CHECK(r.victims.size() == 1);
  }
}

}  // namespace framework_test
}  // namespace tessel
