// GpuShare (PreFilter, Filter, PreScore, Score, PreAssume, Reserve, PreBind): device-level GPU
// fit and the sharing rules.
//
// Filter, per node (see scheduler/gpu/gpu_devices.h for the accounting):
//   - whole GPUs need that many fully free devices ("Insufficient nvidia.com/gpu");
//   - a fraction (tessel.io/gpu-milli) needs one device with that much room;
//   - on a time-sliced or MPS node, each GPU the pod asks for is one replica slot (the device
//     plugin advertises replicas as nvidia.com/gpu); the node needs that many free slots;
//   - and in every case the node's free total, less what pods without devices hold (a
//     nominated pod whose victims still terminate, or an overcommitted node), must cover the
//     demand: kube-scheduler's sum of requests, so a nomination holds its GPUs;
//   - opt-out: a pod with tessel.io/gpu-sharing: never does not land on shared GPUs; the node
//     is not eligible, and the reason says so;
//   - memory hint: tessel.io/gpu-memory must fit the device's memory (nvidia.com/gpu.memory)
//     minus what the other pods on that device declared;
//   - a node without device-plugin GPUs where a DRA DeviceClass serves nvidia.com/gpu
//     (extendedResourceName) is left to DynamicResources, which allocates a device there.
// Score keeps each kind of pod on its own room first. A pod that opted in (tessel.io/gpu-sharing:
// allowed, or nvidia.com/gpu.shared) goes to shared room when it fits, so whole GPUs stay free:
// 100 on a shared (time-sliced, MPS) node with slots in use, or for a fraction on an unshared
// node with a partly allocated device it fits on; 80 on an unused shared node; 0 where it would
// take a whole exclusive GPU. Any other GPU pod goes to exclusive GPUs first, so replicas stay
// for the pods that asked to share: 100 on an unshared node, 0 on a shared one. The default
// profile weighs GpuShare 50, so 80 points outweigh every other score plugin together
// (100 x (10 + 10 + 1 + 2 + 2 + 10 + 4) = 3900 < 80 x 50): the preferred room always wins, and the
// GPU policy decides among the nodes of one tier. A fraction's device choice follows the same
// rule (fgd::ChooseByKey, and the default best-fit choice).
// PreAssume: when no policy chose devices, takes the default choice; PreBind hands the chosen
// devices to the bind as the binding annotation tessel.io/gpu-devices (the API server puts it on
// the pod with the bind; a cooperating device plugin honours it).
//
// NodeResourcesFit must ignore nvidia.com/gpu and nvidia.com/gpu.shared when this plugin runs
// (the default profile does): a fraction requests nvidia.com/gpu: 1 but holds less.
//
// Args: {annotateDevices: true}   # false: do not annotate pods with tessel.io/gpu-devices
#pragma once

#include "plugins/gpu_share/gpu_policy.h"
#include "scheduler/framework/registry.h"

namespace tessel::gpu_share {

struct GpuShareArgs {
  bool annotate_devices = true;  // false: pods are not annotated with tessel.io/gpu-devices
};

// The Filter's verdict for one pod on one node (shared with tests and the fit-error message).
Status CheckFit(const gpu::PodGpu& pod, const NodeInfo& node);
// The node has no device-plugin GPUs and a DRA DeviceClass serves the pod's GPU request there
// (scheduler/framework/dra_extended.h): DynamicResources fits and allocates it, not GpuShare.
bool GpusServedByDra(const CycleState& state, const Pod& pod, const NodeInfo& node);

inline constexpr int64_t kSharedInUseScore = 100;
inline constexpr int64_t kSharedIdleScore = 80;
inline constexpr int64_t kExclusiveScore = 100;  // a pod that did not opt in, on an unshared node
// GpuShare's Score of a GPU pod on a node (see above).
int64_t SharingScore(const gpu::PodGpu& pod, const NodeInfo& node);

class GpuShare final : public PreFilterPlugin,
                       public FilterPlugin,
                       public PreScorePlugin,
                       public ScorePlugin,
                       public PreAssumePlugin,
                       public ReservePlugin,
                       public PreBindPlugin,
                       public NodeLocalPlugin {
 public:
  static constexpr std::string_view kName = "GpuShare";
  using Args = GpuShareArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<GpuShare>> New(Args args, Handle& handle);
  explicit GpuShare(bool annotate) : annotate_(annotate) {}
  std::string_view Name() const override { return kName; }
  uint32_t EventsToRegister() const override { return kNodeAdd | kNodeUpdate | kAssignedPodDelete; }
  // A pod leaving a node helps only where the GPU room it leaves holds the request
  // (AddGpuRoom / AddGpuNeed in scheduler/gpu/gpu_devices.h).
  uint32_t EventsHintedByRoom() const override { return kAssignedPodDelete; }
  void AddRoomNeed(const Pod& pod, Resources& need) const override { gpu::AddGpuNeed(gpu::ReadGpuRequest(pod), need); }

  Status PreFilter(CycleState& state, const Pod& pod) override;
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  Status PreScore(CycleState& state, const Pod& pod,
                  const std::vector<const NodeInfo*>& feasible) override;
  ScoreResult Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  Status PreAssume(CycleState& state, Pod& assumed, const NodeInfo& node) override;
  Status Reserve(CycleState&, const Pod&, const std::string&) override { return Status::Ok(); }
  void Unreserve(CycleState&, const Pod&, const std::string&) override {}
  Status PreBind(CycleState& state, const Pod& pod, const std::string& node) override;
  bool AppendFilterKey(const CycleState& state, const Pod& pod, std::string& key) const override;
  ScoreUse AppendScoreKey(const CycleState& state, const Pod& pod, std::string& key) const override;

 private:
  bool annotate_;
};

}  // namespace tessel::gpu_share
