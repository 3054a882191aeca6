// What every GPU placement policy shares, written once: the pod's GPU request parsed once per
// cycle (in CycleState), the node numbers policies read, the hand-off of the chosen GPU devices
// from the policy to the cache (PreAssume sets the typed Pod::gpu_devices on the pod copy the
// cache assumes), and a base class for score policies.
//
// A policy derives from GpuPolicy and implements ScoreNode (0..100, or a raw value that its
// NormalizeScore brings into 0..100) and, if it has its own device choice, ChooseDevices:
//
//   class MyPolicy final : public gpu::GpuPolicy {
//     int64_t ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const override;
//   };
//
// Without ChooseDevices, GpuShare's PreAssume (or, failing that, the cache) takes the default
// device choice of GpuDevices::DefaultChoice (whole GPUs lowest index first, a fraction on the
// best-fit device, replicas least-loaded first).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/framework/interface.h"
#include "scheduler/framework/node_local.h"
#include "yaml-cpp/yaml.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/gpu/pod_gpu.h"

namespace tessel::gpu {

inline constexpr std::string_view kPodStateKey = "tessel.io/gpu-pod";
inline constexpr std::string_view kDevicesStateKey = "tessel.io/gpu-devices";

// Writes the PodGpu into the cycle state unless a plugin already did.
void EnsurePodGpu(CycleState& state, const Pod& pod);
// The PodGpu of the cycle, or one computed into `scratch` when no plugin wrote it.
const PodGpu& PodGpuOf(const CycleState& state, const Pod& pod, PodGpu& scratch);

// What a policy reads of the pod (its PodGpu), for decision cache keys (node_local.h).
void AppendPodGpuKey(const PodGpu& pod, std::string& key);

// Records the devices chosen on the node in the cycle state and on the pod about to be assumed.
void SetChosenDevices(CycleState& state, Pod& assumed, const DeviceList& devices);
const DeviceList* ChosenDevices(const CycleState& state);

// Floor division for possibly negative numerators (positive denominators).
inline int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Policies score a node from the pod's PodGpu and that node alone (node_local.h); a policy that
// reads more (Random: the feasible list) overrides AppendScoreKey.
class GpuPolicy : public PreScorePlugin, public ScorePlugin, public PreAssumePlugin, public NodeLocalPlugin {
 public:
  ScoreUse AppendScoreKey(const CycleState& state, const Pod& pod, std::string& key) const override;
  Status PreScore(CycleState& state, const Pod& pod,
                  const std::vector<const NodeInfo*>& feasible) override;
  ScoreResult Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  Status PreAssume(CycleState& state, Pod& assumed, const NodeInfo& node) override;

 protected:
  virtual int64_t ScoreNode(const PodGpu& pod, const NodeInfo& node) const = 0;
  // The devices this policy wants on the chosen node; nullopt leaves the default.
  virtual std::optional<DeviceList> ChooseDevices(const PodGpu& /*pod*/, const GpuDemand& /*demand*/,
                                                  const NodeInfo& /*node*/) {
    return std::nullopt;
  }
  virtual Status AfterPreScore(CycleState& /*state*/, const PodGpu& /*pod*/,
                               const std::vector<const NodeInfo*>& /*feasible*/) {
    return Status::Ok();
  }
};

// The largest node's CPU and GPU milli, which the paper's DotProd and BestFit scale by: their
// args, {maxCpuMilli: 128000, maxGpuMilli: 8000}; anything else is an error naming `plugin`.
struct NodeScale {
  int64_t max_cpu_milli = 128000;
  int64_t max_gpu_milli = 8000;
  // The room a node keeps after a placement as BestFit weighs it, cpu/2C + gpu/2G of the free
  // CPU and GPU milli, times 2CG so that it is an exact integer (smaller: the tighter fit).
  __int128 Leftover(int64_t cpu_after, int64_t gpu_after) const {
    return __int128{cpu_after} * max_gpu_milli + __int128{gpu_after} * max_cpu_milli;
  }
};
absl::StatusOr<NodeScale> ParseNodeScale(std::string_view plugin, const YAML::Node& args);

}  // namespace tessel::gpu
