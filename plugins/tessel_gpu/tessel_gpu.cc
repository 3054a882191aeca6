// Tessel: FGD's gradient, coarser, with whole-node preservation (see tessel_gpu.h).
#include "plugins/tessel_gpu/tessel_gpu.h"

#include "scheduler/framework/plugin_util.h"

namespace tessel::tessel_gpu {

absl::StatusOr<std::unique_ptr<Tessel>> Tessel::New(const YAML::Node& args, Handle&) {
  auto workload = fgd::TargetWorkload::FromArgs(args, {"sigmoidScaleMilli", "preserveIdleNodes"});
  if (!workload.ok()) return workload.status();
  ArgsReader reader(args);
  // Absent: chosen from the target workload (AutoSigmoidScaleMilli); 0 stands for that.
  auto scale = reader.Int("sigmoidScaleMilli", 0, 1, 1'000'000);
  if (!scale.ok()) return scale.status();
  auto preserve = reader.Bool("preserveIdleNodes", true);
  if (!preserve.ok()) return preserve.status();
  return std::make_unique<Tessel>(*std::move(workload),
                                  Options{.sigmoid_scale_milli = *scale, .preserve_idle_nodes = *preserve});
}

Tessel::Tessel(fgd::TargetWorkload workload, Options options)
    : workload_(std::move(workload)), options_(options) {
  ResetScorer();
}

int64_t AutoSigmoidScaleMilli(const fgd::FragModel& model) {
  using i128 = __int128;
  i128 total = 0, multi = 0;  // GPU milli requested by the classes, weighted; multi: num_gpu > 1
  for (const fgd::TargetClass& c : model.classes()) {
    const i128 v = static_cast<i128>(c.weight) * c.gpu_milli * c.num_gpu;
    total += v;
    if (c.num_gpu > 1) multi += v;
  }
  if (total <= 0) return 1000;
  // 1000 + 1000 * min(1, share / 15%) = 1000 + min(1000, multi * 20000 / (3 * total)).
  const i128 extra = multi * 20000 / (3 * total);
  return 1000 + static_cast<int64_t>(std::min<i128>(extra, 1000));
}

void Tessel::ResetScorer() {
  scale_milli_ = options_.sigmoid_scale_milli > 0 ? options_.sigmoid_scale_milli
                                                  : AutoSigmoidScaleMilli(workload_.model());
  // Thresholds for floor(100 sigmoid(dF / scale)) with dF scaled by the workload weight W:
  // the same as FGD's for a weight of W * scale / 1000.
  const int64_t w = std::max<int64_t>(workload_.model().total_weight(), 1);
  sigmoid_.Reset(w * scale_milli_ / 1000 > 0 ? w * scale_milli_ / 1000 : 1);
}

Status Tessel::PreFilter(CycleState& state, const Pod& pod) {
  gpu::EnsurePodGpu(state, pod);
  if (workload_.Observe(*state.ReadValue<gpu::PodGpu>(gpu::kPodStateKey))) ResetScorer();
  return Status::Ok();
}

Tessel::Choice Tessel::Evaluate(const gpu::PodGpu& pod, const NodeInfo& node) const {
  const fgd::FragModel& model = workload_.model();
  const GpuDevices& gpus = node.gpus();
  const fgd::NodeShape before = fgd::NodeShape::Of(node, model.ModelId(gpus.inventory().product));
  const int64_t f_before = model.NodeFrag(before);
  const GpuDemand demand = DemandOn(pod.request, gpus.inventory());
  const bool in_use = gpus.total_allocated_milli() > 0 || node.requested().milli_cpu > 0;
  // Ties: a node in use wins over an idle one. (Preferring the smaller of two idle nodes as well
  // was measured too: it loses 0.4 pp on openb default, so idle nodes tie and fall to the order.)
  const int64_t tie = options_.preserve_idle_nodes && in_use ? 1 : 0;
  auto key_of = [&](std::span<const int32_t> devices) {
    const fgd::NodeShape after = fgd::ShapeAfter(before, gpus, demand, devices, pod.cpu_milli);
    return sigmoid_.Score(f_before - model.NodeFrag(after)) * 2 + tie;
  };
  return fgd::ChooseByKey(gpus, demand, key_of);
}

int64_t Tessel::ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const {
  return Evaluate(pod, node).key;
}

Status Tessel::NormalizeScore(const CycleState&, const Pod&, NodeScoreList& scores) const {
  if (scores.empty()) return Status::Ok();
  int64_t lo = scores.front().score, hi = lo;
  for (const NodeScore& s : scores) {
    lo = std::min(lo, s.score);
    hi = std::max(hi, s.score);
  }
  for (NodeScore& s : scores) {
    s.score = s.score == hi ? kMaxNodeScore : (s.score - lo) * (kMaxNodeScore - 1) / (hi - lo);
  }
  return Status::Ok();
}

std::optional<DeviceList> Tessel::ChooseDevices(const gpu::PodGpu& pod, const GpuDemand& demand,
                                                const NodeInfo& node) {
  if (demand.kind != GpuDemand::Kind::kMilli) return std::nullopt;
  Choice c = Evaluate(pod, node);
  if (c.devices.empty()) return std::nullopt;
  return c.devices;
}

}  // namespace tessel::tessel_gpu
