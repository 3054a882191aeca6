// Which shortfalls new nodes can end (provisioner.h).
#include "scheduler/provisioning/provisioner.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "scheduler/util/strings.h"

namespace tessel::provisioning {

bool CapacityOnly(const std::vector<std::string>& rejecting_plugins) {
  static constexpr std::array<std::string_view, 4> kNotCapacity = {"QueueQuota", "NodeName", "VolumeBinding",
                                                                   "VolumeRestrictions"};
  return std::none_of(rejecting_plugins.begin(), rejecting_plugins.end(), [](const std::string& p) {
    return std::find(kNotCapacity.begin(), kNotCapacity.end(), p) != kNotCapacity.end();
  });
}

std::string PodKey(std::string_view pod_key) { return StrCat("pod:", pod_key); }

std::optional<Outcome> AskIfShort(Provisioner& provisioner, ShortageInput in) {
  if (in.head == nullptr || (in.rejecting_plugins != nullptr && !CapacityOnly(*in.rejecting_plugins))) {
    return std::nullopt;
  }
  static const StringMap kNone;
  std::optional<Marking> marking =
      MarkingFor(in.head->meta.annotations, in.gang_annotations ? *in.gang_annotations : kNone, in.queue);
  if (!marking.has_value()) return std::nullopt;
  return provisioner.GangShort({.ask = {.gang_key = std::move(in.key),
                                        .namespace_ = in.head->meta.namespace_,
                                        .marking = std::move(*marking),
                                        .owner = std::move(in.owner)},
                                .member_keys = std::move(in.member_keys)});
}

}  // namespace tessel::provisioning
