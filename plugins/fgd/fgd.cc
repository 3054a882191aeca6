// FGD score and device choice (see fgd.h).
#include "plugins/fgd/fgd.h"

#include <cmath>
#include <limits>

namespace tessel::fgd {

void SigmoidScorer::Reset(int64_t total_weight) {
  const double scale = 1000.0 * static_cast<double>(std::max<int64_t>(total_weight, 1));
  threshold_[0] = std::numeric_limits<int64_t>::min();
  for (int k = 1; k < 100; ++k) {
    // sigmoid(x) >= k/100  <=>  x >= ln(k / (100 - k)).
    const double t = scale * std::log(static_cast<double>(k) / static_cast<double>(100 - k));
    threshold_[k] = static_cast<int64_t>(std::ceil(t));
  }
}

int64_t SigmoidScorer::Score(int64_t d) const {
  // Largest k with d >= threshold_[k] (thresholds increase with k).
  int lo = 0, hi = 99;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (d >= threshold_[mid]) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

NodeShape ShapeAfter(const NodeShape& before, const GpuDevices& gpus, const GpuDemand& demand,
                     std::span<const int32_t> devices, int64_t cpu_milli) {
  NodeShape after = before;
  after.cpu_free -= cpu_milli;
  switch (demand.kind) {
    case GpuDemand::Kind::kWhole:
      for (int32_t d : devices) {
        if (d < after.n) after.free[d] = 0;
      }
      break;
    case GpuDemand::Kind::kMilli:
      for (int32_t d : devices) {
        if (d < after.n) after.free[d] -= demand.milli;
      }
      break;
    case GpuDemand::Kind::kSlots: {
      const int32_t r = gpus.inventory().replicas;
      for (int32_t d : devices) {
        if (d >= after.n) continue;
        const int32_t slots = gpus.UsedSlots(d) +
                              static_cast<int32_t>(std::count(devices.begin(), devices.end(), d));
        after.free[d] = kMilliPerGpu - int64_t{slots} * kMilliPerGpu / r;
      }
      break;
    }
    case GpuDemand::Kind::kNone:
      break;
  }
  return after;
}

absl::StatusOr<std::unique_ptr<FGD>> FGD::New(const YAML::Node& args, Handle&) {
  auto workload = TargetWorkload::FromArgs(args, {});
  if (!workload.ok()) return workload.status();
  return std::make_unique<FGD>(*std::move(workload));
}

FGD::FGD(TargetWorkload workload) : workload_(std::move(workload)) {
  sigmoid_.Reset(workload_.model().total_weight());
}

Status FGD::PreFilter(CycleState& state, const Pod& pod) {
  gpu::EnsurePodGpu(state, pod);
  if (workload_.Observe(*state.ReadValue<gpu::PodGpu>(gpu::kPodStateKey))) {
    sigmoid_.Reset(workload_.model().total_weight());
  }
  return Status::Ok();
}

FGD::Choice FGD::Evaluate(const gpu::PodGpu& pod, const NodeInfo& node) const {
  const FragModel& model = workload_.model();
  const GpuDevices& gpus = node.gpus();
  const NodeShape before = NodeShape::Of(node, model.ModelId(gpus.inventory().product));
  const int64_t f_before = model.NodeFrag(before);
  const GpuDemand demand = DemandOn(pod.request, gpus.inventory());
  DeviceChoice c = ChooseByKey(gpus, demand, [&](std::span<const int32_t> devices) {
    return sigmoid_.Score(f_before - model.NodeFrag(ShapeAfter(before, gpus, demand, devices, pod.cpu_milli)));
  });
  return Choice{.score = c.key, .devices = std::move(c.devices)};
}

int64_t FGD::ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const {
  return Evaluate(pod, node).score;
}

std::optional<DeviceList> FGD::ChooseDevices(const gpu::PodGpu& pod, const GpuDemand& demand,
                                             const NodeInfo& node) {
  if (demand.kind != GpuDemand::Kind::kMilli) return std::nullopt;
  Choice c = Evaluate(pod, node);
  if (c.devices.empty()) return std::nullopt;
  return c.devices;
}

}  // namespace tessel::fgd
