// Scheduler configuration: parsing, defaults merging, and field-named errors.
#include <catch2/catch.hpp>

#include "nlohmann/json.hpp"
#include "fake_handle.h"
#include "plugins/registry.h"
#include "scheduler/framework/framework.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace config_test {

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

// Builds every profile of a parsed configuration on the shipped defaults; the first error.
absl::Status BuildAll(const SchedulerConfig& config) {
  testing::FakeHandle handle;
  Registry registry = InTreeRegistry();
  for (const ProfileConfig& profile : config.profiles) {
    auto fw = Framework::New(registry, ResolveProfile(profile, DefaultProfile()), handle);
    if (!fw.ok()) return fw.status();
  }
  return absl::OkStatus();
}

// Parses and builds `yaml`; the first error of either step ("" when both succeed).
std::string FirstError(const std::string& yaml) {
  auto config = ParseSchedulerConfig(yaml);
  if (!config.ok()) return std::string(config.status().message());
  absl::Status st = BuildAll(*config);
  return st.ok() ? "" : std::string(st.message());
}

TEST_CASE("a KubeSchedulerConfiguration's settings are read", "[config]") {
  for (std::string_view version : {"v1beta1", "v1beta2", "v1beta3", "v1"}) {
    CAPTURE(version);
    auto config = ParseSchedulerConfig(StrCat(R"(
apiVersion: kubescheduler.config.k8s.io/)", version, R"(
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
  qps: 75.5
  burst: 150
  contentType: application/vnd.kubernetes.protobuf
  acceptContentTypes: application/json
leaderElection:
  leaderElect: false
  leaseDuration: 1m
  renewDeadline: 45s
  retryPeriod: 1500ms
  resourceLock: leases
  resourceName: my-scheduler
  resourceNamespace: sched-system
podInitialBackoffSeconds: 3
podMaxBackoffSeconds: 30
percentageOfNodesToScore: 40
profiles:
- schedulerName: tessel
  percentageOfNodesToScore: 100
)"));
    REQUIRE(config.ok());
    const ClientConnectionConfig& cc = config->client_connection;
    CHECK(cc.kubeconfig == "/etc/kubernetes/scheduler.conf");
    CHECK(cc.qps == 75.5);
    CHECK(cc.burst == 150);
    CHECK(cc.content_type == "application/vnd.kubernetes.protobuf");
    CHECK(cc.accept_content_types == "application/json");
    const LeaderElectionConfig& le = config->leader_election;
    CHECK(le.leader_elect == false);
    CHECK(le.lease_duration == absl::Minutes(1));
    CHECK(le.renew_deadline == absl::Seconds(45));
    CHECK(le.retry_period == absl::Milliseconds(1500));
    CHECK(le.resource_lock == "leases");
    CHECK(le.resource_name == "my-scheduler");
    CHECK(le.resource_namespace == "sched-system");
    CHECK(config->pod_initial_backoff == absl::Seconds(3));
    CHECK(config->pod_max_backoff == absl::Seconds(30));
    CHECK(config->percentage_of_nodes_to_score == 40);
    // What Tessel reads but does differently is said, once per setting (100% is no difference).
    CHECK(config->notes == std::vector<std::string>{
                               "clientConnection.contentType: application/vnd.kubernetes.protobuf is "
                               "read but not applied: Tessel sends JSON",
                               "percentageOfNodesToScore: 40 is read but not applied: Tessel filters "
                               "and scores every node"});
  }
}

TEST_CASE("unset settings stay unset and the backoff keeps kube-scheduler's defaults", "[config]") {
  auto config = ParseSchedulerConfig("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n");
  REQUIRE(config.ok());
  CHECK_FALSE(config->client_connection.qps.has_value());
  CHECK_FALSE(config->client_connection.burst.has_value());
  CHECK_FALSE(config->client_connection.kubeconfig.has_value());
  CHECK_FALSE(config->leader_election.leader_elect.has_value());
  CHECK_FALSE(config->leader_election.lease_duration.has_value());
  CHECK_FALSE(config->percentage_of_nodes_to_score.has_value());
  CHECK(config->pod_initial_backoff == absl::Seconds(1));
  CHECK(config->pod_max_backoff == absl::Seconds(10));
  CHECK(config->notes.empty());
  // kube-scheduler's "" kubeconfig means "not set"; the no-op values of unsupported settings pass.
  auto quiet = ParseSchedulerConfig(
      "clientConnection: {kubeconfig: \"\"}\nextenders: []\nenableProfiling: false\n"
      "enableContentionProfiling: false\npercentageOfNodesToScore: 100\n");
  REQUIRE(quiet.ok());
  CHECK_FALSE(quiet->client_connection.kubeconfig.has_value());
  CHECK(quiet->notes.empty());
}

TEST_CASE("configuration errors name the field, exactly", "[config]") {
  struct Case {
    std::string yaml;
    std::string want;  // the whole message after "scheduler configuration: "
  };
  const std::vector<Case> cases = {
      {"kind: Deployment",
       "kind: unknown kind \"Deployment\" (want TesselSchedulerConfiguration or KubeSchedulerConfiguration)"},
      {"kind: {a: 1}", "kind: expected a string"},
      {"apiVersion: kubescheduler.config.k8s.io/v1alpha2",
       "apiVersion: unknown \"kubescheduler.config.k8s.io/v1alpha2\" (want tessel.io/v1alpha1 or "
       "kubescheduler.config.k8s.io/v1beta1, kubescheduler.config.k8s.io/v1beta2, "
       "kubescheduler.config.k8s.io/v1beta3, kubescheduler.config.k8s.io/v1)"},
      {"parallelism: lots", "parallelism: must be an integer in 0..256, got \"lots\""},
      {"parallelism: [1]", "parallelism: must be an integer in 0..256, got a non-scalar"},
      // Unknown fields, at every level.
      {"profile: []",
       "profile: unknown field (known: apiVersion, kind, parallelism, profiles, clientConnection, "
       "leaderElection, podInitialBackoffSeconds, podMaxBackoffSeconds, percentageOfNodesToScore, "
       "extenders, enableProfiling, enableContentionProfiling)"},
      {"clientConnection: {qsp: 5}",
       "clientConnection.qsp: unknown field (known: kubeconfig, qps, burst, contentType, acceptContentTypes)"},
      {"leaderElection: {leaderElection: true}",
       "leaderElection.leaderElection: unknown field (known: leaderElect, leaseDuration, renewDeadline, "
       "retryPeriod, resourceLock, resourceName, resourceNamespace)"},
      {"profiles: [{name: a}]",
       "profiles[0].name: unknown field (known: schedulerName, plugins, pluginConfig, percentageOfNodesToScore)"},
      {"profiles: [{plugins: {score: {enabled: [{name: A, wieght: 2}]}}}]",
       "profiles[0].plugins.score.enabled[0].wieght: unknown field (known: name, weight)"},
      {"profiles: [{pluginConfig: [{name: A, arg: {}}]}]",
       "profiles[0].pluginConfig[0].arg: unknown field (known: name, args)"},
      {"profiles: [{plugins: {score: {enable: []}}}]",
       "profiles[0].plugins.score.enable: unknown field (known: enabled, disabled)"},
      {"{[a]: 1}", "(top level): a key is not a plain string"},
      // kube-scheduler fields Tessel does not support.
      {"healthzBindAddress: 0.0.0.0:10251",
       "healthzBindAddress: not supported by Tessel; use --bind-address and --secure-port (one server for "
       "/healthz and /metrics)"},
      {"extenders: [{urlPrefix: http://x}]",
       "extenders: not supported by Tessel; write a plugin (see README, \"How to add a plugin\")"},
      {"enableProfiling: true",
       "enableProfiling: not supported by Tessel (it serves no profiling endpoints); set false or remove it"},
      // clientConnection.
      {"clientConnection: {qps: 0}", "clientConnection.qps: must be a number > 0, got \"0\""},
      {"clientConnection: {qps: fast}", "clientConnection.qps: must be a number > 0, got \"fast\""},
      {"clientConnection: {qps: .nan}", "clientConnection.qps: must be a number > 0, got \".nan\""},
      {"clientConnection: {burst: 0}", "clientConnection.burst: must be an integer in 1..2147483648, got \"0\""},
      {"clientConnection: {kubeconfig: [a]}", "clientConnection.kubeconfig: expected a string"},
      {"clientConnection: {contentType: text/plain}",
       "clientConnection.contentType: unknown \"text/plain\" (want application/json or "
       "application/vnd.kubernetes.protobuf)"},
      {"clientConnection: 5", "clientConnection: expected a map"},
      // leaderElection.
      {"leaderElection: {leaderElect: maybe}", "leaderElection.leaderElect: must be true or false, got \"maybe\""},
      {"leaderElection: {leaseDuration: 15}",
       "leaderElection.leaseDuration: must be a positive duration like \"15s\", got \"15\""},
      {"leaderElection: {retryPeriod: -2s}",
       "leaderElection.retryPeriod: must be a positive duration like \"15s\", got \"-2s\""},
      {"leaderElection: {leaseDuration: 10s, renewDeadline: 10s}",
       "leaderElection.renewDeadline: must be shorter than leaseDuration"},
      {"leaderElection: {renewDeadline: 10s, retryPeriod: 11s}",
       "leaderElection.retryPeriod: must be shorter than renewDeadline"},
      {"leaderElection: {resourceLock: endpointsleases}",
       "leaderElection.resourceLock: \"endpointsleases\" is not supported (Tessel locks a "
       "coordination.k8s.io Lease: want leases)"},
      {"leaderElection: {resourceName: \"\"}", "leaderElection.resourceName: empty"},
      {"leaderElection: {resourceNamespace: {}}", "leaderElection.resourceNamespace: expected a string"},
      // Backoff and sampling.
      {"podInitialBackoffSeconds: 0", "podInitialBackoffSeconds: must be an integer in 1..2147483648, got \"0\""},
      {"podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 4",
       "podMaxBackoffSeconds: must be at least podInitialBackoffSeconds (5)"},
      {"podInitialBackoffSeconds: 11", "podMaxBackoffSeconds: must be at least podInitialBackoffSeconds (11)"},
      {"percentageOfNodesToScore: 101", "percentageOfNodesToScore: must be an integer in 0..100, got \"101\""},
      {"profiles: [{percentageOfNodesToScore: half}]",
       "profiles[0].percentageOfNodesToScore: must be an integer in 0..100, got \"half\""},
      // Profiles.
      {"profiles: {}", "profiles: expected a list"},
      {"profiles: [{plugins: {scoring: {}}}]", "profiles[0].plugins.scoring: unknown extension point"},
      {"profiles: [{plugins: {score: {enabled: [{name: A, weight: 0}]}}}]",
       "profiles[0].plugins.score.enabled[0].weight: must be an integer in 1..100, got \"0\""},
      {"profiles: [{plugins: {score: {enabled: [{weight: 1}]}}}]",
       "profiles[0].plugins.score.enabled[0]: expected {name: ..., weight: ...}"},
      {"profiles: [{plugins: {score: {enabled: [{name: [A]}]}}}]",
       "profiles[0].plugins.score.enabled[0].name: expected a string"},
      {"profiles: [{plugins: {score: {disabled: [{name: A, weight: 2}]}}}]",
       "profiles[0].plugins.score.disabled[0].weight: not allowed in disabled"},
      {"profiles: [{schedulerName: {a: b}}]", "profiles[0].schedulerName: expected a string"},
      {"profiles: [{schedulerName: \"\"}]", "profiles[0].schedulerName: empty"},
      {"profiles: [{schedulerName: a}, {schedulerName: a}]", "profiles[1].schedulerName: duplicate \"a\""},
      {"profiles: [{pluginConfig: [{name: X}, {name: X}]}]", "profiles[0].pluginConfig[1]: args for \"X\" given twice"},
      {"profiles: [{pluginConfig: [{name: [X]}]}]", "profiles[0].pluginConfig[0].name: expected a string"},
      {"profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {kind: FitArgs}}]}]",
       "profiles[0].pluginConfig[0].args.kind: \"FitArgs\" does not match plugin \"NodeResourcesFit\" "
       "(want NodeResourcesFitArgs)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    auto config = ParseSchedulerConfig(c.yaml);
    REQUIRE_FALSE(config.ok());
    CHECK(std::string(config.status().message()) == "scheduler configuration: " + c.want);
  }
  auto bad = ParseSchedulerConfig("profiles: [[");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::StartsWith("scheduler configuration: not valid YAML: "));
}

TEST_CASE("plugin args of the wrong type are errors naming the field, never a crash", "[config]") {
  struct Case {
    std::string plugin;
    std::string args;  // flow YAML
    std::string want;  // the message after the profile and plugin prefix
  };
  const std::vector<Case> cases = {
      {"NodeResourcesFit", "{scoringStrategy: {type: Fancy}}",
       "args.scoringStrategy.type: unknown \"Fancy\" (want LeastAllocated or MostAllocated)"},
      {"NodeResourcesFit", "{scoringStrtegy: {}}",
       "args.scoringStrtegy: unknown field (known: scoringStrategy, ignoredResources)"},
      {"NodeResourcesFit", "{ignoredResources: [{name: x}]}", "args.ignoredResources[0]: want a string"},
      {"NodeResourcesFit", "{ignoredResources: [[a]]}", "args.ignoredResources[0]: want a string"},
      {"NodeResourcesFit", "{ignoredResources: nvidia.com/gpu}", "args.ignoredResources: want a list of strings"},
      {"NodeResourcesFit", "{scoringStrategy: [MostAllocated]}", "args.scoringStrategy: expected a map"},
      {"NodeResourcesFit", "{scoringStrategy: {type: [MostAllocated]}}", "args.scoringStrategy.type: want a string"},
      {"NodeResourcesFit", "{scoringStrategy: {resources: []}}", "args.scoringStrategy.resources: want a non-empty list"},
      {"NodeResourcesFit", "{scoringStrategy: {resources: [cpu]}}",
       "args.scoringStrategy.resources[0]: want {name: <resource>, weight: 1..100}"},
      {"NodeResourcesFit", "{scoringStrategy: {resources: [{name: {a: 1}}]}}",
       "args.scoringStrategy.resources[0].name: want a string"},
      {"NodeResourcesFit", "{scoringStrategy: {resources: [{name: cpu, weight: heavy}]}}",
       "args.scoringStrategy.resources[0].weight: want an integer in 1..100, got \"heavy\""},
      {"NodeResourcesFit", "{scoringStrategy: {resources: [{name: cpu, wait: 1}]}}",
       "args.scoringStrategy.resources[0].wait: unknown field (known: name, weight)"},
      {"NodeResourcesFit", "{[a]: 1}", "args: a key is not a plain string"},
      {"NodeResourcesFit", "[a, b]", "args: expected a map"},
      {"TaintToleration", "{x: 1}", "args.x: unknown field (the plugin takes no args)"},
      {"FGD", "{targetWorkload: [{numGpu: 1, gpuMilli: 1000, models: [{a: 1}]}]}",
       "args.targetWorkload[0].models[0]: want a string"},
      {"FGD", "{targetWorkload: [{numGpu: 1, gpuMilli: 1000, models: V100}]}",
       "args.targetWorkload[0].models: want a list of strings"},
      {"FGD", "{[targetWorkload]: []}", "args: a key is not a plain string"},
      {"FGD", "{coveragePercent: {a: 1}}", "args.coveragePercent: want an integer in 1..100, got a non-scalar"},
      {"FGD", "{targetWorkload: {a: 1}}", "args.targetWorkload: want a list"},
      {"Tessel", "{targetWorkload: [{numGpu: 1, gpuMilli: 500, models: [[V100]]}]}",
       "args.targetWorkload[0].models[0]: want a string"},
      {"Tessel", "{preserveIdleNodes: [true]}", "args.preserveIdleNodes: want true or false"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.plugin, c.args);
    // Enabled at score so that every plugin here is built, whatever the defaults hold.
    const std::string yaml = StrCat("profiles: [{plugins: {score: {enabled: [{name: ", c.plugin,
                                    "}]}}, pluginConfig: [{name: ", c.plugin, ", args: ", c.args, "}]}]");
    CHECK(FirstError(yaml) == StrCat("profile \"tessel\": pluginConfig \"", c.plugin, "\": ", c.want));
  }
}

TEST_CASE("plugin args may name their kind and apiVersion, as kube-scheduler's do", "[config]") {
  CHECK(FirstError(R"(
apiVersion: kubescheduler.config.k8s.io/v1beta3
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: tessel
  pluginConfig:
  - name: NodeResourcesFit
    args:
      apiVersion: kubescheduler.config.k8s.io/v1beta3
      kind: NodeResourcesFitArgs
      scoringStrategy: {type: LeastAllocated}
)") == "");
}

TEST_CASE("pluginConfig args are merged field by field over the defaults; a list replaces", "[config]") {
  // The shipped defaults give NodeResourcesFit ignoredResources and a scoring strategy with a
  // type and a resource list.
  const YAML::Node defaults = DefaultProfile().plugin_args.at("NodeResourcesFit");
  REQUIRE(defaults["ignoredResources"].size() == 2);
  REQUIRE(defaults["scoringStrategy"]["resources"].size() == 2);
  auto resolve = [](const std::string& args) {
    auto config = ParseSchedulerConfig(
        StrCat("profiles: [{pluginConfig: [{name: NodeResourcesFit, args: ", args, "}]}]"));
    REQUIRE(config.ok());
    return ResolveProfile(config->profiles[0], DefaultProfile()).plugin_args.at("NodeResourcesFit");
  };
  auto strings = [](const YAML::Node& list) {
    std::vector<std::string> out;
    for (const auto& item : list) out.push_back(item.IsMap() ? item["name"].as<std::string>() : item.as<std::string>());
    return out;
  };
  SECTION("a nested list set: it replaces; the sibling scalar and the other fields keep their defaults") {
    // manifests/config.yaml's shape: before the merge, this dropped ignoredResources.
    YAML::Node args = resolve("{scoringStrategy: {resources: [{name: nvidia.com/gpu, weight: 10}]}}");
    CHECK(strings(args["scoringStrategy"]["resources"]) == std::vector<std::string>{"nvidia.com/gpu"});
    CHECK(args["scoringStrategy"]["type"].as<std::string>() == "MostAllocated");
    CHECK(strings(args["ignoredResources"]) == strings(defaults["ignoredResources"]));
  }
  SECTION("a scalar set: it wins; the nested list keeps its default") {
    YAML::Node args = resolve("{scoringStrategy: {type: LeastAllocated}}");
    CHECK(args["scoringStrategy"]["type"].as<std::string>() == "LeastAllocated");
    CHECK(strings(args["scoringStrategy"]["resources"]) == strings(defaults["scoringStrategy"]["resources"]));
    CHECK(strings(args["ignoredResources"]) == strings(defaults["ignoredResources"]));
  }
  SECTION("a top-level list set: it replaces the default list whole") {
    YAML::Node args = resolve("{ignoredResources: [example.com/foo]}");
    CHECK(strings(args["ignoredResources"]) == std::vector<std::string>{"example.com/foo"});
    CHECK(args["scoringStrategy"]["type"].as<std::string>() == "MostAllocated");
  }
  SECTION("the defaults themselves are not changed by a merge") {
    resolve("{ignoredResources: [example.com/foo], scoringStrategy: {type: LeastAllocated}}");
    CHECK(strings(DefaultProfile().plugin_args.at("NodeResourcesFit")["ignoredResources"]) ==
          std::vector<std::string>{"nvidia.com/gpu", "nvidia.com/gpu.shared"});
    CHECK(DefaultProfile().plugin_args.at("NodeResourcesFit")["scoringStrategy"]["type"].as<std::string>() ==
          "MostAllocated");
  }
  SECTION("args for a plugin without default args are taken as given") {
    REQUIRE_FALSE(DefaultProfile().plugin_args.contains("GpuShare"));
    auto config = ParseSchedulerConfig("profiles: [{pluginConfig: [{name: GpuShare, args: {}}]}]");
    REQUIRE(config.ok());
    CHECK(ResolveProfile(config->profiles[0], DefaultProfile()).plugin_args.contains("GpuShare"));
  }
}

TEST_CASE("an unknown plugin under disabled is an error naming it, like one under enabled", "[config]") {
  CHECK(FirstError("profiles: [{plugins: {score: {disabled: [{name: TaintToleration}, {name: NodeResourceFit}]}}}]") ==
        "profile \"tessel\": plugins.score.disabled[1]: unknown plugin \"NodeResourceFit\"");
  CHECK(FirstError("profiles: [{plugins: {filter: {enabled: [{name: NodeResourceFit}]}}}]") ==
        "profile \"tessel\": plugins.filter: unknown plugin \"NodeResourceFit\"");
  CHECK(FirstError("profiles: [{plugins: {score: {disabled: [{name: \"*\"}], enabled: [{name: Tessel}]}}}]") == "");
}

TEST_CASE("disabling a plugin everywhere drops its default args", "[config]") {
  // The shipped defaults give NodeResourcesFit args; it is enabled at filter and score.
  REQUIRE(DefaultProfile().plugin_args.contains("NodeResourcesFit"));
  struct Case {
    std::string name;
    std::string yaml;
    std::string want;  // "" = builds
  };
  const std::vector<Case> cases = {
      {"per point", "profiles: [{plugins: {filter: {disabled: [{name: NodeResourcesFit}]}, "
                    "score: {disabled: [{name: NodeResourcesFit}]}}}]", ""},
      {"with *", "profiles: [{plugins: {filter: {disabled: [{name: \"*\"}], enabled: [{name: GpuShare}]}, "
                 "score: {disabled: [{name: \"*\"}], enabled: [{name: Tessel}]}}}]", ""},
      {"still enabled at one point keeps its args",
       "profiles: [{plugins: {score: {disabled: [{name: NodeResourcesFit}]}}}]", ""},
      {"the user's own args for a plugin no point enables are still an error",
       "profiles: [{plugins: {filter: {disabled: [{name: NodeResourcesFit}]}, score: {disabled: "
       "[{name: NodeResourcesFit}]}}, pluginConfig: [{name: NodeResourcesFit, args: {}}]}]",
       "profile \"tessel\": pluginConfig names \"NodeResourcesFit\", which no extension point enables"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    CHECK(FirstError(c.yaml) == c.want);
  }
  auto config = ParseSchedulerConfig(cases[0].yaml);
  REQUIRE(config.ok());
  ProfileConfig resolved = ResolveProfile(config->profiles[0], DefaultProfile());
  CHECK_FALSE(resolved.plugin_args.contains("NodeResourcesFit"));
  auto kept = ParseSchedulerConfig(cases[2].yaml);
  REQUIRE(kept.ok());
  CHECK(ResolveProfile(kept->profiles[0], DefaultProfile()).plugin_args.contains("NodeResourcesFit"));
}

// Property: in a configuration that uses every section, (a) an unknown key or a key that is not
// a string added to any map and (b) any scalar replaced by a map or a list is an error (from
// parsing or from the plugin), and the message names the path of that key or value. Plugin
// args are named relative to "args".
namespace mutation {

constexpr std::string_view kFullConfig = R"(
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
parallelism: 2
percentageOfNodesToScore: 50
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
clientConnection: {kubeconfig: /etc/k.conf, qps: 100, burst: 200, contentType: application/json, acceptContentTypes: application/json}
leaderElection: {leaderElect: true, leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 4s, resourceLock: leases, resourceName: tessel, resourceNamespace: tessel-system}
profiles:
- schedulerName: tessel
  percentageOfNodesToScore: 70
  plugins:
    score:
      disabled: [{name: TaintToleration}]
      enabled: [{name: NodeResourcesFit, weight: 7}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResources: [nvidia.com/gpu]
      scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 1}]}
- schedulerName: tessel-fgd
  plugins:
    score:
      enabled: [{name: FGD, weight: 3}]
  pluginConfig:
  - name: FGD
    args:
      coveragePercent: 90
      targetWorkload: [{cpuMilli: 4000, gpuMilli: 1000, numGpu: 1, models: [V100], weight: 5}]
)";

struct Site {
  std::string path;
  bool is_map = false;
};

void Collect(const YAML::Node& node, const std::string& path, std::vector<Site>& out) {
  if (node.IsMap()) {
    out.push_back({path, true});
    for (const auto& kv : node) Collect(kv.second, path.empty() ? kv.first.Scalar() : StrCat(path, ".", kv.first.Scalar()), out);
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) Collect(node[i], StrCat(path, "[", i, "]"), out);
  } else {
    out.push_back({path, false});
  }
}

// The node at the n-th site of `root` (same order as Collect).
YAML::Node Find(YAML::Node node, size_t& n) {
  if (node.IsMap()) {
    if (n-- == 0) return node;
    for (auto kv : node) {
      if (YAML::Node found = Find(kv.second, n); found) return found;
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      if (YAML::Node found = Find(node[i], n); found) return found;
    }
  } else if (n-- == 0) {
    return node;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

// The path as the error names it: inside pluginConfig args, relative to "args".
std::string NamedPath(const std::string& path) {
  const std::string marker = ".args";
  size_t at = path.find(".pluginConfig[");
  if (at != std::string::npos) {
    size_t args = path.find(marker, at);
    if (args != std::string::npos) return StrCat("args", path.substr(args + marker.size()));
  }
  return path.empty() ? "(top level)" : path;
}

}  // namespace mutation

TEST_CASE("property: every misplaced key or mistyped value is named by its path", "[config]") {
  using namespace mutation;
  REQUIRE(FirstError(std::string(kFullConfig)) == "");
  std::vector<Site> sites;
  Collect(YAML::Load(std::string(kFullConfig)), "", sites);
  REQUIRE(sites.size() > 50);
  int cases = 0;
  for (size_t i = 0; i < sites.size(); ++i) {
    const Site& site = sites[i];
    std::vector<std::pair<std::string, std::string>> mutants;  // (yaml, path the error names)
    auto mutate = [&](auto change, const std::string& named) {
      YAML::Node root = YAML::Load(std::string(kFullConfig));
      size_t n = i;
      YAML::Node target = Find(root, n);
      REQUIRE(target.IsDefined());
      change(target);
      mutants.emplace_back(YAML::Dump(root), named);
    };
    if (site.is_map) {
      const std::string key_path = site.path.empty() ? "tesselBogus" : StrCat(site.path, ".tesselBogus");
      mutate([](YAML::Node& t) { t["tesselBogus"] = 1; }, NamedPath(key_path));
      mutate([](YAML::Node& t) { t[YAML::Load("[k]")] = 1; }, NamedPath(site.path));
    } else {
      mutate([](YAML::Node& t) { t = YAML::Load("{x: 1}"); }, NamedPath(site.path));
      mutate([](YAML::Node& t) { t = YAML::Load("[1, 2]"); }, NamedPath(site.path));
    }
    for (const auto& [yaml, named] : mutants) {
      CAPTURE(site.path, yaml);
      const std::string error = FirstError(yaml);
      CHECK_THAT(error, Catch::Contains(StrCat(named, ": ")));
      ++cases;
    }
  }
  CHECK(cases > 100);
}
}  // namespace config_test
}  // namespace tessel
