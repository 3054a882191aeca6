// The shared bench setup (see sim_world.h).
#include "bench/sim/sim_world.h"

namespace tessel::bench {

SimWorld::SimWorld()
    : registry(InTreeRegistry()), clock(absl::FromUnixSeconds(1'700'000'000)), cache(&clock), sim(&clock) {}

absl::StatusOr<std::unique_ptr<SimWorld>> SimWorld::New(const SimWorldOptions& options) {
  auto w = std::make_unique<SimWorld>();
  w->clock.Set(options.start);
  for (const auto& [name, factory] : options.plugins) {
    if (absl::Status st = w->registry.Register(name, factory); !st.ok()) return st;
  }
  gang::GangStatusSink* gang_status = options.gang_status ? &w->sim : nullptr;
  if (options.gang_status_sink != nullptr) gang_status = options.gang_status_sink;
  auto scheduler = Scheduler::New(SchedulerParams{
      .registry = options.registry != nullptr ? options.registry : &w->registry,
      .config = options.config,
      .defaults = options.defaults != nullptr ? options.defaults : &DefaultProfile(),
      .cache = &w->cache,
      .clock = &w->clock,
      .api = options.api != nullptr ? options.api : &w->sim,
      .observer = options.observer != nullptr ? options.observer : &w->sim,
      .bind_executor = options.bind_executor,
      .seed = options.seed,
      .gang_status = gang_status,
      .provisioner = options.provisioner,
      .reference_evaluation = options.reference_evaluation});
  if (!scheduler.ok()) return scheduler.status();
  w->scheduler = *std::move(scheduler);
  w->sim.Attach(w->scheduler.get());
  return w;
}

}  // namespace tessel::bench
