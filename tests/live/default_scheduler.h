// DefaultScheduler: a Scheduler with the in-tree plugins and the default profile, and the
// registry, configuration and cache it is made of, for the live tests that need one beside the
// fake API server (the feed, the metrics, the dashboard, the binding). The clock is the test's:
// real where informers run, manual where the test moves time.
//
//   RealClock clock;
//   DefaultScheduler d(&clock);
//   SchedulerFeed feed(client.get(), d.s.get());
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <utility>

#include "plugins/registry.h"
#include "scheduler/core/scheduler.h"

namespace tessel {

struct DefaultScheduler {
  explicit DefaultScheduler(const Clock* clock, SchedulerConfig with = {}, ClusterApi* api = nullptr)
      : config(std::move(with)), cache(clock) {
    auto made = Scheduler::New({.registry = &registry, .config = &config, .defaults = &DefaultProfile(),
                                .cache = &cache, .clock = clock, .api = api});
    REQUIRE(made.ok());
    s = *std::move(made);
  }

  Registry registry = InTreeRegistry();
  SchedulerConfig config;
  Cache cache;
  std::unique_ptr<Scheduler> s;
};

}  // namespace tessel
