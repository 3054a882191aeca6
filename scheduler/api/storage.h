// The storage objects volume scheduling reads (PersistentVolumeClaim, PersistentVolume,
// storage.k8s.io/v1 StorageClass and CSINode) and the Namespace (labels only, for pod affinity's
// namespaceSelector), reduced to the fields scheduling needs, with the rules kube-scheduler's
// volume plugins apply to them. decode.h builds them from Kubernetes JSON.
//
//   if (claim.bound()) CheckVolumeNodeAffinity(*volume, node);   // the PV's nodeAffinity holds
//   MatchesTopology(storage_class.allowed_topologies, node);       // WaitForFirstConsumer
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/api/objects.h"

namespace tessel {

// The annotation the scheduler writes on a WaitForFirstConsumer claim to tell the provisioner
// (and the PV controller) which node the pod goes to.
inline constexpr std::string_view kSelectedNodeAnnotation = "volume.kubernetes.io/selected-node";
// Set by the PV controller once it finished binding a claim.
inline constexpr std::string_view kBindCompletedAnnotation = "pv.kubernetes.io/bind-completed";
// The provisioner name of classes that only bind pre-created (local) volumes.
inline constexpr std::string_view kNoProvisioner = "kubernetes.io/no-provisioner";

// spec.accessModes as a bit set.
enum AccessMode : uint8_t {
  kReadWriteOnce = 1u << 0,
  kReadOnlyMany = 1u << 1,
  kReadWriteMany = 1u << 2,
  kReadWriteOncePod = 1u << 3,  // Kubernetes 1.22+ (decoded also where the server lacks it)
};

enum class VolumeMode { kFilesystem, kBlock };
enum class VolumeBindingMode { kImmediate, kWaitForFirstConsumer };

struct PersistentVolumeClaim {
  ObjectMeta meta;
  uint8_t access_modes = 0;
  // The class: spec.storageClassName, or the older volume.beta.kubernetes.io/storage-class
  // annotation; "" is no class (only volumes without a class bind it).
  std::string storage_class;
  std::string volume_name;          // spec.volumeName: the PV it is (being) bound to
  int64_t request_bytes = 0;        // spec.resources.requests.storage
  std::optional<LabelSelector> selector;  // spec.selector over PV labels; nullopt: any volume
  VolumeMode volume_mode = VolumeMode::kFilesystem;
  bool phase_bound = false;         // status.phase == Bound

  std::string Key() const { return meta.namespace_ + "/" + meta.name; }
  // Bound, as the scheduler's filters read it: a volume is named (kube's pvc.Spec.VolumeName).
  bool bound() const { return !volume_name.empty(); }
  // Binding finished, as the scheduler waits for it before it binds the pod.
  bool fully_bound() const {
    return bound() && (phase_bound || meta.annotations.contains(kBindCompletedAnnotation));
  }
  std::string selected_node() const;
};

struct ClaimReference {
  std::string namespace_;
  std::string name;
  std::string uid;
};

struct PersistentVolume {
  ObjectMeta meta;
  uint8_t access_modes = 0;
  int64_t capacity_bytes = 0;       // spec.capacity.storage
  std::string storage_class;        // spec.storageClassName
  std::optional<ClaimReference> claim_ref;
  // spec.nodeAffinity.required.nodeSelectorTerms (ORed); nullopt: any node.
  std::optional<std::vector<NodeSelectorTerm>> node_affinity;
  VolumeMode volume_mode = VolumeMode::kFilesystem;
  std::string phase;                // status.phase: Available, Bound, Released, Failed, Pending
  // spec.csi: the CSI driver that attaches the volume, and its handle; empty for other sources.
  std::string csi_driver;
  std::string csi_volume_handle;

  const std::string& name() const { return meta.name; }
};

// A term of StorageClass.allowedTopologies: every expression holds (key's value among values).
struct TopologySelectorTerm {
  struct Requirement {
    std::string key;
    std::vector<std::string> values;
  };
  std::vector<Requirement> match_label_expressions;
};

struct StorageClass {
  ObjectMeta meta;
  std::string provisioner;
  VolumeBindingMode binding_mode = VolumeBindingMode::kImmediate;
  std::vector<TopologySelectorTerm> allowed_topologies;  // empty: every node

  const std::string& name() const { return meta.name; }
};

struct Namespace {
  ObjectMeta meta;
};

// storage.k8s.io/v1 CSINode (named after its node): how many volumes each CSI driver on the node
// can attach (spec.drivers[].allocatable.count; nullopt: the driver reports no limit).
struct CSINode {
  struct Driver {
    std::string name;
    std::optional<int64_t> allocatable_count;
  };
  ObjectMeta meta;
  std::vector<Driver> drivers;

  const std::string& name() const { return meta.name; }
  // The driver's limit on this node, if it reports one.
  std::optional<int64_t> LimitOf(std::string_view driver) const;
};

// "ReadWriteOnce,ReadWriteOncePod" -> bits; unknown names are an error at decode time.
std::optional<AccessMode> ParseAccessMode(std::string_view name);

// The PV's required node affinity holds on the node (kube's CheckNodeAffinity).
bool VolumeNodeAffinityMatches(const PersistentVolume& volume, const Node& node);
// allowedTopologies: empty allows every node; else some term matches the node's labels.
bool MatchesTopology(const std::vector<TopologySelectorTerm>& terms, const Node& node);

// The claim a pod volume uses: its persistentVolumeClaim.claimName, or for a generic ephemeral
// volume the claim the ephemeral volume controller creates (<pod>-<volume>).
std::string ClaimNameOf(const Pod& pod, const PodVolume& volume);
// The pod uses at least one claim.
bool UsesClaims(const Pod& pod);

// A static volume can serve the claim: not claimed by another (or pre-bound to this claim),
// same class and volume mode, the claim's access modes, enough capacity, the claim's selector,
// not being deleted. Node affinity is checked separately.
bool VolumeCanServe(const PersistentVolume& volume, const PersistentVolumeClaim& claim);

// The zone and region labels VolumeZone compares between a PV and a node.
inline constexpr std::string_view kTopologyLabels[] = {
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"};

}  // namespace tessel
