// Resource vectors: what a pod requests and what a node offers, as exact integers.
//
// CPU, GPUs and every extended resource are held in milli-units; memory, ephemeral-storage,
// hugepages and the pod count in whole units (bytes, pods). kube-scheduler's framework.Resource
// has the same shape: fixed fields for the common resources and a small map for the rest.
//
//   Resources r;
//   r.Set("cpu", 500);                  // 500m
//   r.Set("nvidia.com/gpu", 2000);      // two GPUs
//   bool fits = r.FitsIn(free);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tessel {

inline constexpr std::string_view kCpu = "cpu";
inline constexpr std::string_view kMemory = "memory";
inline constexpr std::string_view kEphemeralStorage = "ephemeral-storage";
inline constexpr std::string_view kPods = "pods";
inline constexpr std::string_view kNvidiaGpu = "nvidia.com/gpu";
inline constexpr std::string_view kNvidiaGpuShared = "nvidia.com/gpu.shared";

// True for resources held in milli-units (CPU, GPU, extended resources); false for those held
// in whole units (memory, storage, hugepages, pods).
bool IsMilliResource(std::string_view name);

// Parses a quantity string into the unit IsMilliResource() picks for `name`.
absl::StatusOr<int64_t> ParseResourceQuantity(std::string_view name, std::string_view text);

// Formats an amount held for `name` back into a quantity string ("1500m", "4Gi", "8").
std::string FormatResourceQuantity(std::string_view name, int64_t amount);

class Resources {
 public:
  int64_t Get(std::string_view name) const;
  void Set(std::string_view name, int64_t amount);

  // Element-wise arithmetic; Add/Sub fail on int64 overflow instead of wrapping.
  absl::Status Add(const Resources& other);
  void Sub(const Resources& other);
  // this = max(this, other), element-wise.
  void SetMax(const Resources& other);

  bool IsZero() const;
  // Every amount of this is <= the same amount in `capacity`.
  bool FitsIn(const Resources& capacity) const;

  // All non-zero entries, sorted by name.
  std::vector<std::pair<std::string, int64_t>> Entries() const;
  std::string DebugString() const;

  bool operator==(const Resources&) const = default;

  int64_t milli_cpu = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int64_t pods = 0;
  std::map<std::string, int64_t, std::less<>> scalar;  // extended resources, milli-units
};

}  // namespace tessel
