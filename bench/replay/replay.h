// `tessel-bench replay`: schedule the pending pods of a recorded cluster snapshot (a v1 List as
// `kubectl get nodes,pods,priorityclasses -A -o json` prints it) and report every decision:
//   {"placements": {"ns/name": "node" | null}, "reasons": {"ns/name": "why"},
//    "evicted": [...], "warnings": [...], "metrics": {...}}
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tessel::bench {

struct ReplayOptions {
  std::string snapshot_path;
  std::string config_path;  // empty: the default profile
  uint64_t seed = 42;
};

// Fails only when the snapshot or configuration cannot be read at all.
absl::StatusOr<nlohmann::json> RunReplay(const ReplayOptions& options);
// Same, from the snapshot's text (tests).
absl::StatusOr<nlohmann::json> RunReplayText(std::string_view snapshot, const ReplayOptions& options);

// The result as an aligned, human-readable table of placements.
std::string FormatPlacementTable(const nlohmann::json& result);

int ReplayMain(int argc, char** argv);

}  // namespace tessel::bench
