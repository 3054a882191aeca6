// Which shortfalls new nodes can end (provisioner.h).
#include "scheduler/provisioning/provisioner.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "scheduler/quota/quota_tracker.h"
#include "scheduler/quota/quota_usage.h"
#include "scheduler/util/strings.h"

namespace tessel::provisioning {

bool CapacityOnly(const std::vector<std::string>& rejecting_plugins) {
  static constexpr std::array<std::string_view, 5> kNotCapacity = {kQuotaPlugin, "NodeName", "VolumeBinding",
                                                                   "VolumeRestrictions", "DynamicResources"};
  return std::none_of(rejecting_plugins.begin(), rejecting_plugins.end(), [](const std::string& p) {
    return std::find(kNotCapacity.begin(), kNotCapacity.end(), p) != kNotCapacity.end();
  });
}

std::string PodKey(std::string_view pod_key) { return StrCat("pod:", pod_key); }

namespace {

// Whether anything could mark the gang: an annotation, its queue, or one of its queue's flavors.
bool MayBeMarked(const StringMap& pod_annotations, const StringMap& gang_annotations, const ShortageInput& in) {
  if (pod_annotations.contains(std::string(kClassAnnotation)) || gang_annotations.contains(std::string(kClassAnnotation))) {
    return true;
  }
  if (in.queue == nullptr) return false;
  if (in.queue->provisioning.has_value()) return true;
  if (in.queues == nullptr) return false;
  for (const ResourceGroup& group : in.queue->resource_groups) {
    for (const std::string& name : group.flavors) {
      auto it = in.queues->flavors().find(name);
      if (it != in.queues->flavors().end() && it->second.provisioning.has_value()) return true;
    }
  }
  return false;
}

// The flavors the members would use on new nodes (FlavorsWithQuota), with what every queue
// uses on the snapshot's nodes now; nullopt when their queue's quota (flat or flavored) cannot
// take them all together: the quota is short, not the nodes.
std::optional<std::vector<const ResourceFlavor*>> FlavorsFor(const ShortageInput& in) {
  if (in.queue == nullptr || in.queues == nullptr) {
    return std::vector<const ResourceFlavor*>{};
  }
  QueueUsage usage;
  if (in.snapshot != nullptr) {
    for (const NodeInfo* node : in.snapshot->nodes()) AddNodeUsage(*in.queues, *node, usage);
  }
  QuotaTracker tracker(in.queues);
  for (const auto& [queue, amount] : usage) tracker.AddUsage(queue, amount);
  Resources charge;
  for (const Pod* member : in.members) (void)charge.Add(QuotaCharge(*member, nullptr));
  return FlavorsWithQuota(*in.queues, *in.queue, tracker, charge);
}

}  // namespace

std::optional<Outcome> AskIfShort(Provisioner& provisioner, ShortageInput in) {
  if (in.head == nullptr) return std::nullopt;
  // A flavored queue's QueueQuota turns away the nodes outside its flavors too, and the quota of
  // flavors the gang will not use: FlavorsFor judges its quota for the whole gang below.
  const bool flavored = in.queue != nullptr && in.queue->flavored() && in.queues != nullptr;
  if (in.rejecting_plugins != nullptr) {
    std::vector<std::string> plugins = *in.rejecting_plugins;
    if (flavored) std::erase(plugins, std::string(kQuotaPlugin));
    if (!CapacityOnly(plugins)) return std::nullopt;
  }
  static const StringMap kNone;
  const StringMap& gang_annotations = in.gang_annotations ? *in.gang_annotations : kNone;
  if (!MayBeMarked(in.head->meta.annotations, gang_annotations, in)) return std::nullopt;
  // A flavored queue's gang asks for nodes of the flavor it would use; none: the quota is short.
  std::optional<std::vector<const ResourceFlavor*>> flavors = FlavorsFor(in);
  if (!flavors.has_value()) return std::nullopt;
  std::optional<Marking> marking = MarkingFor(in.head->meta.annotations, gang_annotations, *flavors, in.queue);
  if (!marking.has_value()) return std::nullopt;
  std::vector<std::string> member_keys;
  for (const Pod* member : in.members) member_keys.push_back(member->Key());
  return provisioner.GangShort({.ask = {.gang_key = std::move(in.key),
                                        .namespace_ = in.head->meta.namespace_,
                                        .marking = std::move(*marking),
                                        .owner = std::move(in.owner),
                                        .nodes = FlavorNodesOf(*flavors)},
                                .member_keys = std::move(member_keys)});
}

}  // namespace tessel::provisioning
