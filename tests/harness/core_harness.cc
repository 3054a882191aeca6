// The core tests' harness (see core_harness.h). Setup failures fail the test (REQUIRE).
#include "harness/core_harness.h"

#include <catch2/catch.hpp>

#include <atomic>

namespace tessel::testing {
namespace {

SchedulerConfig ParseConfig(const CoreHarnessOptions& o) {
  SchedulerConfig config;
  if (!o.config_yaml.empty()) {
    auto parsed = ParseSchedulerConfig(o.config_yaml);
    INFO(parsed.status().message());
    REQUIRE(parsed.ok());
    config = *std::move(parsed);
  }
  if (o.parallelism > 0) config.parallelism = o.parallelism;
  return config;
}

std::unique_ptr<bench::SimWorld> MakeWorld(const CoreHarnessOptions& o, const SchedulerConfig* config,
                                           ClusterApi* api) {
  auto world = bench::SimWorld::New({.config = config,
                                     .observer = o.observer,
                                     .api = api,
                                     .gang_status_sink = o.gang_status,
                                     .provisioner = o.provisioner,
                                     .plugins = o.plugins,
                                     .start = o.start});
  INFO(world.status().message());
  REQUIRE(world.ok());
  return *std::move(world);
}

}  // namespace

CoreHarness::CoreHarness(CoreHarnessOptions options)
    : config(ParseConfig(options)),
      world_(MakeWorld(options, &config, &api)),
      registry(world_->registry),
      clock(world_->clock),
      cache(world_->cache),
      sim(world_->sim),
      s(world_->scheduler) {
  if (options.confirm_binds) {
    api.on_bind = [this](const Pod& pod, const std::string& node) {
      Pod bound = pod;
      bound.node_name = node;
      s->OnPodUpdate(std::move(bound));
    };
  }
}

int64_t CoreHarness::RunUntilIdle() {
  const std::atomic<bool> never{false};
  return s->Run(never);
}

int CoreHarness::ScheduleAll(int max_cycles) {
  int cycles = 0;
  while (cycles < max_cycles && s->ScheduleOne()) ++cycles;
  return cycles;
}

}  // namespace tessel::testing
