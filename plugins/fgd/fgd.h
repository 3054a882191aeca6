// FGD and Tessel (PreFilter, PreScore, Score, NormalizeScore, PreAssume): one implementation
// of fragmentation gradient descent (Weng et al., USENIX ATC'23) with options; the plugin "FGD"
// is the paper's rule, "Tessel" (plugins/tessel_gpu) the same code with Tessel's defaults.
//
// A node scores by how much placing the pod lowers its expected fragmentation under the target
// workload (fragmentation.h):
//   score = floor(100 * sigmoid((F_n,before - F_n,after) / scale))     (F in milli-GPU)
// with scale = sigmoidScaleMilli (FGD: 1000; Tessel: AutoSigmoidScaleMilli of the workload).
// With preserveIdleNodes (Tessel), the raw score is 2 * score + 1 on a node already in use (any
// GPU or CPU allocated), so among nodes tied on the gradient an idle node stays whole; then
// NormalizeScore maps the best to 100 and the rest to 0..99. Without it (FGD), the score is
// used as it is.
// With packWholeGpus (Tessel) and a learned workload, the room a node keeps after placement
// (BestFit's measure, gpu::NodeScale::Leftover at BestFit's default scale: free CPU over 256
// cores plus free GPU over 16 GPUs) ranks nodes too: a whole-GPU pod takes the tightest fit
// first and the gradient breaks its ties; a fraction keeps the gradient (and the in-use term)
// first and the fit breaks its ties. At cold start the learned workload is a guess, and FGD's
// coarse buckets would leave the choice among used nodes to the node order; best fit never does
// worse than GpuBinPack on whole-GPU jobs (tests/gpu/gpu_properties_test.cc). In a steady state
// it fills small and full nodes first, so the nodes whose jobs end drain whole for node-sized
// jobs (docs/bench.md, the steady state). CPU pods keep the gradient.
// With cpuShortfallPercent (Tessel: 100), F_n also counts the node's CPU shortfall
// (fragmentation.h: the idle GPU its free CPU cannot pair with at the workload's CPU per GPU),
// weighted by that percentage of the workload's total weight W: at 100 that GPU counts as
// fragmented for every class. FGD looks one pod ahead; this looks at the pods that will fill
// the node, so CPU-hungry pods go where CPU is plentiful per free GPU and the nodes with little
// CPU per GPU keep it for pods that ask little (docs/gpu.md; openb default 4.69 -> 4.18 %).
// For a fractional pod every device that fits is tried; the first device in index order with
// the highest integer score gives both the node's score and the device. A pod that opted into
// sharing only tries devices already shared (partly allocated) when one fits, so it does not
// open a whole GPU while shared room is free. Whole-GPU and CPU-only pods take the default
// choice (lowest-index free GPUs).
//
// DRA: a pod whose GPUs come through Dynamic Resource Allocation (its claims, or an extended
// resource a DeviceClass serves on a node without the device plugin's GPUs) is scored on such a
// node by the same gradient over the node's GPU units, which DynamicResources reports
// (scheduler/framework/dra_gpu_units.h: before and after the allocation it would choose by the
// same workload). PreFilter puts the workload into the cycle state for that choice. A whole-unit
// allocation counts as whole GPUs for packWholeGpus. A learned workload counts a pod whose GPUs
// come only through its claims when they are reserved (ObserveDraPlacement), by what it took.
//
// Exactness: F is kept as an integer scaled by the workload's total weight W. The sigmoid is
// evaluated once, at construction, to turn "score >= k" into integer thresholds on the scaled
// difference: score >= k  <=>  d >= ceil(scale * W * ln(k / (100 - k))). Scoring itself is
// integer comparisons only (and thresholds are rebuilt when a learned workload changes).
//
// Args: target_workload.h's (targetWorkload, learnHalfLife, coveragePercent, wholeNodePrior),
// plus {sigmoidScaleMilli: <FGD 1000, Tessel auto>, preserveIdleNodes: <FGD false, Tessel true>,
// packWholeGpus: <FGD false, Tessel true>, cpuShortfallPercent: <FGD 0, Tessel 100>}.
#pragma once

#include <array>
#include <optional>
#include <span>

#include "plugins/fgd/target_workload.h"
#include "scheduler/framework/dra_gpu_units.h"
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
gpu::NodeShape ShapeAfter(const gpu::NodeShape& before, const gpu::GpuDevices& gpus, const gpu::GpuDemand& demand,
                     std::span<const int32_t> devices, int64_t cpu_milli);

// The devices a pod takes on a node under a fragmentation score, and that score. A fraction
// (kMilli) tries every device it fits on and keeps the highest `key_of(devices)`, the first
// device on ties (devices with equal free milli leave the same shape, so only the first of
// them is scored); with `shared_first` (the pod opted into sharing) only devices already partly
// allocated are tried when one of them fits. Whole GPUs take the default choice. `key_of` is
// called with a span of the candidate device indices (empty for a CPU-only pod). No devices:
// the pod fits nowhere here.
struct DeviceChoice {
  int64_t key = 0;
  DeviceList devices;
};
template <typename KeyFn>
DeviceChoice ChooseByKey(const gpu::GpuDevices& gpus, const gpu::GpuDemand& demand, bool shared_first,
                         KeyFn key_of) {
  DeviceChoice best;
  if (demand.kind == gpu::GpuDemand::Kind::kMilli) {
    bool only_shared = false;
    for (int32_t i = 0; i < gpus.count() && shared_first && !only_shared; ++i) {
      only_shared = gpus.AllocatedMilli(i) > 0 && gpus.DeviceFits(i, demand.milli, demand.memory_bytes);
    }
    int32_t best_device = -1;
    for (int32_t i = 0; i < gpus.count(); ++i) {
      if (!gpus.DeviceFits(i, demand.milli, demand.memory_bytes)) continue;
      if (only_shared && gpus.AllocatedMilli(i) == 0) continue;
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
  if (demand.kind != gpu::GpuDemand::Kind::kNone) {
    std::optional<DeviceList> d = gpus.DefaultChoice(demand);
    if (!d.has_value()) return best;
    best.devices = *std::move(d);
  }
  best.key = key_of(std::span<const int32_t>(best.devices));
  return best;
}

// 1000 + 1000 * min(1, s / 15%), s = the share of the workload's GPU milli (weight * gpu_milli *
// num_gpu) requested by classes with num_gpu > 1. 1000 (FGD's) with no multi-GPU class.
int64_t AutoSigmoidScaleMilli(const gpu::FragModel& model);

// FGD's args (Tessel's, with other defaults: plugins/tessel_gpu).
struct FGDArgs {
  TargetWorkloadArgs workload;         // targetWorkload, learnHalfLife, coveragePercent, wholeNodePrior
  int64_t sigmoid_scale_milli = 1000;  // 1..1000000; 0: AutoSigmoidScaleMilli of the current target workload
  bool preserve_idle_nodes = false;
  // packWholeGpus: with a learned workload (no targetWorkload), whole-GPU pods go to the node
  // left with the least room after placement (BestFit's measure), the gradient breaking ties;
  // fractions keep the gradient, the least room breaking its ties. CPU pods keep the gradient.
  bool pack_whole_gpus = false;
  // cpuShortfallPercent: 0..10000; the CPU shortfall's weight in F, in percent of W (0: FGD's F).
  int64_t cpu_shortfall_percent = 0;
};

// FGD's args read over `defaults`, with errors naming `plugin` (FGD's ParseArgs and Tessel's).
absl::StatusOr<FGDArgs> ParseFGDArgs(std::string_view plugin, const YAML::Node& yaml, const FGDArgs& defaults);

class FGD final : public gpu::GpuPolicy, public PreFilterPlugin, public GpuWorkloadLearner {
 public:
  static constexpr std::string_view kName = "FGD";
  using Args = FGDArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<FGD>> New(Args args, Handle& handle);
  // `name`: the plugin name the instance answers to (FGD, or Tessel for plugins/tessel_gpu).
  FGD(std::string_view name, const FGDArgs& args, const Handle* handle = nullptr);
  std::string_view Name() const override { return name_; }

  // Counts the pod in a learned workload (once per pod) and keeps the whole-node prior in step
  // with the cluster's node sizes.
  Status PreFilter(CycleState& state, const Pod& pod) override;
  // A pod whose GPUs come only through its own DRA claims is counted when DynamicResources
  // reserves them, by the units its allocation took (it asks no GPU PreFilter could count).
  void ObserveDraPlacement(const Pod& pod, const gpu::TargetClass& placed) override;
  Status NormalizeScore(const CycleState& state, const Pod& pod, NodeScoreList& scores) const override;
  // A node whose GPUs the pod would take through DRA scores by its units (EvaluateUnits); any
  // other node as ScoreNode.
  ScoreResult Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  // Scores of a pod with DRA devices read the cluster's claims: not node-local.
  ScoreUse AppendScoreKey(const CycleState& state, const Pod& pod, std::string& key) const override;
  // Scores follow the target workload: cached scores are taken again when it changes. The
  // normalisation is min-max over the raw scores.
  int64_t ResultVersion() const override { return workload_.version(); }

  // The raw score (see above) and the device the policy picks for a pod on a node (devices
  // empty for CPU-only pods).
  using Choice = DeviceChoice;
  Choice Evaluate(const gpu::PodGpu& pod, const NodeInfo& node) const;
  // The raw score of a node whose DRA units the pod's allocation changes as `units` says.
  int64_t EvaluateUnits(const gpu::PodGpu& pod, const NodeInfo& node, const GpuUnitsOnNode& units) const;
  const TargetWorkload& workload() const { return workload_; }
  int64_t scale_milli() const { return scale_milli_; }

 protected:
  int64_t ScoreNode(const gpu::PodGpu& pod, const NodeInfo& node) const override;
  std::optional<DeviceList> ChooseDevices(const gpu::PodGpu& pod, const gpu::GpuDemand& demand,
                                          const NodeInfo& node) override;

 private:
  void ResetScorer();
  // Keeps a learned workload's node sizes current and, with `count_pod`, counts the pod;
  // rebuilds the scorer when the workload changed.
  void Observe(CycleState& state, const Pod& pod, bool count_pod);
  // packWholeGpus with a learned workload: whether the pod takes whole GPUs, and the room the
  // node keeps after placing it (BestFit's measure at BestFit's default scale).
  struct Packing {
    bool whole = false;
    __int128 leftover = 0;
  };
  static constexpr gpu::NodeScale kRoomScale{};
  bool Packs() const { return pack_whole_gpus_ && workload_.learning(); }
  // F_n (scaled by W) with the CPU shortfall at its weight.
  int64_t Frag(const gpu::NodeShape& shape) const;
  // The raw score of a placement: the gradient from `f_before` to `after`, the in-use tie-break,
  // and with `pack` the tightest fit, before the gradient for whole GPUs and after it for a
  // fraction.
  int64_t Key(int64_t f_before, const gpu::NodeShape& after, bool in_use, std::optional<Packing> pack) const;

  std::string_view name_;
  TargetWorkload workload_;
  int64_t sigmoid_scale_option_;  // FGDArgs::sigmoid_scale_milli
  bool preserve_idle_nodes_;
  bool pack_whole_gpus_;
  int64_t cpu_shortfall_percent_;
  const Handle* handle_;
  int64_t scale_milli_ = 1000;
  int64_t shortfall_weight_ = 0;  // W * cpu_shortfall_percent_ / 100
  SigmoidScorer sigmoid_;
  std::shared_ptr<const gpu::FragModel> published_;  // the workload as DRA's device choice reads it
};

}  // namespace tessel::fgd
