// GpuShare: device-level fit, sharing preference, memory hint, device hand-off (see gpu_share.h).
#include "plugins/gpu_share/gpu_share.h"

#include "scheduler/framework/binding.h"
#include "scheduler/framework/dra_extended.h"
#include "scheduler/framework/plugin_util.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"

namespace tessel::gpu_share {

absl::StatusOr<GpuShareArgs> GpuShare::ParseArgs(const YAML::Node& yaml) {
  ArgsReader reader = ArgsReader::Of(kName, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"annotateDevices"}));
  Args args;
  ASSIGN_OR_RETURN(args.annotate_devices, reader.Bool("annotateDevices", args.annotate_devices));
  return args;
}

absl::StatusOr<std::unique_ptr<GpuShare>> GpuShare::New(Args args, Handle& /*handle*/) {
  return std::make_unique<GpuShare>(args.annotate_devices);
}

Status CheckFit(const gpu::PodGpu& pod, const NodeInfo& node) {
  const gpu::GpuRequest& req = pod.request;
  if (!req.needs_devices()) return Status::Ok();
  const gpu::GpuDevices& gpus = node.gpus();
  if (gpus.count() == 0) return Status::Unschedulable(StrCat("Insufficient ", kNvidiaGpu));
  gpu::GpuDemand demand = gpu::DemandOn(req, gpus.inventory());
  if (!demand.ineligible.empty()) return Status::Unresolvable(std::string(demand.ineligible));
  if (gpus.Fits(demand)) return Status::Ok();
  gpu::GpuDemand without_memory = demand;
  without_memory.memory_bytes = 0;
  if (demand.memory_bytes > 0 && gpus.Fits(without_memory)) {
    return Status::Unschedulable(
        StrCat("Insufficient GPU memory for ", gpu::kGpuMemoryAnnotation, " ",
               FormatResourceQuantity(kMemory, demand.memory_bytes)));
  }
  switch (demand.kind) {
    case gpu::GpuDemand::Kind::kMilli:
      // Room in total (after what unplaced pods hold) but on no single device.
      if (gpus.FitsBesideUnplaced(demand)) {
        return Status::Unschedulable(StrCat("no single GPU with ", demand.milli, " milli-GPU free"));
      }
      break;
    case gpu::GpuDemand::Kind::kSlots:
      return Status::Unschedulable(StrCat("Insufficient ", gpus.inventory().replica_resource,
                                          " (GPU replicas)"));
    default:
      break;
  }
  return Status::Unschedulable(StrCat("Insufficient ", kNvidiaGpu));
}

bool GpusServedByDra(const CycleState& state, const Pod& pod, const NodeInfo& node) {
  if (node.gpus().count() > 0) return false;
  bool asked = false;
  for (std::string_view resource : {kNvidiaGpu, kNvidiaGpuShared}) {
    if (pod.requests.Get(resource) <= 0) continue;
    if (!ServedByDra(state, resource, node)) return false;
    asked = true;
  }
  return asked;
}

Status GpuShare::PreFilter(CycleState& state, const Pod& pod) {
  gpu::EnsurePodGpu(state, pod);
  const gpu::PodGpu& p = *state.ReadValue<gpu::PodGpu>(gpu::kPodStateKey);
  if (!p.request.error.empty()) return Status::Unresolvable(p.request.error);
  return p.request.needs_devices() ? Status::Ok() : Status::Skip();
}

Status GpuShare::Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  if (GpusServedByDra(state, pod, node)) return Status::Ok();  // DynamicResources allocates a device
  gpu::PodGpu scratch;
  return CheckFit(gpu::PodGpuOf(state, pod, scratch), node);
}

Status GpuShare::PreScore(CycleState& state, const Pod& pod, const std::vector<const NodeInfo*>&) {
  gpu::EnsurePodGpu(state, pod);
  const gpu::PodGpu& p = *state.ReadValue<gpu::PodGpu>(gpu::kPodStateKey);
  return p.request.needs_devices() ? Status::Ok() : Status::Skip();
}

int64_t SharingScore(const gpu::PodGpu& pod, const NodeInfo& node) {
  const gpu::GpuDevices& gpus = node.gpus();
  if (!pod.request.opt_in()) return gpus.inventory().shared() ? 0 : kExclusiveScore;
  if (gpus.inventory().shared()) {
    for (int32_t i = 0; i < gpus.count(); ++i) {
      if (gpus.UsedSlots(i) > 0) return kSharedInUseScore;
    }
    return kSharedIdleScore;
  }
  const gpu::GpuDemand demand = gpu::DemandOn(pod.request, gpus.inventory());
  if (demand.kind == gpu::GpuDemand::Kind::kMilli) {
    for (int32_t i = 0; i < gpus.count(); ++i) {
      if (gpus.AllocatedMilli(i) > 0 && gpus.DeviceFits(i, demand.milli, demand.memory_bytes)) {
        return kSharedInUseScore;  // a fraction on a device already shared
      }
    }
  }
  return 0;  // the pod would open an exclusive GPU
}

ScoreResult GpuShare::Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  gpu::PodGpu scratch;
  return {SharingScore(gpu::PodGpuOf(state, pod, scratch), node), Status::Ok()};
}

bool GpuShare::AppendFilterKey(const CycleState& state, const Pod& pod, std::string& key) const {
  gpu::PodGpu scratch;
  gpu::AppendPodGpuKey(gpu::PodGpuOf(state, pod, scratch), key);
  AppendDraExtendedKey(state, key);
  return true;
}

NodeLocalPlugin::ScoreUse GpuShare::AppendScoreKey(const CycleState& state, const Pod& pod,
                                                   std::string& key) const {
  gpu::PodGpu scratch;
  const gpu::PodGpu& p = gpu::PodGpuOf(state, pod, scratch);
  if (!p.request.needs_devices()) return ScoreUse::kUnused;  // PreScore skips
  gpu::AppendPodGpuKey(p, key);
  return ScoreUse::kNodeLocal;
}

Status GpuShare::PreAssume(CycleState& state, Pod& assumed, const NodeInfo& node) {
  if (gpu::ChosenDevices(state) != nullptr) return Status::Ok();  // a policy chose
  if (GpusServedByDra(state, assumed, node)) return Status::Ok();  // a DRA device, no device-plugin GPU
  gpu::EnsurePodGpu(state, assumed);
  const gpu::PodGpu& p = *state.ReadValue<gpu::PodGpu>(gpu::kPodStateKey);
  gpu::GpuDemand demand = gpu::DemandOn(p.request, node.gpus().inventory());
  if (demand.kind == gpu::GpuDemand::Kind::kNone) return Status::Ok();
  std::optional<DeviceList> devices = node.gpus().DefaultChoice(demand);
  if (!devices.has_value()) {
    return Status::Unschedulable(StrCat("no GPU devices left on node ", node.name()));
  }
  gpu::SetChosenDevices(state, assumed, *devices);
  return Status::Ok();
}

Status GpuShare::PreBind(CycleState& state, const Pod&, const std::string&) {
  const DeviceList* devices = gpu::ChosenDevices(state);
  if (!annotate_ || devices == nullptr) return Status::Ok();
  // No write of its own: the Bind plugin sends it with the bind (one API write per pod).
  AddBindingAnnotation(state, kGpuDevicesAnnotation, FormatDeviceList(*devices));
  return Status::Ok();
}

}  // namespace tessel::gpu_share
