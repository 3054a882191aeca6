// The target workload a fragmentation-aware policy measures fragmentation against: either
// configured (a list of pod classes with weights) or learned from the pods the scheduler sees.
//
// Learning keeps a count per pod class; every `half_life` observed pods all counts are halved
// (integer), so the distribution follows the recent mix. The model is the most frequent classes
// covering `coverage_pct`% of the counts, rebuilt every 32 observations.
//
// Args (shared by FGD and Tessel):
//   targetWorkload: [{cpuMilli: 8000, gpuMilli: 500, numGpu: 1, models: [T4], weight: 12}, ...]
//   learnHalfLife: 2000       # pods; used when targetWorkload is empty
//   coveragePercent: 95
#pragma once

#include <map>
#include <tuple>

#include "absl/status/statusor.h"
#include "plugins/fgd/fragmentation.h"
#include "plugins/gpu_share/gpu_policy.h"

namespace tessel::fgd {

class TargetWorkload {
 public:
  static absl::StatusOr<TargetWorkload> FromArgs(const YAML::Node& args,
                                                 std::initializer_list<std::string_view> extra_keys);

  const FragModel& model() const { return model_; }
  bool learning() const { return learning_; }
  // Counts the pod's class (learning mode only). Returns true when the model was rebuilt.
  bool Observe(const gpu::PodGpu& pod);
  // Bumped whenever the model changes (for caches keyed on it).
  int64_t version() const { return version_; }

  static TargetClass ClassOf(const gpu::PodGpu& pod);

 private:
  FragModel model_;
  bool learning_ = false;
  int64_t half_life_ = 2000;
  int64_t coverage_pct_ = 95;
  int64_t observed_ = 0;
  int64_t version_ = 0;
  std::map<std::tuple<int64_t, int64_t, int32_t, std::vector<std::string>>, std::pair<int64_t, int64_t>>
      counts_;  // class -> (count, first seen)
};

}  // namespace tessel::fgd
