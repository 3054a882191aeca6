// The tessel.io/gpu-devices codec (see device_list.h).
#include "scheduler/api/device_list.h"

#include <charconv>

#include "scheduler/util/strings.h"

namespace tessel {

std::string FormatDeviceList(const DeviceList& devices) { return StrJoin(devices, ","); }

std::optional<DeviceList> ParseDeviceList(std::string_view text) {
  DeviceList out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    int32_t v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v < 0 || v > 1023) {
      return std::nullopt;
    }
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return std::nullopt;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

void ReadGpuDevicesAnnotation(Pod& pod) {
  pod.gpu_devices.reset();
  auto it = pod.meta.annotations.find(kGpuDevicesAnnotation);
  if (it == pod.meta.annotations.end()) return;
  pod.gpu_devices = ParseDeviceList(it->second);
  if (!pod.gpu_devices.has_value()) {
    pod.decode_warnings.push_back(
        StrCat("pod ", pod.Key(), ": metadata.annotations[", kGpuDevicesAnnotation, "]: \"", it->second,
               "\" is not a list of device indices (want e.g. \"0,3\"); using the default device choice"));
  }
}

}  // namespace tessel
