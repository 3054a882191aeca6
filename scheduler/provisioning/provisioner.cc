// Which shortfalls new nodes can end (provisioner.h).
#include "scheduler/provisioning/provisioner.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace tessel::provisioning {

bool CapacityOnly(const std::vector<std::string>& rejecting_plugins) {
  static constexpr std::array<std::string_view, 4> kNotCapacity = {"QueueQuota", "NodeName", "VolumeBinding",
                                                                   "VolumeRestrictions"};
  return std::none_of(rejecting_plugins.begin(), rejecting_plugins.end(), [](const std::string& p) {
    return std::find(kNotCapacity.begin(), kNotCapacity.end(), p) != kNotCapacity.end();
  });
}

}  // namespace tessel::provisioning
