// One Scheduler on a SimulatedCluster with a virtual clock: the setup every offline bench (and
// the differential test) shares.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<SimWorld> w, SimWorld::New({.config = &config, .seed = 7}));
//   w->sim.Load(objects);
//   w->sim.RunUntilIdle();
//   w->sim.placements();
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/sim/simulated_cluster.h"
#include "plugins/registry.h"

namespace tessel::bench {

struct SimWorldOptions {
  const SchedulerConfig* config = nullptr;                // required
  const Registry* registry = nullptr;                     // null: the in-tree plugins
  const ProfileConfig* defaults = nullptr;                // null: DefaultProfile()
  uint64_t seed = 42;
  bool reference_evaluation = false;                      // every node in every cycle
  SchedulingObserver* observer = nullptr;                 // null: the simulated cluster itself
  BindExecutor* bind_executor = nullptr;                  // null: binds inline
  bool gang_status = true;                                // PodGroup reports go to the cluster
  // For the core tests (tests/harness/core_harness.h): another ClusterApi than the simulated
  // cluster, another PodGroup report sink, more plugins, another start of the virtual clock.
  ClusterApi* api = nullptr;                              // null: the simulated cluster
  gang::GangStatusSink* gang_status_sink = nullptr;       // null: per gang_status
  provisioning::Provisioner* provisioner = nullptr;       // null: no ProvisioningRequests
  std::vector<std::pair<std::string, PluginFactory>> plugins;  // registered besides the in-tree ones
  absl::Time start = absl::FromUnixSeconds(1'700'000'000);
};

struct SimWorld {
  static absl::StatusOr<std::unique_ptr<SimWorld>> New(const SimWorldOptions& options);

  // The members hold pointers to each other: a world is never moved (hence New).
  SimWorld();
  SimWorld(const SimWorld&) = delete;
  SimWorld& operator=(const SimWorld&) = delete;

  Registry registry;
  ManualClock clock;
  Cache cache;
  SimulatedCluster sim;
  std::unique_ptr<Scheduler> scheduler;
};

}  // namespace tessel::bench
