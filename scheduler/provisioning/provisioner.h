// What the scheduling core tells the provisioning side about gangs, and hears back. The core
// does no I/O: the live scheduler creates and deletes ProvisioningRequests from another thread
// (scheduler/kube/provisioning_controller.h); replay and the bench have no provisioner, so
// nothing changes there unless a test installs one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/provisioning/request_book.h"
#include "scheduler/quota/queue.h"
#include "scheduler/state/snapshot.h"

namespace tessel::provisioning {

// A gang (or a single pod: Ask::gang_key is then PodKey()) that the quota admits and the
// current nodes cannot host only for lack of capacity.
struct GangShortage {
  Ask ask;
  std::vector<std::string> member_keys;  // the pending members, "namespace/name"
};

// How the gang's ask stands, for its PodGroup status and its pods' PodScheduled message.
struct Outcome {
  bool failed = false;  // the request failed: the gang stays pending until the next attempt
  std::string message;
};

class Provisioner {
 public:
  virtual ~Provisioner() = default;
  // Called on the scheduling thread; must not block.
  virtual Outcome GangShort(const GangShortage& shortage) = 0;
  // The gang was placed (on new capacity or elsewhere): its requests are no longer needed.
  virtual void GangPlaced(const std::string& gang_key) = 0;
  // The gang's object was deleted.
  virtual void GangGone(const std::string& gang_key) = 0;
};

// Whether more nodes could end a shortfall: no plugin that turned nodes away speaks of
// something new nodes cannot change: the queue's quota (QueueQuota), a pod pinned to a node
// (NodeName), its volumes (VolumeBinding, VolumeRestrictions) or its DRA claims (DynamicResources).
// Selectors, affinity and taints count as capacity: a pool that is empty or full looks the same
// as one that does not exist, and the provisioner (which knows its node groups) answers Failed
// for the latter.
bool CapacityOnly(const std::vector<std::string>& rejecting_plugins);
inline constexpr std::string_view kQuotaPlugin = "QueueQuota";

// The key a single pod's request is kept under: "pod:NAMESPACE/NAME" (its request is
// "tessel-pod-NAME-1").
std::string PodKey(std::string_view pod_key);

// The one way the core asks: when `rejecting_plugins` is a lack of capacity and the pod `head`
// (a gang's first pending member, or the pod itself), its gang object's annotations, the flavor
// the gang would use or its `queue` mark it, tells `provisioner` and returns how the ask stands;
// nullopt otherwise. The queue's quota must take all of `members` together, flat queue or
// flavored, or nothing is asked (the quota is short, not the nodes: docs/quota.md). For a
// flavored queue, the flavors are those whose quota takes all of
// `members` on top of what the queues use on `snapshot`'s nodes (FlavorsWithQuota); when none
// does, the quota is short, not the nodes, and nothing is asked; when one does, QueueQuota's
// rejections do not stop the ask (they are nodes outside the queue's flavors, or the quota of
// flavors before the one the gang would use).
struct ShortageInput {
  std::string key;  // GangId::Key(), or PodKey()
  const Pod* head = nullptr;
  const StringMap* gang_annotations = nullptr;  // null: none
  const QueueDirectory* queues = nullptr;       // null: no queues
  const Queue* queue = nullptr;
  const Snapshot* snapshot = nullptr;           // for a flavored queue's usage
  OwnerReference owner;
  std::vector<const Pod*> members;              // the pending members (the pod itself)
  const std::vector<std::string>* rejecting_plugins = nullptr;
};
std::optional<Outcome> AskIfShort(Provisioner& provisioner, ShortageInput input);

}  // namespace tessel::provisioning
