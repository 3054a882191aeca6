// FGD score and device choice (see fgd.h).
#include "plugins/fgd/fgd.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "scheduler/framework/plugin_util.h"
#include "scheduler/util/status_macros.h"

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

gpu::NodeShape ShapeAfter(const gpu::NodeShape& before, const gpu::GpuDevices& gpus, const gpu::GpuDemand& demand,
                     std::span<const int32_t> devices, int64_t cpu_milli) {
  gpu::NodeShape after = before;
  after.cpu_free -= cpu_milli;
  switch (demand.kind) {
    case gpu::GpuDemand::Kind::kWhole:
      for (int32_t d : devices) {
        if (d < after.n) after.free[d] = 0;
      }
      break;
    case gpu::GpuDemand::Kind::kMilli:
      for (int32_t d : devices) {
        if (d < after.n) after.free[d] -= demand.milli;
      }
      break;
    case gpu::GpuDemand::Kind::kSlots: {
      const int32_t r = gpus.inventory().replicas;
      for (int32_t d : devices) {
        if (d >= after.n) continue;
        const int32_t slots = gpus.UsedSlots(d) +
                              static_cast<int32_t>(std::count(devices.begin(), devices.end(), d));
        after.free[d] = gpu::kMilliPerGpu - int64_t{slots} * gpu::kMilliPerGpu / r;
      }
      break;
    }
    case gpu::GpuDemand::Kind::kNone:
      break;
  }
  return after;
}

absl::StatusOr<FGDArgs> ParseFGDArgs(std::string_view plugin, const YAML::Node& yaml, const FGDArgs& defaults) {
  ArgsReader reader = ArgsReader::Of(plugin, yaml);
  RETURN_IF_ERROR(reader.OnlyKeys({"targetWorkload", "learnHalfLife", "coveragePercent", "wholeNodePrior",
                                   "sigmoidScaleMilli", "preserveIdleNodes", "packWholeGpus",
                                   "cpuShortfallPercent"}));
  FGDArgs args = defaults;
  ASSIGN_OR_RETURN(args.workload, ParseTargetWorkloadArgs(reader));
  // A default of 0 stands for "chosen from the target workload" (AutoSigmoidScaleMilli).
  ASSIGN_OR_RETURN(args.sigmoid_scale_milli, reader.Int("sigmoidScaleMilli", defaults.sigmoid_scale_milli, 1, 1'000'000));
  ASSIGN_OR_RETURN(args.preserve_idle_nodes, reader.Bool("preserveIdleNodes", defaults.preserve_idle_nodes));
  ASSIGN_OR_RETURN(args.pack_whole_gpus, reader.Bool("packWholeGpus", defaults.pack_whole_gpus));
  ASSIGN_OR_RETURN(args.cpu_shortfall_percent,
                   reader.Int("cpuShortfallPercent", defaults.cpu_shortfall_percent, 0, 10'000));
  return args;
}

absl::StatusOr<FGDArgs> FGD::ParseArgs(const YAML::Node& yaml) { return ParseFGDArgs(kName, yaml, FGDArgs{}); }

absl::StatusOr<std::unique_ptr<FGD>> FGD::New(Args args, Handle& handle) {
  return std::make_unique<FGD>(kName, args, &handle);
}

FGD::FGD(std::string_view name, const FGDArgs& args, const Handle* handle)
    : name_(name),
      workload_(args.workload),
      sigmoid_scale_option_(args.sigmoid_scale_milli),
      preserve_idle_nodes_(args.preserve_idle_nodes),
      pack_whole_gpus_(args.pack_whole_gpus),
      cpu_shortfall_percent_(args.cpu_shortfall_percent),
      handle_(handle) {
  ResetScorer();
}

int64_t AutoSigmoidScaleMilli(const gpu::FragModel& model) {
  using i128 = __int128;
  i128 total = 0, multi = 0;  // GPU milli requested by the classes, weighted; multi: num_gpu > 1
  for (const gpu::TargetClass& c : model.classes()) {
    const i128 v = static_cast<i128>(c.weight) * c.gpu_milli * c.num_gpu;
    total += v;
    if (c.num_gpu > 1) multi += v;
  }
  if (total <= 0) return 1000;
  // 1000 + 1000 * min(1, share / 15%) = 1000 + min(1000, multi * 20000 / (3 * total)).
  const i128 extra = multi * 20000 / (3 * total);
  return 1000 + static_cast<int64_t>(std::min<i128>(extra, 1000));
}

void FGD::ResetScorer() {
  published_ = std::make_shared<const gpu::FragModel>(workload_.model());
  scale_milli_ = sigmoid_scale_option_ > 0 ? sigmoid_scale_option_ : AutoSigmoidScaleMilli(workload_.model());
  // Thresholds for floor(100 sigmoid(dF / scale)) with dF scaled by the workload weight W:
  // the same as for a scale of 1000 and a weight of W * scale / 1000.
  const int64_t w = std::max<int64_t>(workload_.model().total_weight(), 1);
  sigmoid_.Reset(std::max<int64_t>(w * scale_milli_ / 1000, 1));
  shortfall_weight_ = w * cpu_shortfall_percent_ / 100;
}

int64_t FGD::Frag(const gpu::NodeShape& shape) const {
  const gpu::FragModel& model = workload_.model();
  const int64_t f = model.NodeFrag(shape);
  return shortfall_weight_ == 0 ? f : f + shortfall_weight_ * model.CpuShortfall(shape);
}

Status FGD::PreFilter(CycleState& state, const Pod& pod) {
  gpu::EnsurePodGpu(state, pod);
  // A pod whose GPUs come only through its claims is counted at Reserve (ObserveDraPlacement).
  const bool dra_only = DraGpuUnitsOf(state) != nullptr &&
                        !state.ReadValue<gpu::PodGpu>(gpu::kPodStateKey)->request.needs_devices();
  Observe(state, pod, /*count_pod=*/!dra_only);
  state.WriteValue(kGpuWorkloadStateKey, GpuWorkloadState{.model = published_, .learner = this});
  return Status::Ok();
}

void FGD::ObserveDraPlacement(const Pod& pod, const gpu::TargetClass& placed) {
  if (workload_.ObserveClass(placed, TargetWorkload::PodId(pod))) ResetScorer();
}

void FGD::Observe(CycleState& state, const Pod& pod, bool count_pod) {
  if (!workload_.learning()) return;
  bool changed = false;
  if (handle_ != nullptr) {
    // The snapshot keeps its nodes' distinct GPU counts: no walk over every node here.
    const std::vector<int32_t>& sizes = handle_->snapshot().gpu_node_sizes();
    if (sizes != workload_.node_sizes()) changed = workload_.SetNodeSizes(sizes);
  }
  if (count_pod) {
    changed |= workload_.Observe(*state.ReadValue<gpu::PodGpu>(gpu::kPodStateKey), TargetWorkload::PodId(pod));
  }
  if (changed) ResetScorer();
}

int64_t FGD::Key(int64_t f_before, const gpu::NodeShape& after, bool in_use, std::optional<Packing> pack) const {
  const int64_t score = sigmoid_.Score(f_before - Frag(after));
  // Ties on the gradient: a node in use wins over an idle one. (Preferring the smaller of two
  // idle nodes as well was measured too: it loses 0.4 pp on openb default.)
  const int64_t raw = preserve_idle_nodes_ ? score * 2 + (in_use ? 1 : 0) : score;
  if (!pack.has_value()) return raw;
  // The tighter the fit, the higher: 2^40 less the room left (BestFit's measure), kept within
  // [0, 2^40]. raw < 2^8, so either order fits in one integer below 2^49.
  constexpr __int128 kRoomCap = __int128{1} << 40;
  const int64_t tight = static_cast<int64_t>(kRoomCap - std::clamp<__int128>(pack->leftover, 0, kRoomCap));
  // A whole-GPU pod: the tightest fit, then the gradient (whose in-use term the fit subsumes).
  // A fraction: the gradient, then the tightest fit.
  return pack->whole ? tight * 256 + score : raw * (int64_t{1} << 41) + tight;
}

FGD::Choice FGD::Evaluate(const gpu::PodGpu& pod, const NodeInfo& node) const {
  const gpu::FragModel& model = workload_.model();
  const gpu::GpuDevices& gpus = node.gpus();
  const gpu::NodeShape before =
      gpu::NodeShape::Of(gpus, node.FreeMilliCpu(), model.ModelId(gpus.inventory().product));
  const int64_t f_before = Frag(before);
  const gpu::GpuDemand demand = gpu::DemandOn(pod.request, gpus.inventory());
  const bool in_use = gpus.total_allocated_milli() > 0 || node.requested().milli_cpu > 0;
  std::optional<Packing> pack;
  if (Packs() && gpus.count() > 0 &&
      (demand.kind == gpu::GpuDemand::Kind::kWhole || demand.kind == gpu::GpuDemand::Kind::kMilli)) {
    // The same on every device of the node: it ranks nodes, never devices.
    pack = Packing{.whole = demand.kind == gpu::GpuDemand::Kind::kWhole,
                   .leftover = kRoomScale.Leftover(node.FreeMilliCpu() - pod.cpu_milli,
                                                   gpus.total_free_milli() - pod.request.total_milli())};
  }
  auto key_of = [&](std::span<const int32_t> devices) {
    return Key(f_before, ShapeAfter(before, gpus, demand, devices, pod.cpu_milli), in_use, pack);
  };
  return ChooseByKey(gpus, demand, pod.request.opt_in(), key_of);
}

int64_t FGD::EvaluateUnits(const gpu::PodGpu& pod, const NodeInfo& node, const GpuUnitsOnNode& units) const {
  const gpu::NodeShape before = gpu::NodeShape::OfFree(units.before, node.FreeMilliCpu(), -1);
  const gpu::NodeShape after = gpu::NodeShape::OfFree(units.after, node.FreeMilliCpu() - pod.cpu_milli, -1);
  bool unit_held = false, whole_units_only = true, changed = false;
  int64_t held_after = 0;
  for (int32_t i = 0; i < before.n; ++i) {
    unit_held |= before.free[i] < gpu::kMilliPerGpu;
    if (after.free[i] != before.free[i]) {
      changed = true;
      whole_units_only &= before.free[i] == gpu::kMilliPerGpu && after.free[i] == 0;
    }
    held_after += gpu::kMilliPerGpu - after.free[i];
  }
  const bool in_use = unit_held || node.gpus().total_allocated_milli() > 0 || node.requested().milli_cpu > 0;
  std::optional<Packing> pack;
  if (Packs() && changed) {
    pack = Packing{.whole = whole_units_only,
                   .leftover = kRoomScale.Leftover(node.FreeMilliCpu() - pod.cpu_milli,
                                                   int64_t{before.n} * gpu::kMilliPerGpu - held_after)};
  }
  return Key(Frag(before), after, in_use, pack);
}

int64_t FGD::ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const {
  return Evaluate(pod, node).key;
}

ScoreResult FGD::Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  gpu::PodGpu scratch;
  const gpu::PodGpu& p = gpu::PodGpuOf(state, pod, scratch);
  // A node with device-plugin GPUs the pod asks for serves them itself (checked first: it is the
  // common case, and costs no cycle-state lookup).
  if (node.gpus().count() == 0 || !p.request.needs_devices()) {
    if (const DraGpuUnits* dra = DraGpuUnitsOf(state)) {
      if (std::optional<GpuUnitsOnNode> units = dra->UnitsOn(state, pod, node, workload_.model())) {
        return {EvaluateUnits(p, node, *units), Status::Ok()};
      }
    }
  }
  return {ScoreNode(p, node), Status::Ok()};
}

NodeLocalPlugin::ScoreUse FGD::AppendScoreKey(const CycleState& state, const Pod& pod, std::string& key) const {
  if (DraGpuUnitsOf(state) != nullptr) return ScoreUse::kOther;
  return GpuPolicy::AppendScoreKey(state, pod, key);
}

Status FGD::NormalizeScore(const CycleState&, const Pod&, NodeScoreList& scores) const {
  if ((!preserve_idle_nodes_ && !pack_whole_gpus_) || scores.empty()) {
    return Status::Ok();
  }
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

std::optional<DeviceList> FGD::ChooseDevices(const gpu::PodGpu& pod, const gpu::GpuDemand& demand,
                                             const NodeInfo& node) {
  if (demand.kind != gpu::GpuDemand::Kind::kMilli) return std::nullopt;
  Choice c = Evaluate(pod, node);
  if (c.devices.empty()) return std::nullopt;
  return c.devices;
}

}  // namespace tessel::fgd
