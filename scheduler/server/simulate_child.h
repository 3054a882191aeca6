// The admin API's Simulate in a child process, so that a snapshot, however built, cannot take
// the leader's memory or its CPU for long: the scheduler runs itself again
// (/proc/self/exe --simulate-child), hands it the snapshot on stdin and reads replay's JSON on
// stdout. The child caps its own address space and CPU time (setrlimit) before reading, refuses
// a cluster larger than max_nodes or max_pods, and is killed when its wall-clock budget passes
// or its caller gives up.
//
//   // parent (a ReplayFn for SchedulerAdminBackend):
//   ReplayInChild(snapshot, {.config_path = flags.config}, control);
//   // main(), first thing:
//   if (IsSimulateChild(argc, argv)) return SimulateChildMain(argc, argv, replay_text);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/server/admin_service.h"

namespace tessel::server {

struct ChildReplayOptions {
  std::string executable = "/proc/self/exe";
  std::string config_path;  // the scheduler's --config ("" for the defaults)
  int64_t memory_bytes = int64_t{768} << 20;  // the child's address space (RLIMIT_AS)
  absl::Duration timeout = absl::Seconds(60);  // wall clock, and the child's CPU time
  int64_t max_nodes = 5000;
  int64_t max_pods = 100000;
  size_t max_output_bytes = 64 << 20;
};

// RESOURCE_EXHAUSTED when the child went past its memory budget, DEADLINE_EXCEEDED past its
// time, CANCELLED when the caller gave up, INVALID_ARGUMENT for a snapshot it refused.
absl::StatusOr<std::string> ReplayInChild(std::string_view snapshot, const ChildReplayOptions& options,
                                          const CallControl& control);

// The child's side.
using ReplayTextFn = std::function<absl::StatusOr<std::string>(std::string_view snapshot, const std::string& config)>;
bool IsSimulateChild(int argc, char** argv);
int SimulateChildMain(int argc, char** argv, const ReplayTextFn& replay);

}  // namespace tessel::server
