// The core tests' harness: one Scheduler on a SimWorld (bench/sim/sim_world.h), the shared
// FakeClusterApi (scheduler/testing/fake_cluster_api.h) in place of the simulated cluster's API,
// and the inputs and runs the tests need. A fixture holds one and names its pieces:
//
//   CoreHarness h({.config_yaml = kConfig, .observer = &observer});
//   h.AddNode(NodeBuilder("n1").Allocatable("cpu:8,memory:32Gi,nvidia.com/gpu:8").Build());
//   h.s->OnPodAdd(pod);
//   h.RunUntilIdle();
//   h.api.binds;   // every bind asked, in order
//
// Binds are confirmed as an informer would (the pod comes back bound), unless confirm_binds is
// off. Gang and queue objects enter only through ApplyGangObject / ApplyQueueObject, so that
// a change of the core's entry points changes this file alone.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/sim/sim_world.h"
#include "nlohmann/json.hpp"
#include "scheduler/kinds/object_kinds.h"
#include "scheduler/testing/fake_cluster_api.h"

namespace tessel::testing {

struct CoreHarnessOptions {
  std::string config_yaml;  // "": no profile of its own (the default profile)
  int parallelism = 0;      // 0: the configuration's
  std::vector<std::pair<std::string, PluginFactory>> plugins;  // besides the in-tree ones
  SchedulingObserver* observer = nullptr;        // null: the simulated cluster
  gang::GangStatusSink* gang_status = nullptr;   // null: the simulated cluster
  provisioning::Provisioner* provisioner = nullptr;  // null: none (as in replay)
  absl::Time start = absl::UnixEpoch();          // the manual clock's first reading
  bool confirm_binds = true;                     // a bind comes back as the pod's update
};

class CoreHarness {
 public:
  explicit CoreHarness(CoreHarnessOptions options = {});
  CoreHarness(const CoreHarness&) = delete;
  CoreHarness& operator=(const CoreHarness&) = delete;

  void AddNode(Node node) { s->OnNodeAdd(std::move(node)); }
  void AddPod(Pod pod) { s->OnPodAdd(std::move(pod)); }
  // Gangs (PodGroup, Workload, Job) and team Queues, as their informers deliver them.
  // Through the kind table, as the informers and the simulator deliver them.
  absl::StatusOr<bool> ApplyGangObject(const nlohmann::json& object) { return DeliverObject(*s, object); }
  absl::Status ApplyQueueObject(const nlohmann::json& object) { return DeliverObject(*s, object).status(); }
  // Runs the loop until no pod is ready; returns the attempts made.
  int64_t RunUntilIdle();
  // One cycle after another until the queue has nothing ready (at most `max_cycles`); returns
  // how many ran.
  int ScheduleAll(int max_cycles = 1000);
  // Every bind the scheduler asked, (pod key, node), in order.
  const std::vector<std::pair<std::string, std::string>>& binds() const { return api.binds; }

  FakeClusterApi api;
  SchedulerConfig config;

 private:
  std::unique_ptr<bench::SimWorld> world_;

 public:
  Registry& registry;
  ManualClock& clock;
  Cache& cache;
  bench::SimulatedCluster& sim;
  std::unique_ptr<Scheduler>& s;
};

}  // namespace tessel::testing
