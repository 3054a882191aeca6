// Tessel (PreFilter, PreScore, Score, NormalizeScore, PreAssume): Tessel's default GPU policy.
// It is FGD (plugins/fgd/fgd.h; Weng et al., ATC'23) with four options on by default:
//   - sigmoidScaleMilli: auto. The gradient's scale is FGD's 1000 milli-GPU, raised in
//     proportion to the multi-GPU pods' share of the target workload's GPU milli, up to 2000 at
//     a share of 15% (AutoSigmoidScaleMilli). Coarser buckets leave more nodes tied, so the
//     preservation tie-break decides more often. Ranking by the exact dF instead is worse than
//     FGD (about +1 pp on openb): near-equal nodes are equally good for the future, and the
//     integer buckets leave them tied, to fall to the seeded node order.
//   - preserveIdleNodes: true. Among nodes tied on the gradient, a node already in use wins
//     over an idle one, so idle nodes stay whole for large jobs.
//   - packWholeGpus: true. With a learned workload (no targetWorkload), a whole-GPU pod goes to
//     the node left with the least room after placement (BestFit's measure over CPU and GPU),
//     the gradient breaking ties, and a fraction's gradient ties go to that node too: small and
//     full nodes fill first, so nodes whose jobs end drain whole. CPU pods keep the gradient,
//     which the whole-node prior of target_workload.h keeps from opening idle nodes. A
//     configured workload (the FGD paper's experiment) is not affected.
//   - cpuShortfallPercent: 100. A node's expected fragmentation also counts the idle GPU its free
//     CPU cannot pair with at the workload's CPU per GPU (FragModel::CpuShortfall), weighted as
//     the whole workload: FGD looks one pod ahead, and keeps filling a node's CPU while each
//     single class still fits, stranding its last GPUs (openb default: 4.69 -> 4.18 %
//     unallocated at 100 % arrived; docs/gpu.md).
//
// Args: as FGD's; {sigmoidScaleMilli: 1000, preserveIdleNodes: false, packWholeGpus: false,
// cpuShortfallPercent: 0} makes it exactly FGD.
#pragma once

#include "plugins/fgd/fgd.h"

namespace tessel::tessel_gpu {

using fgd::AutoSigmoidScaleMilli;

// FGD's args with Tessel's defaults.
struct TesselArgs : fgd::FGDArgs {
  TesselArgs() {
    sigmoid_scale_milli = 0;  // auto
    preserve_idle_nodes = true;
    pack_whole_gpus = true;
    cpu_shortfall_percent = 100;
  }
};

// The factory: an fgd::FGD instance named "Tessel" with Tessel's defaults.
struct Tessel {
  static constexpr std::string_view kName = "Tessel";
  using Choice = fgd::DeviceChoice;
  using Args = TesselArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<fgd::FGD>> New(Args args, Handle& handle);
};

}  // namespace tessel::tessel_gpu
