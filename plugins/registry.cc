// The in-tree registry. Registration is explicit: no static initialisers.
#include "plugins/registry.h"

#include <cstdlib>
#include <iostream>

#include "plugins/best_fit/best_fit.h"
#include "plugins/default_binder/default_binder.h"
#include "plugins/consolidation/consolidation.h"
#include "plugins/default_preemption/default_preemption.h"
#include "plugins/dot_prod/dot_prod.h"
#include "plugins/dynamic_resources/dynamic_resources.h"
#include "plugins/fgd/fgd.h"
#include "plugins/gpu_binpack/gpu_binpack.h"
#include "plugins/gpu_clustering/gpu_clustering.h"
#include "plugins/gpu_packing/gpu_packing.h"
#include "plugins/gpu_share/gpu_share.h"
#include "plugins/inter_pod_affinity/inter_pod_affinity.h"
#include "plugins/node_affinity/node_affinity.h"
#include "plugins/node_name/node_name.h"
#include "plugins/node_ports/node_ports.h"
#include "plugins/node_resources_fit/node_resources_fit.h"
#include "plugins/node_unschedulable/node_unschedulable.h"
#include "plugins/node_volume_limits/node_volume_limits.h"
#include "plugins/pod_topology_spread/pod_topology_spread.h"
#include "plugins/priority_sort/priority_sort.h"
#include "plugins/queue_quota/queue_quota.h"
#include "plugins/random/random.h"
#include "plugins/reservation/reservation.h"
#include "plugins/taint_toleration/taint_toleration.h"
#include "plugins/tessel_gpu/tessel_gpu.h"
#include "plugins/volume_binding/volume_binding.h"
#include "plugins/volume_restrictions/volume_restrictions.h"
#include "plugins/volume_zone/volume_zone.h"

namespace tessel {

Registry InTreeRegistry() {
  Registry r;
  auto add = [&r](std::string_view name, PluginFactory f) {
    if (absl::Status st = r.Register(name, std::move(f)); !st.ok()) {
      std::cerr << "tessel: " << st.message() << "\n";  // a programming error: fail loudly
      std::abort();
    }
  };
  add(priority_sort::PrioritySort::kName, FactoryOf<priority_sort::PrioritySort>());
  add(node_name::NodeName::kName, FactoryOf<node_name::NodeName>());
  add(node_unschedulable::NodeUnschedulable::kName, FactoryOf<node_unschedulable::NodeUnschedulable>());
  add(node_affinity::NodeAffinity::kName, FactoryOf<node_affinity::NodeAffinity>());
  add(taint_toleration::TaintToleration::kName, FactoryOf<taint_toleration::TaintToleration>());
  add(node_resources_fit::NodeResourcesFit::kName, FactoryOf<node_resources_fit::NodeResourcesFit>());
  add(default_binder::DefaultBinder::kName, FactoryOf<default_binder::DefaultBinder>());
  add(default_preemption::DefaultPreemption::kName, FactoryOf<default_preemption::DefaultPreemption>());
  add(consolidation::Consolidation::kName, FactoryOf<consolidation::Consolidation>());
  // Pod-to-pod placement rules, as kube-scheduler (docs/kube-scheduler-parity.md).
  add(node_ports::NodePorts::kName, FactoryOf<node_ports::NodePorts>());
  add(inter_pod_affinity::InterPodAffinity::kName, FactoryOf<inter_pod_affinity::InterPodAffinity>());
  add(pod_topology_spread::PodTopologySpread::kName, FactoryOf<pod_topology_spread::PodTopologySpread>());
  // Volumes: claims, their PVs' topology, ReadWriteOncePod, attach limits
  // (docs/kube-scheduler-parity.md).
  add(volume_binding::VolumeBinding::kName, FactoryOf<volume_binding::VolumeBinding>());
  add(volume_zone::VolumeZone::kName, FactoryOf<volume_zone::VolumeZone>());
  add(volume_restrictions::VolumeRestrictions::kName, FactoryOf<volume_restrictions::VolumeRestrictions>());
  add(node_volume_limits::NodeVolumeLimits::kName, FactoryOf<node_volume_limits::NodeVolumeLimits>());
  // DRA claims: held until Tessel allocates them (docs/kube-scheduler-parity.md).
  add(dynamic_resources::DynamicResources::kName, FactoryOf<dynamic_resources::DynamicResources>());
  // Team queues: quota with cohort borrowing and reclaim (docs/quota.md).
  add(queue_quota::QueueQuota::kName, FactoryOf<queue_quota::QueueQuota>());
  // Room for big jobs: reservation against starvation (docs/defrag.md).
  add(reservation::Reservation::kName, FactoryOf<reservation::Reservation>());
  // GPUs: device-level fit and sharing, then one placement policy per plugin.
  add(gpu_share::GpuShare::kName, FactoryOf<gpu_share::GpuShare>());
  add(tessel_gpu::Tessel::kName, FactoryOf<tessel_gpu::Tessel>());
  add(gpu_binpack::GpuBinPack::kName, FactoryOf<gpu_binpack::GpuBinPack>());
  add(best_fit::BestFit::kName, FactoryOf<best_fit::BestFit>());
  add(fgd::FGD::kName, FactoryOf<fgd::FGD>());
  add(random::Random::kName, FactoryOf<random::Random>());
  add(dot_prod::DotProd::kName, FactoryOf<dot_prod::DotProd>());
  add(gpu_clustering::GpuClustering::kName, FactoryOf<gpu_clustering::GpuClustering>());
  add(gpu_packing::GpuPacking::kName, FactoryOf<gpu_packing::GpuPacking>());
  return r;
}

}  // namespace tessel
