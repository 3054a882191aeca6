// GPU fragmentation under a target workload, as defined by FGD (Weng et al., "Beware of
// Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent",
// USENIX ATC'23), in exact integers.
//
// The target workload is a set of pod classes m (CPU milli, GPU milli per GPU, GPU count,
// allowed GPU models) with integer weights w_m (counts). For a node n with idle GPU milli I:
//   frag_n(m) = I                                   if m needs no GPU, or the node's model is
//                                                   not allowed (or its GPU count, for a class
//                                                   bound to one node size), or m does not fit
//             = sum of free milli of devices whose  if m fits: num_gpu devices with free >= m's
//               free < m's gpu_milli                milli (for a whole GPU, fully free ones)
//   F_n = sum_m w_m * frag_n(m)       (milli-GPU x weight; divide by W = sum_m w_m for milli-GPU)
// The paper's F_n is F_n / W. Keeping it scaled by W keeps everything an integer.
//
// CPU shortfall (Tessel's, not FGD's): F_n looks one pod ahead, so a node whose free CPU still
// fits every class once counts as whole, though its GPUs will be filled by many pods that each
// ask CPU. With r = the workload's CPU per GPU milli (sum w*cpu over sum w*gpu_milli*num_gpu of
// the classes that ask GPUs), the node can pair at most cpu_free / r of its idle milli with CPU:
//   shortfall_n = max(0, I - cpu_free / r)          (milli-GPU; I as above)
// the idle GPU that the CPU left on the node will strand, whatever the pods are.
//
// It reads a node's devices and free CPU as plain values (callers pass node.gpus() and
// node.FreeMilliCpu()), so it stands below the cache that holds NodeInfo.
//
//   FragModel model(classes);
//   NodeShape s = NodeShape::Of(node.gpus(), node.FreeMilliCpu(),
//                               model.ModelId(node.gpus().inventory().product));
//   int64_t f = model.NodeFrag(s);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <array>
#include <span>
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/gpu/pod_gpu.h"

namespace tessel::gpu {

struct TargetClass {
  int64_t cpu_milli = 0;
  int64_t gpu_milli = 0;  // per GPU: 1..1000 (1000 for whole GPUs); 0 for CPU-only
  int32_t num_gpu = 0;
  std::vector<std::string> models;  // empty = any
  int64_t weight = 1;
  // Only nodes with exactly this many GPUs count for the class (0 = every node); on other nodes
  // it counts all idle GPU as fragmented, the same before and after any placement, so it does
  // not move the gradient there. The learned workload's whole-node prior uses it.
  int32_t node_gpus = 0;
  bool operator==(const TargetClass&) const = default;
};

// The GPU-relevant state of one node.
struct NodeShape {
  static constexpr int kMaxDevices = 32;  // devices beyond this are left out of the shape
  int32_t model = -1;      // index into FragModel::models(), -1 when no class names it
  int64_t cpu_free = 0;
  int32_t n = 0;           // devices
  std::array<int64_t, kMaxDevices> free{};  // free milli per device, in device order

  int64_t idle() const;
  static NodeShape Of(const GpuDevices& gpus, int64_t cpu_free, int32_t model);
  // From free milli per device (devices past kMaxDevices left out): DRA's GPU units.
  static NodeShape OfFree(std::span<const int64_t> free, int64_t cpu_free, int32_t model);
};

class FragModel {
 public:
  FragModel() = default;
  explicit FragModel(std::vector<TargetClass> classes);

  const std::vector<TargetClass>& classes() const { return classes_; }
  int64_t total_weight() const { return total_weight_; }
  bool empty() const { return classes_.empty(); }
  const std::vector<std::string>& models() const { return models_; }
  // Index of a GPU product among the models the classes name; -1 if none names it.
  int32_t ModelId(std::string_view product) const;

  // F_n scaled by total_weight().
  int64_t NodeFrag(const NodeShape& node) const;
  // frag_n(m) for one class, in milli-GPU.
  int64_t ClassFrag(const NodeShape& node, size_t m) const;
  // shortfall_n above, in milli-GPU (0 when no class asks both CPU and GPUs).
  int64_t CpuShortfall(const NodeShape& node) const;

 private:
  struct Compiled {
    int64_t cpu;
    int64_t threshold;  // gpu_milli
    int32_t num_gpu;
    uint64_t model_mask;  // bit i: models_[i] allowed; all ones = any
    int64_t weight;
    int32_t node_gpus;    // 0 = any node
  };
  std::vector<TargetClass> classes_;
  std::vector<Compiled> compiled_;
  std::vector<std::string> models_;
  int64_t total_weight_ = 0;
  // r = ratio_cpu_ / ratio_gpu_ (CPU milli per GPU milli) over the classes that ask GPUs (the
  // whole-node prior's node-bound classes, which ask no CPU, left out).
  __int128 ratio_cpu_ = 0;
  __int128 ratio_gpu_ = 0;
};

// The classes (cpu_milli, gpu_milli, num_gpu, models) of a pod list, most frequent first (ties
// in first-seen order), kept until they cover `coverage_pct`% of the pods, as FGD picks its
// "typical pods". `pods` are (class, count 1) entries.
std::vector<TargetClass> TypicalClasses(const std::vector<TargetClass>& pods, int64_t coverage_pct);

// The class of one pod (weight 1): a fraction is one GPU of that milli, k whole GPUs are k x 1000.
TargetClass ClassOfPod(const gpu::PodGpu& pod);
// The workload of a set of pods: every class among them, weighted by its count.
FragModel WorkloadOfPods(const std::vector<const Pod*>& pods);

// One node as the cluster-wide measures below read it: its devices and its free CPU milli.
struct GpuNode {
  const GpuDevices* gpus = nullptr;
  int64_t cpu_free = 0;
};

// FGD's measure over a whole cluster: the idle GPU milli that the workload's classes cannot use
// where it sits (sum over nodes of F_n / W), and all idle GPU milli. The one definition behind
// replay's and inflate's fragmentation numbers and the tessel_gpu_fragmentation metric.
struct ClusterFragmentation {
  int64_t fragmented_milli = 0;
  int64_t idle_milli = 0;
};
ClusterFragmentation MeasureFragmentation(const std::vector<GpuNode>& nodes, const FragModel& model);

// GPU capacity and allocation in physical-GPU equivalents (milli): every device is 1000, R
// replicas of one GPU together are 1000, a fraction is its milli, a MIG slice N/7 of 1000.
struct GpuEquivalents {
  int64_t devices = 0;
  int64_t capacity_milli = 0;
  int64_t allocated_milli = 0;
};
GpuEquivalents SumGpuEquivalents(const std::vector<GpuNode>& nodes);

}  // namespace tessel::gpu
