// `tessel-bench inflate`, where the unallocated GPU is: at the paper's 100 % point (the pods of
// the inflated order whose GPU request fits the capacity have arrived; the LP bound's point too),
// the free GPU milli of the cluster split by why no pod uses it, and the GPU milli of the pods
// that failed by then, by shape. The free parts add up to the capacity minus the allocated GPU.
//   Leftover l;
//   l.CountNode(free_cpu_milli, free_milli_per_device, least_gpu_pod_cpu_milli);  // each node
//   l.CountFailed(pod);                                                         // each failure
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "bench/inflate/trace.h"
#include "nlohmann/json.hpp"
#include "scheduler/gpu/fragmentation.h"

namespace tessel::bench {

struct Leftover {
  // Remainders of devices in use, by free milli: [1, 100), [100, 200), [200, 500), [500, 1000).
  static constexpr std::array<int64_t, 4> kBandFloor = {1, 100, 200, 500};

  int64_t cpu_exhausted_milli = 0;  // free GPU on nodes whose free CPU no GPU pod of the mix fits in
  int64_t idle_device_milli = 0;    // devices nothing holds, elsewhere
  std::array<int64_t, kBandFloor.size()> remainder_milli{};  // the rest, by band
  // GPU milli of the pods that failed before the 100 % point: "1 GPU", "8 GPUs" for whole GPUs,
  // the remainder bands' names ("100-199") for fractions, by the fraction's milli.
  std::map<std::string, int64_t> failed_milli;

  void CountNode(int64_t free_cpu_milli, std::span<const int64_t> device_free_milli, int64_t least_gpu_pod_cpu_milli);
  void CountFailed(const TracePod& pod);

  int64_t free_milli() const;
  static std::string BandName(size_t band);
  nlohmann::json ToJson() const;
};

// The least CPU a GPU pod of `classes` asks (0 when none asks for GPUs).
int64_t LeastGpuPodCpuMilli(const std::vector<gpu::TargetClass>& classes);

// The runs' leftovers as percent of the capacity, averaged (the keys of ToJson, in percent).
nlohmann::json MeanLeftoverPct(const std::vector<const Leftover*>& runs, int64_t capacity_milli);

}  // namespace tessel::bench
