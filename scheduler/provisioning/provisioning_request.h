// ProvisioningRequests (autoscaling.x-k8s.io/v1, cluster-autoscaler's API) as Tessel writes and
// reads them: which gangs ask for capacity (the marking), the objects Tessel creates for one
// (PodTemplates carrying the members' requests, selectors and tolerations, and the request that
// names them), and what a request's conditions say. Pure: JSON in, JSON out; the live glue is
// scheduler/kube/provisioning_controller.h and the state machine request_book.h.
//
//   std::optional<Marking> m = MarkingFor(head.meta.annotations, pod_group_annotations, flavors, queue);
//   std::vector<PodSetTemplate> sets = PodSets(member_pod_jsons, FlavorNodes(flavors));  // per shape
//   nlohmann::json pr = RequestObject(spec, sets);                    // POST it after the templates
//   RequestStatus s = DecodeRequestStatus(observed_request);          // Provisioned, Failed, ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/objects.h"
#include "scheduler/quota/flavor.h"
#include "scheduler/quota/queue.h"

namespace tessel::provisioning {

inline constexpr std::string_view kApiVersion = "autoscaling.x-k8s.io/v1";
inline constexpr std::string_view kKind = "ProvisioningRequest";
// A pod (a gang's member) or its PodGroup asks for provisioning with this class.
inline constexpr std::string_view kClassAnnotation = "tessel.io/provisioning-class";
// Set on the requests and templates Tessel creates: the gang they are for (GangId::Key()).
inline constexpr std::string_view kGangAnnotation = "tessel.io/gang";
inline constexpr std::string_view kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kManagedByValue = "tessel";
// cluster-autoscaler's pod annotations: a pod carrying both consumes that request's capacity,
// and CA leaves it out of its ordinary scale-up (no second scale-up for the same pods).
inline constexpr std::string_view kConsumeAnnotation = "autoscaling.x-k8s.io/consume-provisioning-request";
inline constexpr std::string_view kPodClassAnnotation = "autoscaling.x-k8s.io/provisioning-class-name";

// Where a gang's provisioning class comes from, and its parameters (spec.parameters).
struct Marking {
  std::string class_name;
  StringMap parameters;
  bool operator==(const Marking&) const = default;
};

// The marking that applies: the pod's annotation, else its gang object's, else the
// spec.provisioning of the first of `flavors` (the ones the gang would use, FlavorsWithQuota)
// that has one, else its Queue's. nullopt: the gang is not provisioned for.
std::optional<Marking> MarkingFor(const StringMap& pod_annotations, const StringMap& gang_annotations,
                                  const std::vector<const ResourceFlavor*>& flavors, const Queue* queue);

// Where the requested nodes must be: inside the flavors the gang would use. Their node labels
// become the templates' nodeSelector and their tolerations are added to the templates', so the
// provisioner makes nodes of those flavors (nodes in none of a flavored queue's flavors could
// not take the gang).
struct FlavorNodes {
  std::vector<std::string> flavors;  // names, for messages
  StringMap node_selector;
  std::vector<Toleration> tolerations;
  bool empty() const { return flavors.empty(); }
};
FlavorNodes FlavorNodesOf(const std::vector<const ResourceFlavor*>& flavors);

// What Tessel asks for one gang.
struct RequestSpec {
  std::string namespace_;
  std::string name;      // RequestName()
  std::string gang_key;  // GangId::Key(), in kGangAnnotation
  Marking marking;
  OwnerReference owner;  // the gang object (or its first member): deleting it collects both
  FlavorNodes nodes;     // empty for a flat queue
};

// One podSet: a PodTemplate (its spec) and how many members have that shape.
struct PodSetTemplate {
  nlohmann::json template_spec;  // PodTemplate .template.spec
  int32_t count = 0;
};

// The request's name for a gang's `attempt` (1, 2, ...), from its key without the namespace:
// "podgroup:team-a/train" -> "tessel-podgroup-train-1", "workload:ns/w/workers/0" ->
// "tessel-workload-w-workers-0-1"; lowercased, other characters as '-', cut to stay a valid
// name. The same gang and attempt always give the same name.
std::string RequestName(std::string_view gang_key, int32_t attempt);
// The PodTemplate of a request's `index`th pod set: "<request>-<index>".
std::string TemplateName(std::string_view request_name, size_t index);

// The part of a pod that decides where it can run, as a PodTemplate spec: the containers'
// (and init containers') names, images and resource requests, nodeSelector, affinity,
// tolerations, priorityClassName, overhead and runtimeClassName. Everything else (volumes,
// commands, env) stays out: the provisioner only sizes nodes.
nlohmann::json TemplateSpecOf(const nlohmann::json& pod);
// The members' pods grouped by TemplateSpecOf, in first-seen order, each template held to
// `nodes` (its node selector set over the pod's, its tolerations added).
std::vector<PodSetTemplate> PodSets(const std::vector<nlohmann::json>& pods, const FlavorNodes& nodes = {});

nlohmann::json PodTemplateObject(const RequestSpec& spec, size_t index, const PodSetTemplate& set);
nlohmann::json RequestObject(const RequestSpec& spec, const std::vector<PodSetTemplate>& sets);

// What a request's status.conditions say, by precedence: a capacity that was revoked or whose
// booking expired (both follow Provisioned), then Failed, then Provisioned, else pending
// (Accepted or nothing yet).
enum class RequestPhase { kPending, kProvisioned, kFailed, kCapacityRevoked, kBookingExpired };
std::string_view PhaseName(RequestPhase phase);

// The namespace of a gang key ("podgroup:team-a/train", "pod:team-a/p" -> "team-a"); "" when
// the key has none.
std::string_view GangNamespace(std::string_view gang_key);

// A request as the informer sees it.
struct ObservedRequest {
  std::string namespace_;
  std::string name;
  // The gang of a request Tessel created: labelled kManagedByLabel=kManagedByValue, in the gang's
  // own namespace, named RequestName(gang, attempt). "" for any other request.
  std::string gang_key;
  RequestPhase phase = RequestPhase::kPending;
  std::string reason;   // of the deciding condition
  std::string message;  // of the deciding condition
};
// Errors name the request and the field. A request that carries kGangAnnotation without being
// Tessel's (another namespace's gang, no managed-by label, a name Tessel would not give it) is an
// error too: it is never adopted, and so never deleted.
absl::StatusOr<ObservedRequest> DecodeRequest(const nlohmann::json& object);

}  // namespace tessel::provisioning
