// FGD (PreFilter, PreScore, Score, PreAssume): fragmentation gradient descent (Weng et al.,
// USENIX ATC'23). A node scores by how much placing the pod lowers its expected fragmentation
// under the target workload (fragmentation.h):
//   score = floor(100 * sigmoid((F_n,before - F_n,after) / 1000))      (F in milli-GPU)
// For a fractional pod every device that fits is tried; the first device in index order with
// the highest integer score gives both the node's score and the device. Whole-GPU and CPU-only
// pods take the lowest-index free GPUs.
//
// Exactness: F is kept as an integer scaled by the workload's total weight W. The sigmoid is
// evaluated once, at construction, to turn "score >= k" into integer thresholds on the scaled
// difference: score >= k  <=>  d >= ceil(1000 * W * ln(k / (100 - k))). Scoring itself is
// integer comparisons only (and thresholds are rebuilt when a learned workload changes).
//
// Args: see target_workload.h (targetWorkload, learnHalfLife, coveragePercent).
#pragma once

#include <array>
#include <optional>
#include <span>

#include "plugins/fgd/target_workload.h"
#include "scheduler/framework/registry.h"

namespace tessel::fgd {

// floor(100 * sigmoid(d / (1000 * W))) for integer d, via thresholds precomputed for W.
class SigmoidScorer {
 public:
  void Reset(int64_t total_weight);
  int64_t Score(int64_t scaled_delta) const;

 private:
  std::array<int64_t, 100> threshold_{};  // [k]: smallest d with score >= k (k = 1..99)
};

// The node shape after placing `pod` with `devices` (empty devices: CPU only).
NodeShape ShapeAfter(const NodeShape& before, const GpuDevices& gpus, const GpuDemand& demand,
                     std::span<const int32_t> devices, int64_t cpu_milli);

// The devices a pod takes on a node under a fragmentation score, and that score. A fraction
// (kMilli) tries every device it fits on and keeps the highest `key_of(devices)`, the first
// device on ties (devices with equal free milli leave the same shape, so only the first of
// them is scored); whole GPUs take the default choice. `key_of` is called with a span of the
// candidate device indices (empty for a CPU-only pod). No devices: the pod fits nowhere here.
struct DeviceChoice {
  int64_t key = 0;
  DeviceList devices;
};
template <typename KeyFn>
DeviceChoice ChooseByKey(const GpuDevices& gpus, const GpuDemand& demand, KeyFn key_of) {
  DeviceChoice best;
  if (demand.kind == GpuDemand::Kind::kMilli) {
    int32_t best_device = -1;
    for (int32_t i = 0; i < gpus.count(); ++i) {
      if (!gpus.DeviceFits(i, demand.milli, demand.memory_bytes)) continue;
      bool repeat = false;
      for (int32_t j = 0; j < i && !repeat; ++j) {
        repeat = gpus.FreeMilli(j) == gpus.FreeMilli(i) &&
                 gpus.DeviceFits(j, demand.milli, demand.memory_bytes);
      }
      if (repeat) continue;
      const int32_t one[1] = {i};
      const int64_t k = key_of(std::span<const int32_t>(one));
      if (best_device < 0 || k > best.key) {
        best.key = k;
        best_device = i;
      }
    }
    if (best_device >= 0) best.devices = {best_device};
    return best;
  }
  if (demand.kind != GpuDemand::Kind::kNone) {
    std::optional<DeviceList> d = gpus.DefaultChoice(demand);
    if (!d.has_value()) return best;
    best.devices = *std::move(d);
  }
  best.key = key_of(std::span<const int32_t>(best.devices));
  return best;
}

class FGD final : public gpu::GpuPolicy, public PreFilterPlugin {
 public:
  static constexpr std::string_view kName = "FGD";
  static absl::StatusOr<std::unique_ptr<FGD>> New(const YAML::Node& args, Handle& handle);
  explicit FGD(TargetWorkload workload);
  std::string_view Name() const override { return kName; }

  Status PreFilter(CycleState& state, const Pod& pod) override;

  // The score and the device FGD picks for a pod on a node (devices empty for CPU-only pods).
  struct Choice {
    int64_t score = 0;
    DeviceList devices;
  };
  Choice Evaluate(const gpu::PodGpu& pod, const NodeInfo& node) const;
  const TargetWorkload& workload() const { return workload_; }

 protected:
  int64_t ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const override;
  std::optional<DeviceList> ChooseDevices(const gpu::PodGpu& pod, const GpuDemand& demand,
                                          const NodeInfo& node) override;

 private:
  TargetWorkload workload_;
  SigmoidScorer sigmoid_;
};

}  // namespace tessel::fgd
