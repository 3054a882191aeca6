// The GPU device choice of a pod and its one text form, the annotation tessel.io/gpu-devices:
// "0,3" <-> {0, 3}. The scheduler hands the choice around typed (Pod::gpu_devices); the text
// exists only on the wire (the annotation a device plugin reads), and is read back here, once,
// when a pod is decoded.
//
//   pod.gpu_devices = ParseDeviceList("0,3");          // {0, 3}
//   ReadGpuDevicesAnnotation(pod);                      // from the annotation, with a warning
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/api/objects.h"

namespace tessel {

inline constexpr std::string_view kGpuDevicesAnnotation = "tessel.io/gpu-devices";

// Device indices, one entry per whole device, per slot, or the one device of a fraction.
using DeviceList = std::vector<int32_t>;

std::string FormatDeviceList(const DeviceList& devices);
// Fails (nullopt) on anything but comma-separated indices 0..1023.
std::optional<DeviceList> ParseDeviceList(std::string_view text);

// Sets pod.gpu_devices from the pod's tessel.io/gpu-devices annotation (nullopt when absent).
// A malformed value leaves it nullopt and adds a warning naming the field to
// pod.decode_warnings; the cache then accounts the pod with the default device choice.
void ReadGpuDevicesAnnotation(Pod& pod);

}  // namespace tessel
