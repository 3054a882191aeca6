// Scheduler configuration: parsing, defaults merging, and field-named errors.
#include <catch2/catch.hpp>

#include "fake_handle.h"
#include "plugins/registry.h"
#include "scheduler/framework/framework.h"

namespace tessel {
namespace {

// Defaults for these tests, so they do not move when the shipped default profile does.
const ProfileConfig& TestDefaults() {
  static const ProfileConfig defaults = [] {
    auto config = ParseSchedulerConfig(R"(
profiles:
- schedulerName: tessel
  plugins:
    queueSort: {enabled: [{name: PrioritySort}]}
    filter:
      enabled: [{name: NodeUnschedulable}, {name: NodeName}, {name: TaintToleration},
                {name: NodeAffinity}, {name: NodeResourcesFit}]
    score:
      enabled: [{name: TaintToleration, weight: 3}, {name: NodeAffinity, weight: 2},
                {name: NodeResourcesFit, weight: 1}]
    bind: {enabled: [{name: DefaultBinder}]}
  pluginConfig:
  - {name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated}}}
)");
    return config->profiles.at(0);
  }();
  return defaults;
}

TEST_CASE("a profile is merged onto the defaults", "[config]") {
  auto config = ParseSchedulerConfig(R"(
apiVersion: tessel.io/v1alpha1
kind: TesselSchedulerConfiguration
parallelism: 3
profiles:
- schedulerName: tessel
  plugins:
    score:
      disabled: [{name: TaintToleration}]
      enabled: [{name: NodeResourcesFit, weight: 7}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: LeastAllocated}}
- schedulerName: tessel-spread
  plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: NodeAffinity}]
)");
  REQUIRE(config.ok());
  CHECK(config->parallelism == 3);
  REQUIRE(config->profiles.size() == 2);
  ProfileConfig first = ResolveProfile(config->profiles[0], TestDefaults());
  const auto& score = first.plugins.at("score").enabled;
  REQUIRE(score.size() == 2);
  CHECK(score[0] == PluginRef{"NodeAffinity", 2});
  CHECK(score[1] == PluginRef{"NodeResourcesFit", 7});
  CHECK(first.plugins.at("filter").enabled.size() == 5);  // untouched points keep the defaults
  CHECK(first.plugin_args.at("NodeResourcesFit")["scoringStrategy"]["type"].as<std::string>() == "LeastAllocated");

  ProfileConfig second = ResolveProfile(config->profiles[1], TestDefaults());
  CHECK(second.plugins.at("score").enabled == std::vector<PluginRef>{{"NodeAffinity", 1}});
  CHECK(second.plugin_args.at("NodeResourcesFit")["scoringStrategy"]["type"].as<std::string>() == "MostAllocated");

  testing::FakeHandle handle;
  Registry registry = InTreeRegistry();
  auto fw = Framework::New(registry, first, handle);
  REQUIRE(fw.ok());
  CHECK((*fw)->PluginNames("score") == std::vector<std::string>{"NodeAffinity", "NodeResourcesFit"});
  CHECK((*fw)->PluginNames("filter") == std::vector<std::string>{
                                             "NodeUnschedulable", "NodeName", "TaintToleration",
                                             "NodeAffinity", "NodeResourcesFit"});
}

TEST_CASE("the shipped default profile builds", "[config]") {
  testing::FakeHandle handle;
  Registry registry = InTreeRegistry();
  auto fw = Framework::New(registry, ResolveProfile(ProfileConfig{}, DefaultProfile()), handle);
  REQUIRE(fw.ok());
  CHECK((*fw)->scheduler_name() == "tessel");
  CHECK_FALSE((*fw)->PluginNames("filter").empty());
}

TEST_CASE("configuration errors name the field", "[config]") {
  struct Case {
    std::string yaml;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"kind: Deployment", "kind: unknown kind \"Deployment\""},
      {"parallelism: lots", "parallelism: must be an integer"},
      {"profiles: {}", "profiles: expected a list"},
      {"profiles: [{plugins: {scoring: {}}}]", "profiles[0].plugins.scoring: unknown extension point"},
      {"profiles: [{plugins: {score: {enabled: [{name: A, weight: 0}]}}}]",
       "profiles[0].plugins.score.enabled[0].weight: must be an integer in 1..100"},
      {"profiles: [{plugins: {score: {enabled: [{weight: 1}]}}}]", "profiles[0].plugins.score.enabled[0]: expected {name"},
      {"profiles: [{plugins: {score: {enable: []}}}]", "profiles[0].plugins.score.enable: unknown field"},
      {"profiles: [{schedulerName: a}, {schedulerName: a}]", "profiles[1].schedulerName: duplicate \"a\""},
      {"profiles: [{pluginConfig: [{name: X}, {name: X}]}]", "profiles[0].pluginConfig[1]: args for \"X\" given twice"},
      {"profiles: [[", "not valid YAML"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    auto config = ParseSchedulerConfig(c.yaml);
    REQUIRE_FALSE(config.ok());
    CHECK_THAT(std::string(config.status().message()), Catch::Contains(c.want));
  }
}

TEST_CASE("plugin args are validated by the plugin, with the field named", "[config]") {
  testing::FakeHandle handle;
  Registry registry = InTreeRegistry();
  auto build = [&](const std::string& yaml) {
    auto config = ParseSchedulerConfig(yaml);
    REQUIRE(config.ok());
    return Framework::New(registry, ResolveProfile(config->profiles.at(0), DefaultProfile()), handle).status();
  };
  CHECK_THAT(std::string(build("profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Fancy}}}]}]").message()),
             Catch::Contains("pluginConfig \"NodeResourcesFit\": args.scoringStrategy.type: unknown \"Fancy\""));
  CHECK_THAT(std::string(build("profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrtegy: {}}}]}]").message()),
             Catch::Contains("args.scoringStrtegy: unknown field"));
  CHECK_THAT(std::string(build("profiles: [{pluginConfig: [{name: TaintToleration, args: {x: 1}}]}]").message()),
             Catch::Contains("args.x: unknown field"));
  CHECK(build("profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 3}]}}}]}]").ok());
}

}  // namespace
}  // namespace tessel
