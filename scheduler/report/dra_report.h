// The cluster's DRA devices, by driver, for the metrics (tessel_dra_devices): how many the
// ResourceSlices publish and how many allocated ResourceClaims hold. Read from the objects as the
// informers keep them (raw JSON: this floor does not decode DRA objects); a pool counts in its
// newest generation only, a device given with admin access holds nothing, and a device that allows
// multiple allocations counts once however many shares it has.
//
//   std::map<std::string, DraDeviceCount> by_driver = ReportDraDevices(*store.view());
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "scheduler/state/cluster_objects.h"

namespace tessel {

struct DraDeviceCount {
  int64_t published = 0;
  int64_t allocated = 0;
  bool operator==(const DraDeviceCount&) const = default;
};

std::map<std::string, DraDeviceCount, std::less<>> ReportDraDevices(const ClusterObjects& objects);

}  // namespace tessel
