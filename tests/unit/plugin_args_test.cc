// Every plugin's typed args: ParseArgs gives the documented defaults for no args, reads a valid
// value, and names the plugin and the field of a bad one; the registry's adapters make plugins
// from YAML (FactoryOf) and from ready-made args (FactoryWith).
#include <catch2/catch.hpp>

#include <functional>

#include "fake_handle.h"
#include "plugins/best_fit/best_fit.h"
#include "plugins/consolidation/consolidation.h"
#include "plugins/default_preemption/default_preemption.h"
#include "plugins/dot_prod/dot_prod.h"
#include "plugins/fgd/fgd.h"
#include "plugins/gpu_binpack/gpu_binpack.h"
#include "plugins/gpu_clustering/gpu_clustering.h"
#include "plugins/gpu_share/gpu_share.h"
#include "plugins/inter_pod_affinity/inter_pod_affinity.h"
#include "plugins/node_resources_fit/node_resources_fit.h"
#include "plugins/pod_topology_spread/pod_topology_spread.h"
#include "plugins/queue_quota/queue_quota.h"
#include "plugins/random/random.h"
#include "plugins/registry.h"
#include "plugins/reservation/reservation.h"
#include "plugins/taint_toleration/taint_toleration.h"
#include "plugins/tessel_gpu/tessel_gpu.h"
#include "plugins/volume_binding/volume_binding.h"

namespace tessel {
namespace plugin_args_test {

// One plugin with args: `check` gets its args parsed from no args (the defaults) and from
// `valid`; `bad` must fail with `error`.
struct Case {
  std::string plugin;
  std::function<void()> check;
  std::function<absl::Status(const YAML::Node&)> parse;
  std::string bad;
  std::string error;
};

template <typename T, typename Check>
Case Row(std::string valid, Check check, std::string bad, std::string error) {
  return Case{
      .plugin = std::string(T::kName),
      .check =
          [valid, check] {
            CAPTURE(valid);
            absl::StatusOr<typename T::Args> defaults = T::ParseArgs(YAML::Node());
            absl::StatusOr<typename T::Args> given = T::ParseArgs(YAML::Load(valid));
            REQUIRE(defaults.ok());
            REQUIRE(given.ok());
            check(*defaults, *given);
          },
      .parse = [](const YAML::Node& yaml) { return T::ParseArgs(yaml).status(); },
      .bad = std::move(bad),
      .error = std::move(error)};
}

std::vector<Case> Cases() {
  using When = TopologySpreadConstraint::WhenUnsatisfiable;
  return {
      Row<best_fit::BestFit>(
          "{maxCpuMilli: 96000, maxGpuMilli: 4000}",
          [](const best_fit::BestFitArgs& d, const best_fit::BestFitArgs& v) {
            CHECK(d.max_cpu_milli == 128000);
            CHECK(d.max_gpu_milli == 8000);
            CHECK(v.max_cpu_milli == 96000);
            CHECK(v.max_gpu_milli == 4000);
          },
          "{maxGpuMilli: 0}", "BestFit: args.maxGpuMilli: want an integer in 1..4294967296, got \"0\""),
      Row<dot_prod::DotProd>(
          "{maxCpuMilli: 64000}",
          [](const dot_prod::DotProdArgs& d, const dot_prod::DotProdArgs& v) {
            CHECK(d.max_cpu_milli == 128000);
            CHECK(v.max_cpu_milli == 64000);
            CHECK(v.max_gpu_milli == 8000);
          },
          "{maxCpu: 1}", "DotProd: args.maxCpu: unknown field (known: maxCpuMilli, maxGpuMilli)"),
      Row<default_preemption::DefaultPreemption>(
          "{minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 5}",
          [](const default_preemption::DefaultPreemptionArgs& d, const default_preemption::DefaultPreemptionArgs& v) {
            CHECK(d.min_candidate_nodes_percentage == 10);
            CHECK(d.min_candidate_nodes_absolute == 100);
            CHECK(v.min_candidate_nodes_percentage == 0);
            CHECK(v.min_candidate_nodes_absolute == 5);
          },
          "{minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}",
          "DefaultPreemption: args: minCandidateNodesPercentage and minCandidateNodesAbsolute must not both be 0"),
      Row<consolidation::Consolidation>(
          "{minRunSeconds: 0, maxMovesPerPod: 3, moveWindowSeconds: 60, minPodGpus: 0}",
          [](const consolidation::ConsolidationArgs& d, const consolidation::ConsolidationArgs& v) {
            CHECK(d.min_run_seconds == 600);
            CHECK(d.max_moves_per_pod == 1);
            CHECK(d.move_window_seconds == 3600);
            CHECK(d.min_pod_gpus == 2);
            CHECK(v.min_run_seconds == 0);
            CHECK(v.max_moves_per_pod == 3);
            CHECK(v.move_window_seconds == 60);
            CHECK(v.min_pod_gpus == 0);
          },
          "{moveWindowSeconds: 0}", "Consolidation: args.moveWindowSeconds: want an integer in 1..86400, got \"0\""),
      Row<fgd::FGD>(
          "{targetWorkload: [{gpuMilli: 500, numGpu: 1, weight: 3}], coveragePercent: 90, packWholeGpus: true, "
          "cpuShortfallPercent: 250}",
          [](const fgd::FGDArgs& d, const fgd::FGDArgs& v) {
            CHECK(d.workload.classes.empty());  // learned
            CHECK(d.workload.learn_half_life == 2000);
            CHECK(d.workload.coverage_percent == 95);
            CHECK(d.workload.whole_node_prior);
            CHECK(d.sigmoid_scale_milli == 1000);
            CHECK_FALSE(d.preserve_idle_nodes);
            CHECK_FALSE(d.pack_whole_gpus);
            CHECK(d.cpu_shortfall_percent == 0);
            CHECK(v.cpu_shortfall_percent == 250);
            REQUIRE(v.workload.classes.size() == 1);
            CHECK(v.workload.classes[0].gpu_milli == 500);
            CHECK(v.workload.classes[0].weight == 3);
            CHECK(v.workload.coverage_percent == 90);
            CHECK(v.pack_whole_gpus);
          },
          "{targetWorkload: [{gpuMilli: 500, numGpu: 2}]}",
          "FGD: args.targetWorkload[0]: gpuMilli and numGpu disagree (want numGpu 0 with gpuMilli 0, 1 with "
          "1..1000, or >1 with 1000)"),
      Row<tessel_gpu::Tessel>(
          "{preserveIdleNodes: false}",
          [](const tessel_gpu::TesselArgs& d, const tessel_gpu::TesselArgs& v) {
            CHECK(d.sigmoid_scale_milli == 0);  // auto
            CHECK(d.preserve_idle_nodes);
            CHECK(d.pack_whole_gpus);
            CHECK(d.cpu_shortfall_percent == 100);
            CHECK(d.workload.coverage_percent == 95);
            CHECK_FALSE(v.preserve_idle_nodes);
            CHECK(v.cpu_shortfall_percent == 100);
            CHECK(v.pack_whole_gpus);  // the other defaults stay Tessel's
            CHECK(v.sigmoid_scale_milli == 0);
          },
          "{sigmoidScaleMilli: 0}", "Tessel: args.sigmoidScaleMilli: want an integer in 1..1000000, got \"0\""),
      Row<gpu_binpack::GpuBinPack>(
          "{gpuWeight: 0, cpuWeight: 3}",
          [](const gpu_binpack::GpuBinPackArgs& d, const gpu_binpack::GpuBinPackArgs& v) {
            CHECK(d.gpu_weight == 9);
            CHECK(d.cpu_weight == 1);
            CHECK(v.gpu_weight == 0);
            CHECK(v.cpu_weight == 3);
          },
          "{gpuWeight: 0, cpuWeight: 0}", "GpuBinPack: args.gpuWeight: gpuWeight + cpuWeight must be > 0"),
      Row<gpu_clustering::GpuClustering>(
          "{maxGpuMilli: 4000}",
          [](const gpu_clustering::GpuClusteringArgs& d, const gpu_clustering::GpuClusteringArgs& v) {
            CHECK(d.max_gpu_milli == 8000);
            CHECK(v.max_gpu_milli == 4000);
          },
          "{maxGpuMilli: lots}", "GpuClustering: args.maxGpuMilli: want an integer in 1..4294967296, got \"lots\""),
      Row<gpu_share::GpuShare>(
          "{annotateDevices: false}",
          [](const gpu_share::GpuShareArgs& d, const gpu_share::GpuShareArgs& v) {
            CHECK(d.annotate_devices);
            CHECK_FALSE(v.annotate_devices);
          },
          "{annotateDevices: sometimes}", "GpuShare: args.annotateDevices: want true or false"),
      Row<inter_pod_affinity::InterPodAffinity>(
          "{hardPodAffinityWeight: 5, ignorePreferredTermsOfExistingPods: true}",
          [](const inter_pod_affinity::InterPodAffinityArgs& d, const inter_pod_affinity::InterPodAffinityArgs& v) {
            CHECK(d.hard_pod_affinity_weight == 1);
            CHECK_FALSE(d.ignore_preferred_terms_of_existing_pods);
            CHECK(v.hard_pod_affinity_weight == 5);
            CHECK(v.ignore_preferred_terms_of_existing_pods);
          },
          "{hardPodAffinityWeight: 101}",
          "InterPodAffinity: args.hardPodAffinityWeight: want an integer in 0..100, got \"101\""),
      Row<node_resources_fit::NodeResourcesFit>(
          "{scoringStrategy: {type: MostAllocated, resources: [{name: nvidia.com/gpu, weight: 3}]}, "
          "ignoredResources: [example.com/foo]}",
          [](const node_resources_fit::NodeResourcesFitArgs& d, const node_resources_fit::NodeResourcesFitArgs& v) {
            CHECK(d.strategy == node_resources_fit::Strategy::kLeastAllocated);
            REQUIRE(d.resources.size() == 2);
            CHECK(d.resources[0].name == "cpu");
            CHECK(d.resources[1].name == "memory");
            CHECK(d.ignored.empty());
            CHECK(v.strategy == node_resources_fit::Strategy::kMostAllocated);
            REQUIRE(v.resources.size() == 1);
            CHECK(v.resources[0].name == "nvidia.com/gpu");
            CHECK(v.resources[0].weight == 3);
            CHECK(v.ignored == std::vector<std::string>{"example.com/foo"});
          },
          "{scoringStrategy: {resources: [{name: cpu, weight: 0}]}}",
          "NodeResourcesFit: args.scoringStrategy.resources[0].weight: want an integer in 1..100, got \"0\""),
      Row<pod_topology_spread::PodTopologySpread>(
          "{defaultingType: List, defaultConstraints: [{maxSkew: 2, topologyKey: zone, whenUnsatisfiable: "
          "ScheduleAnyway}]}",
          [](const pod_topology_spread::PodTopologySpreadArgs& d, const pod_topology_spread::PodTopologySpreadArgs& v) {
            using Defaulting = pod_topology_spread::PodTopologySpreadArgs::Defaulting;
            CHECK(d.defaulting == Defaulting::kSystem);
            CHECK(d.default_constraints.empty());
            CHECK(v.defaulting == Defaulting::kList);
            REQUIRE(v.default_constraints.size() == 1);
            CHECK(v.default_constraints[0].max_skew == 2);
            CHECK(v.default_constraints[0].topology_key == "zone");
            CHECK(v.default_constraints[0].when_unsatisfiable == When::kScheduleAnyway);
          },
          "{defaultingType: List, defaultConstraints: [{maxSkew: 1, whenUnsatisfiable: DoNotSchedule}]}",
          "PodTopologySpread: args.defaultConstraints[0].topologyKey: missing"),
      Row<queue_quota::QueueQuota>(
          "{podsWithoutQueue: Reject}",
          [](const queue_quota::QueueQuotaArgs& d, const queue_quota::QueueQuotaArgs& v) {
            CHECK_FALSE(d.reject_pods_without_queue);
            CHECK(v.reject_pods_without_queue);
          },
          "{podsWithoutQueue: Sometimes}",
          "QueueQuota: args.podsWithoutQueue: \"Sometimes\" is not one of Allow, Reject"),
      Row<reservation::Reservation>(
          "{waitSeconds: 300, minPodGpus: 2}",
          [](const reservation::ReservationArgs& d, const reservation::ReservationArgs& v) {
            CHECK(d.wait_seconds == 0);  // off unless asked for
            CHECK(d.min_pod_gpus == 0);
            CHECK(v.wait_seconds == 300);
            CHECK(v.min_pod_gpus == 2);
          },
          "{waitSeconds: -1}", "Reservation: args.waitSeconds: want an integer in 0..2147483647, got \"-1\""),
      Row<random::Random>(
          "{seed: 7}",
          [](const random::RandomArgs& d, const random::RandomArgs& v) {
            CHECK_FALSE(d.seed.has_value());  // the scheduler's
            CHECK(v.seed == 7u);
          },
          "{seed: -2}", "Random: args.seed: want an integer in -1..9223372036854775807, got \"-2\""),
      Row<volume_binding::VolumeBinding>(
          "{bindTimeoutSeconds: 0}",
          [](const volume_binding::VolumeBindingArgs& d, const volume_binding::VolumeBindingArgs& v) {
            CHECK(d.bind_timeout == absl::Seconds(600));
            CHECK(v.bind_timeout == absl::ZeroDuration());
          },
          "{bindTimeoutSeconds: [600]}",
          "VolumeBinding: args.bindTimeoutSeconds: want an integer in 0..86400, got a non-scalar"),
  };
}

TEST_CASE("every plugin with args: defaults, a valid value, and a bad field naming plugin and field",
          "[plugins][args]") {
  const std::vector<Case> cases = Cases();
  CHECK(cases.size() == 16);
  for (const Case& c : cases) {
    CAPTURE(c.plugin);
    c.check();
    absl::Status bad = c.parse(YAML::Load(c.bad));
    CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
    CHECK(bad.message() == c.error);
    // Args that are not a map at all.
    CHECK(c.parse(YAML::Load("[1, 2]")).message() == c.plugin + ": args: expected a map");
  }
}

TEST_CASE("FGD: a target workload's weights sum to at most 2^40, so fragmentation stays in 64 bits",
          "[plugins][args]") {
  // 2^40 in one class is allowed; one more anywhere is refused, naming the item and its field.
  CHECK(fgd::FGD::ParseArgs(YAML::Load("{targetWorkload: [{gpuMilli: 500, numGpu: 1, weight: 1099511627776}]}")).ok());
  const auto over = fgd::FGD::ParseArgs(YAML::Load(
      "{targetWorkload: [{gpuMilli: 500, numGpu: 1, weight: 1099511627776}, {gpuMilli: 1000, numGpu: 1}]}"));
  CHECK(over.status().message() ==
        "FGD: args.targetWorkload[1].weight: the weights of targetWorkload[0..1] sum to 1099511627777, more than "
        "1099511627776");
  CHECK_FALSE(tessel_gpu::Tessel::ParseArgs(YAML::Load("{cpuShortfallPercent: 10001}")).ok());
  CHECK_FALSE(tessel_gpu::Tessel::ParseArgs(YAML::Load("{cpuShortfallPercent: -1}")).ok());
}

TEST_CASE("every in-tree plugin is registered and made from no args", "[plugins][args]") {
  const Registry registry = InTreeRegistry();
  testing::FakeHandle handle;
  CHECK(registry.Names().size() == 28);  // DynamicResources is the 28th
  for (const std::string& name : registry.Names()) {
    CAPTURE(name);
    auto made = (*registry.Find(name))(YAML::Node(), handle);
    REQUIRE(made.ok());
    CHECK((*made)->Name() == name);
  }
}

TEST_CASE("a plugin without args takes none", "[plugins][args]") {
  CHECK(ParsePluginArgs<taint_toleration::TaintToleration>(YAML::Node()).ok());
  CHECK(ParsePluginArgs<taint_toleration::TaintToleration>(YAML::Load("{x: 1}")).status().message() ==
        "TaintToleration: args.x: unknown field (the plugin takes no args)");
}

TEST_CASE("the registry's factories: from YAML (the framework names the plugin) and from ready-made args",
          "[plugins][args]") {
  testing::FakeHandle handle;
  // From YAML: the framework prefixes `pluginConfig "GpuShare": `, so the factory's error does
  // not name the plugin a second time.
  auto bad = FactoryOf<gpu_share::GpuShare>()(YAML::Load("{annotateDevices: sometimes}"), handle);
  CHECK(bad.status().message() == "args.annotateDevices: want true or false");

  // Ready-made args: no YAML anywhere.
  Registry registry = InTreeRegistry();
  fgd::FGDArgs args;
  args.sigmoid_scale_milli = 1234;
  REQUIRE(registry.Replace(fgd::FGD::kName, FactoryWith<fgd::FGD>(args)).ok());
  auto made = (*registry.Find("FGD"))(YAML::Node(), handle);
  REQUIRE(made.ok());
  auto* fgd = dynamic_cast<fgd::FGD*>(made->get());
  REQUIRE(fgd != nullptr);
  CHECK(fgd->scale_milli() == 1234);
  // A configuration may not give such a plugin args as well.
  CHECK((*registry.Find("FGD"))(YAML::Load("{coveragePercent: 90}"), handle).status().message() ==
        "args: this plugin's args are set by the program running it");
  // Tessel's own defaults hold when its args are made in code.
  auto tessel = MakePlugin<tessel_gpu::Tessel>(tessel_gpu::TesselArgs{}, handle);
  REQUIRE(tessel.ok());
  CHECK((*tessel)->Name() == "Tessel");
  CHECK(dynamic_cast<fgd::FGD*>(tessel->get())->scale_milli() == 1000);  // auto, with no workload yet

  CHECK(registry.Replace("NoSuchPlugin", FactoryWith<gpu_share::GpuShare>({})).code() ==
        absl::StatusCode::kNotFound);
}

}  // namespace plugin_args_test
}  // namespace tessel
