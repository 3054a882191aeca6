// Shared pieces of the GPU policies (see gpu_policy.h).
#include "plugins/gpu_share/gpu_policy.h"

#include "scheduler/framework/plugin_util.h"

namespace tessel::gpu {

void EnsurePodGpu(CycleState& state, const Pod& pod) {
  if (state.ReadValue<PodGpu>(kPodStateKey) == nullptr) state.WriteValue(kPodStateKey, MakePodGpu(pod));
}

const PodGpu& PodGpuOf(const CycleState& state, const Pod& pod, PodGpu& scratch) {
  if (const PodGpu* p = state.ReadValue<PodGpu>(kPodStateKey)) return *p;
  scratch = MakePodGpu(pod);
  return scratch;
}

void SetChosenDevices(CycleState& state, Pod& assumed, const DeviceList& devices) {
  state.WriteValue(kDevicesStateKey, devices);
  assumed.gpu_devices = devices;
}

const DeviceList* ChosenDevices(const CycleState& state) {
  return state.ReadValue<DeviceList>(kDevicesStateKey);
}

void AppendPodGpuKey(const PodGpu& pod, std::string& key) {
  key.push_back('G');
  AppendGpuRequest(pod.request, key);
  for (int64_t v : {pod.cpu_milli, pod.memory, static_cast<int64_t>(pod.models.size())}) AppendKeyInt(v, key);
  AppendKeyString(pod.request.error, key);
  for (const std::string& m : pod.models) AppendKeyString(m, key);
}

NodeLocalPlugin::ScoreUse GpuPolicy::AppendScoreKey(const CycleState& state, const Pod& pod,
                                                    std::string& key) const {
  PodGpu scratch;
  AppendPodGpuKey(PodGpuOf(state, pod, scratch), key);
  return ScoreUse::kNodeLocal;
}

Status GpuPolicy::PreScore(CycleState& state, const Pod& pod,
                           const std::vector<const NodeInfo*>& feasible) {
  EnsurePodGpu(state, pod);
  return AfterPreScore(state, *state.ReadValue<PodGpu>(kPodStateKey), feasible);
}

ScoreResult GpuPolicy::Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  PodGpu scratch;
  return {ScoreNode(PodGpuOf(state, pod, scratch), node), Status::Ok()};
}

Status GpuPolicy::PreAssume(CycleState& state, Pod& assumed, const NodeInfo& node) {
  EnsurePodGpu(state, assumed);
  const PodGpu& pod = *state.ReadValue<PodGpu>(kPodStateKey);
  GpuDemand demand = DemandOn(pod.request, node.gpus().inventory());
  if (demand.kind == GpuDemand::Kind::kNone) return Status::Ok();
  std::optional<DeviceList> devices = ChooseDevices(pod, demand, node);
  if (devices.has_value() && node.gpus().ValidChoice(demand, *devices)) {
    SetChosenDevices(state, assumed, *devices);
  }
  return Status::Ok();
}

absl::StatusOr<NodeScale> ParseNodeScale(std::string_view plugin, const YAML::Node& args) {
  ArgsReader reader = ArgsReader::Of(plugin, args);
  if (absl::Status st = reader.OnlyKeys({"maxCpuMilli", "maxGpuMilli"}); !st.ok()) return st;
  NodeScale scale;
  auto cpu = reader.Int("maxCpuMilli", scale.max_cpu_milli, 1, int64_t{1} << 32);
  if (!cpu.ok()) return cpu.status();
  auto gpu = reader.Int("maxGpuMilli", scale.max_gpu_milli, 1, int64_t{1} << 32);
  if (!gpu.ok()) return gpu.status();
  return NodeScale{.max_cpu_milli = *cpu, .max_gpu_milli = *gpu};
}

}  // namespace tessel::gpu
