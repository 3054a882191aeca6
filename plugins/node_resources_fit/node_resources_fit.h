// NodeResourcesFit (Filter, Score): the pod's requests must fit in the node's free allocatable
// resources (cpu, memory, ephemeral-storage, the pod count and every extended resource such as
// nvidia.com/gpu), with kube-scheduler's reasons ("Insufficient nvidia.com/gpu", "Too many
// pods"). An extended resource a DRA DeviceClass serves is not checked on a node that has none of
// it: DynamicResources allocates a device for it there (scheduler/framework/dra_extended.h).
// Scoring follows kube's scoringStrategy:
//   LeastAllocated  sum_r w_r * (allocatable_r - requested_r) * 100 / allocatable_r / sum_r w_r
//   MostAllocated   sum_r w_r * requested_r * 100 / allocatable_r / sum_r w_r
// where requested_r includes this pod; resources the node has none of are left out. Integer
// arithmetic throughout.
//
// Args:
//   scoringStrategy: {type: LeastAllocated|MostAllocated, resources: [{name: cpu, weight: 1}, ...]}
//   ignoredResources: [example.com/foo]   # never filtered on
#pragma once

#include <string>
#include <vector>

#include "scheduler/framework/dra_extended.h"
#include "scheduler/framework/node_local.h"
#include "scheduler/framework/registry.h"

namespace tessel::node_resources_fit {

enum class Strategy { kLeastAllocated, kMostAllocated };

struct ResourceWeight {
  std::string name;
  int64_t weight = 1;
};

struct NodeResourcesFitArgs {
  Strategy strategy = Strategy::kLeastAllocated;
  std::vector<ResourceWeight> resources = {{"cpu", 1}, {"memory", 1}};
  std::vector<std::string> ignored;
};

// The names of the resources the pod lacks on the node ("Too many pods" for the pod count).
// Resources `served_by_dra` names are not checked where the node has none (dra_extended.h).
std::vector<std::string> InsufficientResources(const Pod& pod, const NodeInfo& node,
                                               const std::vector<std::string>& ignored = {},
                                               const DraExtendedResources* served_by_dra = nullptr);

// The strategy's 0..100 score for placing `pod` on `node`.
int64_t AllocationScore(const NodeResourcesFitArgs& args, const Pod& pod, const NodeInfo& node);

class NodeResourcesFit final : public FilterPlugin, public ScorePlugin, public NodeLocalPlugin {
 public:
  static constexpr std::string_view kName = "NodeResourcesFit";
  using Args = NodeResourcesFitArgs;
  static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);
  static absl::StatusOr<std::unique_ptr<NodeResourcesFit>> New(Args args, Handle& handle);
  explicit NodeResourcesFit(Args args) : args_(std::move(args)) {}
  std::string_view Name() const override { return kName; }
  uint32_t EventsToRegister() const override { return kNodeAdd | kNodeUpdate | kAssignedPodDelete; }
  // A pod leaving a node helps only where the room it leaves holds every resource the pod
  // requests that this plugin checks (the ignored ones are not asked for).
  uint32_t EventsHintedByRoom() const override { return kAssignedPodDelete; }
  void AddRoomNeed(const Pod& pod, Resources& need) const override;
  Status Filter(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  // The same sums with `freed` given back: exact for this filter.
  bool MayFitAfterFreeing(const CycleState& state, const Pod& pod, const NodeInfo& node,
                          const Resources& freed) const override;
  ScoreResult Score(const CycleState& state, const Pod& pod, const NodeInfo& node) const override;
  // Filter and Score read the pod's requests and the node (the args are fixed).
  bool AppendFilterKey(const CycleState& state, const Pod& pod, std::string& key) const override {
    AppendResources(pod.requests, key);
    AppendDraExtendedKey(state, key);
    return true;
  }
  ScoreUse AppendScoreKey(const CycleState&, const Pod& pod, std::string& key) const override {
    AppendResources(pod.requests, key);
    return ScoreUse::kNodeLocal;
  }

 private:
  Args args_;
};

}  // namespace tessel::node_resources_fit
