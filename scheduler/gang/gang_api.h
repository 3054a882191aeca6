// Gangs (all-or-nothing groups of pods) as the Kubernetes APIs declare them, decoded from JSON:
//
//   - the scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1): spec.minMember,
//     spec.scheduleTimeoutSeconds, spec.minResources; pods join with the label
//     scheduling.x-k8s.io/pod-group: NAME;
//   - KEP-4671's Workload (scheduling.k8s.io/v1alpha1, Kubernetes 1.35):
//     spec.podGroups[].policy.gang.minCount; pods join with spec.workloadRef {name, podGroup,
//     podGroupReplicaKey}, and every replica key is a gang of its own;
//   - its successor, the scheduling.k8s.io PodGroup (v1alpha2 on Kubernetes 1.36; v1beta1, or
//     v1alpha3, on 1.37): spec.schedulingPolicy.gang.minCount, spec.schedulingConstraints
//     .topology[].key (compact placement), spec.preemptionPolicy; pods join with
//     spec.schedulingGroup.podGroupName. What Tessel does not honour of it (a parent
//     CompositePodGroup, PodGroup resource claims, a priority other than the members') is
//     listed in GangSpec::unsupported and reported on the PodGroup's status;
//   - implicit gangs: a pod owned by a Job whose annotation tessel.io/min-available: N is set
//     (on the Job, or on the pod through the Job's pod template) belongs to the gang named after
//     that Job. A JobSet's Jobs are Jobs, so this covers them too.
// Any of these objects may carry tessel.io/topology-key: LABEL for compact placement.
//
//   std::optional<GangId> id = DeclaredGang(pod);            // what the pod asks to join
//   absl::StatusOr<PodGroup> pg = DecodePodGroup(json);      // errors name object and field
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json_fwd.hpp"
#include "scheduler/api/objects.h"

namespace tessel::gang {

inline constexpr std::string_view kPodGroupLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr std::string_view kMinAvailableAnnotation = "tessel.io/min-available";
inline constexpr std::string_view kTopologyKeyAnnotation = "tessel.io/topology-key";

inline constexpr std::string_view kPodGroupApiVersion = "scheduling.x-k8s.io/v1alpha1";
inline constexpr std::string_view kWorkloadApiVersion = "scheduling.k8s.io/v1alpha1";
inline constexpr std::string_view kSchedulingPodGroupApiVersion = "scheduling.k8s.io/v1alpha2";
inline constexpr std::string_view kSchedulingPodGroupV1alpha3 = "scheduling.k8s.io/v1alpha3";
inline constexpr std::string_view kSchedulingPodGroupV1beta1 = "scheduling.k8s.io/v1beta1";
// The versions of the scheduling.k8s.io PodGroup Tessel reads, newest first (one shape: the
// fields v1alpha2 lacks are absent from its objects). A server serves one or several of them;
// Tessel reads the newest it serves (scheduler/kube/discovery.h).
inline constexpr std::array<std::string_view, 3> kSchedulingPodGroupVersions = {
    kSchedulingPodGroupV1beta1, kSchedulingPodGroupV1alpha3, kSchedulingPodGroupApiVersion};
bool IsSchedulingPodGroupApiVersion(std::string_view api_version);
// The condition upstream's PodGroup status carries (True once the gang was first placed; it
// never turns False again), and the one Tessel adds for what it does not honour.
inline constexpr std::string_view kInitiallyScheduledCondition = "PodGroupInitiallyScheduled";
inline constexpr std::string_view kUnsupportedCondition = "tessel.io/Unsupported";

// Which API declares the gang.
enum class GangKind { kPodGroup, kWorkload, kSchedulingPodGroup, kJob };

// Names one gang. Ordered and comparable so it can key maps.
struct GangId {
  GangKind kind = GangKind::kPodGroup;
  std::string namespace_;
  std::string name;         // the PodGroup, Workload or Job
  std::string pod_group;    // Workload: the pod group within it
  std::string replica_key;  // Workload: spec.workloadRef.podGroupReplicaKey ("" for none)

  // A unique map key, e.g. "podgroup:team-a/train", "workload:team-a/w/workers/0".
  std::string Key() const;
  // How messages name it: "PodGroup team-a/train", "Workload team-a/w pod group workers
  // (replica 0)", "Job team-a/sweep".
  std::string Describe() const;
  auto operator<=>(const GangId&) const = default;
  bool operator==(const GangId&) const = default;
};

// The gang a pod asks to join, if any: the PodGroup label first, then spec.workloadRef, then
// spec.schedulingGroup, then its controlling Job (which is a gang only if the Job or the pod
// carries tessel.io/min-available; see GangBook::Resolve).
std::optional<GangId> DeclaredGang(const Pod& pod);

// scheduler-plugins PodGroup status, as Tessel writes it.
struct PodGroupStatus {
  std::string phase;  // Pending, Scheduling, Scheduled, Running, Finished, Failed, Unknown
  int32_t scheduled = 0;
  int32_t running = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
};

// scheduling.x-k8s.io/v1alpha1 PodGroup.
struct PodGroup {
  ObjectMeta meta;
  int32_t min_member = 0;
  std::optional<int32_t> schedule_timeout_seconds;
  Resources min_resources;
  PodGroupStatus status;
};

// One entry of a Workload's spec.podGroups; gang_min_count is unset for the basic policy.
struct WorkloadPodGroup {
  std::string name;
  std::optional<int32_t> gang_min_count;
};

// scheduling.k8s.io/v1alpha1 Workload.
struct Workload {
  ObjectMeta meta;
  std::vector<WorkloadPodGroup> pod_groups;
};

// The scheduling.k8s.io PodGroup (v1alpha2, v1alpha3, v1beta1); gang_min_count is unset for
// the basic policy.
struct SchedulingPodGroup {
  ObjectMeta meta;
  std::string api_version;
  std::optional<int32_t> gang_min_count;
  std::string topology_key;  // spec.schedulingConstraints.topology[0].key ("" for none)
  // spec.disruptionMode: Tessel's preemption evicts a gang's members together in either mode.
  enum class DisruptionMode { kUnset, kSingle, kAll };
  DisruptionMode disruption_mode = DisruptionMode::kUnset;
  std::string priority_class_name;
  std::optional<int32_t> priority;
  std::optional<PreemptionPolicy> preemption_policy;
  // spec.resourceClaims (DRAWorkloadResourceClaims): claims the group's pods share, reserved for
  // the PodGroup; status.resourceClaimStatuses: the claim made from a template (name -> claim;
  // "" when none was needed; absent until the resourceclaim controller made it).
  std::vector<PodGroupResourceClaim> resource_claims;
  std::map<std::string, std::string, std::less<>> generated_claims;
  std::string parent_composite_pod_group;    // spec.parentCompositePodGroupName
  std::string workload_name;                 // spec.workloadRef.workloadName
  std::string template_name;                 // spec.workloadRef.templateName
  // status.conditions PodGroupInitiallyScheduled: once True it stays True (upstream's rule).
  bool initially_scheduled = false;
};

// What Tessel does not honour of the PodGroup, each naming the field; empty when it honours all.
std::vector<std::string> Unsupported(const SchedulingPodGroup& pg);

// A Job, reduced to what implicit gangs need.
struct JobInfo {
  ObjectMeta meta;
  std::optional<int32_t> min_available;  // tessel.io/min-available
};

// Any object that declares gangs, decoded (the kind table at the edge picks the decoder by
// apiVersion and kind: scheduler/kinds/object_kinds.h).
using GangObject = std::variant<PodGroup, Workload, SchedulingPodGroup, JobInfo>;

absl::StatusOr<PodGroup> DecodePodGroup(const nlohmann::json& object);
absl::StatusOr<Workload> DecodeWorkload(const nlohmann::json& object);
absl::StatusOr<SchedulingPodGroup> DecodeSchedulingPodGroup(const nlohmann::json& object);
// What DecodeSchedulingPodGroup reads of a PodGroup's `status`: the claims made for the group,
// and PodGroupInitiallyScheduled's status (not its message or times, Tessel's own report). An
// update that leaves this and the spec as they were changes no decision. A malformed part is
// kept whole (the decoder reports it).
nlohmann::json SchedulingPodGroupStatusRead(const nlohmann::json& status);
absl::StatusOr<JobInfo> DecodeJob(const nlohmann::json& object);

// tessel.io/min-available from annotations: nullopt when absent, an error naming `object` and
// the annotation when it is not a positive integer.
absl::StatusOr<std::optional<int32_t>> MinAvailable(const StringMap& annotations,
                                                    std::string_view object);

// What the scheduler needs to place one gang.
struct GangSpec {
  GangId id;
  int32_t min_member = 1;
  std::optional<absl::Duration> schedule_timeout;
  Resources min_resources;
  std::string topology_key;  // tessel.io/topology-key; "" = no compact placement
  // The group's own preemption policy (scheduling.k8s.io PodGroup spec.preemptionPolicy); the
  // gang preempts only if this and its members allow it.
  std::optional<PreemptionPolicy> preemption_policy;
  // What the declaring object asks that Tessel does not do, each naming the field (reported on
  // the object's status).
  std::vector<std::string> unsupported;
};

}  // namespace tessel::gang
