// The target workload a fragmentation-aware policy measures fragmentation against: either
// configured (a list of pod classes with weights) or learned from the pods the scheduler sees.
//
// Learning keeps a count per pod class; every `half_life` observed pods all counts are halved
// (integer), so the distribution follows the recent mix. The model is the most frequent classes
// covering `coverage_pct`% of the counts, looked at every 32 observations (within the first 32:
// at the 1st, 2nd, 4th, 8th, 16th and 32nd, and whenever a class is seen for the first time)
// and rebuilt only when it changed materially: a class came or went, or a class's
// share of the learned weight moved by more than 1/kMaterialShareDen (2 percentage points) since
// the model was last built. A converged stream thus stops changing the model (and its version,
// which caches of every node's score follow), while a shift of the mix still reaches it. Each pod is counted
// once, by its UID (or namespace/name when it has none): a pod retried after a failed attempt
// is not counted again (the last 65536 pods are remembered).
//
// Whole-node prior (learning mode only): for every node size in the cluster (GPU count G), the
// model also holds the class "G whole GPUs, on a G-GPU node" with a weight equal to the total
// weight of the learned classes (at least 1). The rule, not a fit: with that weight, placing a
// pod of at most G/2 whole GPUs on an idle G-GPU node always raises the node's fragmentation by
// more than placing it on a G-GPU node already in use that fits it
//   (prior: -(G-k)w on the idle node vs +k w on the used one; the learned classes: at most
//    0 on the idle node vs at least -(G-1-k)W on the used one; w >= W makes the sum favour the
//    used node),
// so a fresh scheduler packs before it opens idle nodes, whatever small pods it has seen, and
// the prior keeps its share however many pods are learned. With no pods seen yet the model is
// the prior alone.
//
// Args (shared by FGD and Tessel):
//   targetWorkload: [{cpuMilli: 8000, gpuMilli: 500, numGpu: 1, models: [T4], weight: 12}, ...]
//   learnHalfLife: 2000       # pods; used when targetWorkload is empty
//   coveragePercent: 95
//   wholeNodePrior: true      # learning mode: add the whole-node classes above
#pragma once

#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <unordered_set>

#include "absl/status/statusor.h"
#include "plugins/gpu_share/gpu_policy.h"
#include "scheduler/framework/plugin_util.h"
#include "scheduler/gpu/fragmentation.h"
#include "yaml-cpp/yaml.h"

namespace tessel::fgd {

// The args above, typed.
struct TargetWorkloadArgs {
  std::vector<gpu::TargetClass> classes;  // targetWorkload; empty: learned
  int64_t learn_half_life = 2000;    // pods
  int64_t coverage_percent = 95;     // 1..100
  bool whole_node_prior = true;
};

// Reads the args above with `reader` (its plugin's; the caller checks for unknown keys), with
// errors naming the plugin and the field.
absl::StatusOr<TargetWorkloadArgs> ParseTargetWorkloadArgs(const ArgsReader& reader);

class TargetWorkload {
 public:
  explicit TargetWorkload(const TargetWorkloadArgs& args);

  const gpu::FragModel& model() const { return model_; }
  bool learning() const { return learning_; }
  // Counts the pod's class once per `pod_id` (learning mode only; a repeated id is ignored).
  // Returns true when the model was rebuilt.
  bool Observe(const gpu::PodGpu& pod, std::string_view pod_id);
  // The same for a class known otherwise (a pod's DRA devices, as placed).
  bool ObserveClass(const gpu::TargetClass& c, std::string_view pod_id);
  // The GPU counts of the cluster's GPU nodes, for the whole-node prior (learning mode only).
  // Returns true when the set changed and the model was rebuilt.
  bool SetNodeSizes(std::vector<int32_t> sizes);
  // The learned counts of one class (doubled; see Observe), 0 when absent. For tests.
  int64_t CountOf(const gpu::TargetClass& c) const;
  int64_t observed() const { return observed_; }
  // The node sizes the whole-node prior was built for (empty unless learning with the prior).
  const std::vector<int32_t>& node_sizes() const { return node_sizes_; }
  // Bumped whenever the model changes (for caches keyed on it).
  int64_t version() const { return version_; }

  static gpu::TargetClass ClassOf(const gpu::PodGpu& pod);
  // Whether a newly learned class list differs materially from the one the model holds (see
  // above). Public for tests.
  static constexpr int64_t kMaterialShareDen = 50;
  // Whether the model is looked at after the `observed`-th pod (`new_class`: that pod's class
  // had no count). Public for tests.
  static constexpr int64_t kEarlyLooks = 32;
  static bool IsLook(int64_t observed, bool new_class);
  static bool MateriallyDifferent(const std::vector<gpu::TargetClass>& now,
                                  const std::vector<gpu::TargetClass>& adopted);
  // The pod's identity for Observe: its UID, or namespace/name when it has none.
  static std::string PodId(const Pod& pod);

 private:
  void Rebuild();
  std::vector<gpu::TargetClass> LearnedClasses() const;  // the typical classes of the counts now
  void Adopt(std::vector<gpu::TargetClass> learned);     // builds the model (and the prior) from them
  bool Remember(std::string_view pod_id);

  gpu::FragModel model_;
  bool learning_ = false;
  bool whole_node_prior_ = true;
  std::vector<int32_t> node_sizes_;
  std::vector<gpu::TargetClass> learned_;  // the learned classes the model was built from
  std::unordered_set<std::string> seen_ids_;
  std::deque<std::string> seen_order_;
  int64_t half_life_ = 2000;
  int64_t coverage_pct_ = 95;
  int64_t observed_ = 0;
  int64_t version_ = 0;
  std::map<std::tuple<int64_t, int64_t, int32_t, std::vector<std::string>>, std::pair<int64_t, int64_t>>
      counts_;  // class -> (count, first seen)
};

}  // namespace tessel::fgd
