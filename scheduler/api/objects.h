// The Kubernetes objects Tessel schedules with, reduced to the fields scheduling needs.
// They are plain values: decode.h builds them from Kubernetes JSON, and pods carry their
// effective requests (computed once at decode time, the way kube-scheduler computes them).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/api/label_selector.h"
#include "scheduler/api/resources.h"

namespace tessel {

using StringMap = std::map<std::string, std::string, std::less<>>;

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
};

// The object an Event is about (core/v1 ObjectReference, the fields Events carry). A
// cluster-scoped object has no namespace; its Events are written to namespace "default".
struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
};

struct ObjectMeta {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  StringMap labels;
  StringMap annotations;
  absl::Time creation_timestamp = absl::UnixEpoch();
  std::optional<absl::Time> deletion_timestamp;
  std::vector<OwnerReference> owner_references;
};

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
  bool operator==(const Taint&) const = default;
};

struct Toleration {
  enum class Operator { kEqual, kExists };
  std::string key;  // empty with kExists tolerates every taint
  Operator op = Operator::kEqual;
  std::string value;
  std::optional<TaintEffect> effect;  // unset tolerates every effect
  std::optional<int64_t> toleration_seconds;
};

struct NodeSelectorRequirement {
  enum class Operator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
  std::string key;
  Operator op = Operator::kIn;
  std::vector<std::string> values;
};

// Requirements are ANDed; a term with no requirements matches nothing (as in Kubernetes).
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;  // only metadata.name is defined
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;
  NodeSelectorTerm preference;
};

struct NodeAffinity {
  // Terms are ORed. nullopt means "no required affinity"; an empty list matches no node.
  std::optional<std::vector<NodeSelectorTerm>> required;
  std::vector<PreferredSchedulingTerm> preferred;
};

enum class PreemptionPolicy { kPreemptLowerPriority, kNever };

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };

// spec.workloadRef (KEP-4671, scheduling.k8s.io/v1alpha1 Workload, Kubernetes 1.35): the pod
// group of a Workload the pod belongs to; each replica key is a separate group.
struct WorkloadReference {
  std::string name;
  std::string pod_group;
  std::string pod_group_replica_key;
};

// A spec.resourceClaims entry (Dynamic Resource Allocation): the claim the pod names, directly
// or through a template the control plane instantiates per pod (the DynamicResources plugin,
// plugins/dynamic_resources, allocates them).
struct PodResourceClaim {
  std::string name;                      // how the pod's containers refer to it
  std::string resource_claim_name;       // a ResourceClaim in the pod's namespace, or
  std::string resource_claim_template_name;  // a ResourceClaimTemplate
  // For a template: the claim the resourceclaim controller made for the pod, from
  // status.resourceClaimStatuses; nullopt while it has not reported one, "" when it reported
  // that the pod needs none.
  std::optional<std::string> generated_claim_name;
};

// A scheduling.k8s.io PodGroup's spec.resourceClaims entry (DRAWorkloadResourceClaims): a claim its
// pods share, reserved for the PodGroup. A pod uses it through a spec.resourceClaims entry equal
// to it (the same name, and the same claim or template).
struct PodGroupResourceClaim {
  std::string name;
  std::string resource_claim_name;
  std::string resource_claim_template_name;
  bool operator==(const PodGroupResourceClaim&) const = default;
};

// A PodGroup's own claims as DynamicResources reads them: the PodGroup they are reserved for,
// the entries, and the claims the resourceclaim controller made from templates
// (status.resourceClaimStatuses: entry name -> claim; "" when none was needed).
struct PodGroupClaims {
  std::string name;
  std::string uid;
  std::vector<PodGroupResourceClaim> claims;
  std::map<std::string, std::string, std::less<>> generated;
};

struct Container {
  std::string name;
  Resources requests;
  bool restart_always = false;  // an init container with restartPolicy Always is a sidecar
  std::vector<HostPort> host_ports;  // ports[] entries with hostPort > 0
};

// A spec.volumes entry that uses a PersistentVolumeClaim: persistentVolumeClaim.claimName, or a
// generic ephemeral volume (its claim is <pod>-<volume>, see storage.h ClaimNameOf). Other
// volume types are not kept.
struct PodVolume {
  std::string name;
  std::string claim_name;  // "" for an ephemeral volume
  bool ephemeral = false;
};

struct Pod {
  ObjectMeta meta;
  std::string scheduler_name = "default-scheduler";
  std::string node_name;
  StringMap node_selector;
  NodeAffinity node_affinity;
  std::vector<Toleration> tolerations;
  // spec.affinity.podAffinity / podAntiAffinity and spec.topologySpreadConstraints.
  PodAffinityRules pod_affinity;
  PodAffinityRules pod_anti_affinity;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  std::optional<int32_t> priority;
  std::string priority_class_name;
  std::optional<PreemptionPolicy> preemption_policy;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  Resources overhead;
  std::vector<PodVolume> volumes;  // the claims it mounts (scheduler/api/storage.h)
  std::vector<PodResourceClaim> resource_claims;  // spec.resourceClaims (DRA)
  PodPhase phase = PodPhase::kPending;
  // status.startTime (when the kubelet accepted it); preemption prefers younger victims.
  std::optional<absl::Time> start_time;
  std::string nominated_node_name;
  // spec.schedulingGates[].name: while any is set the pod is not scheduled (Kubernetes 1.26+).
  std::vector<std::string> scheduling_gates;
  // The GPU devices chosen for the pod: set by the scheduler when it assumes the pod, and read
  // from the tessel.io/gpu-devices annotation when a pod is decoded (scheduler/api/device_list.h).
  // nullopt: none chosen; the cache then takes the default choice.
  std::optional<std::vector<int32_t>> gpu_devices;
  // Problems in optional fields that did not stop decoding, each naming the field.
  std::vector<std::string> decode_warnings;
  // Gang membership through the upstream APIs (the scheduler-plugins PodGroup is a label):
  // spec.workloadRef (v1alpha1 Workload, Kubernetes 1.35) and spec.schedulingGroup.podGroupName
  // (the scheduling.k8s.io PodGroup: v1alpha2 on 1.36, v1beta1 on 1.37).
  std::optional<WorkloadReference> workload_ref;
  std::string scheduling_group;

  // Effective requests: max(sum(containers) + sum(sidecars), any init container + the sidecars
  // started before it) + overhead, with pods = 1. Filled by ComputePodRequests().
  Resources requests;
  // What its own DRA claims charge its queue (scheduler/state/dra_charge.h); set by the core.
  Resources dra_charge;

  std::string Key() const { return meta.namespace_ + "/" + meta.name; }
  // Key() == key, without building the key.
  bool HasKey(std::string_view key) const {
    return key.size() == meta.namespace_.size() + 1 + meta.name.size() && key.starts_with(meta.namespace_) &&
           key[meta.namespace_.size()] == '/' && key.ends_with(meta.name);
  }
  // The same pod by namespace and name (Key() equality, without building the keys).
  bool SameKey(const Pod& other) const {
    return meta.name == other.meta.name && meta.namespace_ == other.meta.namespace_;
  }
  // The resolved priority (the core fills `priority` from the PriorityClasses on arrival).
  int32_t PriorityValue() const { return priority.value_or(0); }
  bool MayPreempt() const { return preemption_policy != PreemptionPolicy::kNever; }
  bool IsTerminal() const { return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed; }
  ObjectReference Reference() const {
    return {.api_version = "v1", .kind = "Pod", .namespace_ = meta.namespace_, .name = meta.name,
            .uid = meta.uid};
  }
};

// The kubelet's default maxPods, used for nodes whose status does not say.
inline constexpr int64_t kDefaultMaxPods = 110;

enum class ConditionStatus { kTrue, kFalse, kUnknown };

struct Node {
  ObjectMeta meta;
  bool unschedulable = false;
  std::vector<Taint> taints;
  Resources capacity;
  Resources allocatable;
  // status.allocatable "attachable-volumes-csi-<driver>": volumes the driver can attach, by
  // driver (a 0 is kept: nothing attaches; NodeVolumeLimits reads it when the CSINode has none).
  std::map<std::string, int64_t, std::less<>> attach_limits;
  ConditionStatus ready = ConditionStatus::kUnknown;

  const std::string& name() const { return meta.name; }
};

inline constexpr std::string_view kAttachLimitPrefix = "attachable-volumes-csi-";

struct PriorityClass {
  ObjectMeta meta;
  int32_t value = 0;
  bool global_default = false;
  PreemptionPolicy preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
};

// A PodDisruptionBudget as preemption reads it (policy/v1, or v1beta1 before Kubernetes 1.21):
// which pods it covers and how many of them may be disrupted now.
struct PodDisruptionBudget {
  ObjectMeta meta;
  // spec.selector; nil or empty covers no pod (kube-scheduler's reading for preemption).
  std::optional<LabelSelector> selector;
  // status.disruptionsAllowed, kept up to date by the disruption controller.
  int32_t disruptions_allowed = 0;
  // status.disruptedPods: pods whose eviction the API server already granted (not counted again).
  std::vector<std::string> disrupted_pods;

  // The budget covers the pod (same namespace, the selector matches its labels).
  bool Covers(const Pod& pod) const;
};

// Every host port the pod binds: its containers' and init containers' (as kube-scheduler).
std::vector<HostPort> PodHostPorts(const Pod& pod);

// kube-scheduler's request computation (see Pod::requests). Fails on overflow.
absl::StatusOr<Resources> ComputePodRequests(const Pod& pod);

std::string_view TaintEffectName(TaintEffect effect);
// "{key: value}" as kube-scheduler prints an untolerated taint.
std::string FormatTaint(const Taint& taint);

bool ToleratesTaint(const Toleration& toleration, const Taint& taint);
bool ToleratesTaint(const std::vector<Toleration>& tolerations, const Taint& taint);

bool MatchesNodeSelectorTerm(const NodeSelectorTerm& term, const Node& node);
// The pod's nodeSelector and required node affinity both hold for the node.
bool MatchesRequiredNodeAffinity(const Pod& pod, const Node& node);

}  // namespace tessel
