// The kinds Tessel reads besides Pods, Nodes and the built-in objects the informers decode one
// by one: the gang objects (scheduler-plugins PodGroup, Workload, the scheduling.k8s.io PodGroup, Job)
// and Queues, by apiVersion and kind. The one place that picks a decoder for them: the live
// informers (kube/scheduler_feed.cc) and the simulator (bench/sim) both hand objects to the core
// through it, and the core takes them typed.
//
//   absl::StatusOr<bool> read = DeliverObject(scheduler, object);  // false: a kind Tessel ignores
//   DeliverDelete(scheduler, "scheduling.x-k8s.io/v1alpha1", "PodGroup", "team-a/train");
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "scheduler/core/scheduler.h"

namespace tessel {

// Whether Tessel reads objects of this apiVersion and kind (through DeliverObject).
bool IsReadKind(std::string_view api_version, std::string_view kind);
// Hands `object` (with its apiVersion and kind set) to the scheduler, decoded. False for a kind
// Tessel does not read. An object of a read kind that does not decode is an error naming it and
// the field (a Queue or ResourceFlavor that does not decode is also recorded: it keeps its last
// good version, or a Queue with none holds its pods); so is a
// Queue whose namespaces another queue holds.
absl::StatusOr<bool> DeliverObject(Scheduler& scheduler, const nlohmann::json& object);
// The object of that apiVersion, kind and key (namespace/name, or the name of a cluster-scoped
// one) was deleted. False for a kind Tessel does not read.
bool DeliverDelete(Scheduler& scheduler, std::string_view api_version, std::string_view kind, std::string_view key);

}  // namespace tessel
