// Where the unallocated GPU is (see leftover.h).
#include "bench/inflate/leftover.h"

#include <algorithm>
#include <limits>

#include "fmt/format.h"
#include "scheduler/gpu/gpu_devices.h"

namespace tessel::bench {

void Leftover::CountNode(int64_t free_cpu_milli, std::span<const int64_t> device_free_milli,
                         int64_t least_gpu_pod_cpu_milli) {
  const bool cpu_exhausted = free_cpu_milli < least_gpu_pod_cpu_milli;
  for (const int64_t free : device_free_milli) {
    if (free <= 0) continue;
    if (cpu_exhausted) {
      cpu_exhausted_milli += free;
    } else if (free >= gpu::kMilliPerGpu) {
      idle_device_milli += free;
    } else {
      size_t band = kBandFloor.size() - 1;
      while (free < kBandFloor[band]) --band;
      remainder_milli[band] += free;
    }
  }
}

void Leftover::CountFailed(const TracePod& pod) {
  if (pod.num_gpu == 0) return;
  if (pod.gpu_milli >= gpu::kMilliPerGpu) {
    failed_milli[fmt::format("{} GPU{}", pod.num_gpu, pod.num_gpu == 1 ? "" : "s")] += pod.total_gpu_milli();
    return;
  }
  size_t band = kBandFloor.size() - 1;
  while (pod.gpu_milli < kBandFloor[band]) --band;
  failed_milli[BandName(band)] += pod.total_gpu_milli();
}

int64_t Leftover::free_milli() const {
  int64_t sum = cpu_exhausted_milli + idle_device_milli;
  for (const int64_t r : remainder_milli) sum += r;
  return sum;
}

std::string Leftover::BandName(size_t band) {
  const int64_t top = band + 1 < kBandFloor.size() ? kBandFloor[band + 1] : gpu::kMilliPerGpu;
  return fmt::format("{}-{}", kBandFloor[band], top - 1);
}

nlohmann::json Leftover::ToJson() const {
  nlohmann::json remainders = nlohmann::json::object();
  for (size_t b = 0; b < remainder_milli.size(); ++b) remainders[BandName(b)] = remainder_milli[b];
  return {{"cpu_exhausted", cpu_exhausted_milli},
          {"idle_devices", idle_device_milli},
          {"remainders", remainders},
          {"failed_pods", failed_milli}};
}

int64_t LeastGpuPodCpuMilli(const std::vector<gpu::TargetClass>& classes) {
  int64_t least = std::numeric_limits<int64_t>::max();
  for (const gpu::TargetClass& c : classes) {
    if (c.num_gpu > 0) least = std::min(least, c.cpu_milli);
  }
  return least == std::numeric_limits<int64_t>::max() ? 0 : least;
}

namespace {

// Adds `from` (milli, nested objects of integers) into `into` (percent of capacity, over `runs`).
void AddPct(nlohmann::json& into, const nlohmann::json& from, double scale) {
  for (const auto& [key, value] : from.items()) {
    if (value.is_object()) {
      if (!into.contains(key)) into[key] = nlohmann::json::object();
      AddPct(into[key], value, scale);
    } else {
      into[key] = into.value(key, 0.0) + value.get<double>() * scale;
    }
  }
}

}  // namespace

nlohmann::json MeanLeftoverPct(const std::vector<const Leftover*>& runs, int64_t capacity_milli) {
  nlohmann::json mean = nlohmann::json::object();
  if (runs.empty() || capacity_milli <= 0) return mean;
  const double scale = 100.0 / static_cast<double>(capacity_milli) / static_cast<double>(runs.size());
  for (const Leftover* l : runs) AddPct(mean, l->ToJson(), scale);
  return mean;
}

}  // namespace tessel::bench
