// The default profile, written as configuration so that it reads like what users write.
#include <cstdlib>
#include <iostream>

#include "plugins/registry.h"

namespace tessel {

std::string_view DefaultConfigYaml() {
  return R"(apiVersion: tessel.io/v1alpha1
kind: TesselSchedulerConfiguration
profiles:
- schedulerName: tessel
  plugins:
    queueSort:
      enabled: [{name: PrioritySort}]
    # DynamicResources resolves the pod's DRA claims (plugins/dynamic_resources).
    preFilter:
      enabled:
      - {name: DynamicResources}
      - {name: QueueQuota}
      - {name: NodePorts}
      - {name: PodTopologySpread}
      - {name: InterPodAffinity}
      - {name: VolumeRestrictions}
      - {name: NodeVolumeLimits}
      - {name: VolumeBinding}
      - {name: VolumeZone}
      - {name: GpuShare}
      - {name: Tessel}
      - {name: Reservation}
    # QueueQuota filters first, so a pod its team's quota blocks is rejected by it on every
    # node and is reported as QuotaExceeded, not as missing capacity (docs/quota.md).
    filter:
      enabled:
      - {name: QueueQuota}
      - {name: NodeUnschedulable}
      - {name: NodeName}
      - {name: TaintToleration}
      - {name: NodeAffinity}
      - {name: NodePorts}
      - {name: NodeResourcesFit}
      - {name: VolumeRestrictions}
      - {name: NodeVolumeLimits}
      - {name: VolumeBinding}
      - {name: VolumeZone}
      - {name: DynamicResources}
      - {name: GpuShare}
      - {name: PodTopologySpread}
      - {name: InterPodAffinity}
      - {name: Reservation}
    # Reservation comes last: it only notes how long a pod has waited and, for the longest
    # waiter of its priority level, reserves a node (docs/defrag.md); it never places a pod.
    postFilter:
      enabled: [{name: DefaultPreemption}, {name: Consolidation}, {name: Reservation}]
    preScore:
      enabled:
      - {name: PodTopologySpread}
      - {name: InterPodAffinity}
      - {name: GpuShare}
      - {name: Tessel}
      - {name: DynamicResources}
    # A pod's stated preferences (preferred affinity, PreferNoSchedule taints) weigh as much as
    # the GPU packing policy, as in kube-scheduler where they outweigh resource scoring.
    # GpuShare sends pods that opted into sharing to shared room and other GPU pods to exclusive
    # GPUs first; its weight makes that preference win whatever the others say
    # (80 x 50 > 100 x (10 + 10 + 1 + 2 + 2 + 10 + 4)). Tessel scores DRA nodes by the same
    # gradient as device-plugin nodes (one cluster); DynamicResources scores only in profiles
    # without a GPU policy, where it packs DRA devices for pods with claims.
    score:
      enabled:
      - {name: TaintToleration, weight: 10}
      - {name: NodeAffinity, weight: 10}
      - {name: NodeResourcesFit, weight: 1}
      # kube-scheduler's default weights for the pod-to-pod rules.
      - {name: PodTopologySpread, weight: 2}
      - {name: InterPodAffinity, weight: 2}
      - {name: GpuShare, weight: 50}
      - {name: Tessel, weight: 10}
      - {name: DynamicResources, weight: 4}
    reserve:
      enabled: [{name: QueueQuota}, {name: GpuShare}, {name: VolumeBinding}, {name: DynamicResources},
                {name: Reservation}]
    # VolumeBinding writes the claims' selected node and waits for them to bind (see
    # plugins/volume_binding); DynamicResources writes the DRA claims' allocation and reservedFor;
    # GpuShare only adds an annotation to the bind.
    preBind:
      enabled: [{name: VolumeBinding}, {name: DynamicResources}, {name: GpuShare}]
    bind:
      enabled: [{name: DefaultBinder}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      # GPUs are fitted per device by GpuShare (a fraction requests nvidia.com/gpu: 1 but holds less).
      ignoredResources: [nvidia.com/gpu, nvidia.com/gpu.shared]
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
)";
}

const ProfileConfig& DefaultProfile() {
  static const ProfileConfig* profile = [] {
    auto config = ParseSchedulerConfig(DefaultConfigYaml());
    if (!config.ok() || config->profiles.size() != 1) {
      std::cerr << "tessel: the built-in default configuration is invalid\n";
      std::abort();
    }
    return new ProfileConfig(config->profiles.front());
  }();
  return *profile;
}

}  // namespace tessel
