// `tessel-bench inflate`, the offline reference: an LP upper bound on the GPU milli that any
// packing of a set of pods onto the trace's nodes can place, so the inflate report can print how
// little could be unallocated beside each policy ("distance to the limit", docs/bench.md).
//
//   absl::StatusOr<double> most = LpMostPlacedGpuMilli(nodes, arrived);  // GLPK; unavailable without it
//   double floor_pct = 100.0 * (capacity - *most) / capacity;
//
// The model aggregates nodes into types (CPU, memory, GPU count, GPU model) and pods into classes
// (CPU, memory, GPUs, per-GPU milli, allowed models); its variables are how many pods of a class
// go to a type. Every constraint holds for every real packing, so the LP optimum bounds it:
// CPU and memory per type; devices per type (a whole-GPU pod takes its GPUs, a pod of more than
// 500 milli a device of its own); the milli of pods of at most 500 fits the remainders that can
// hold them (for each size m, pods of m or more only in remainders of m or more); at most floor(G/k) pods
// of k or more GPUs per G-GPU node. Linked only into tessel-bench (the scheduler links no solver).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "bench/inflate/trace.h"

namespace tessel::bench {

// The LP bound, or Unavailable when tessel-bench was built without GLPK.
absl::StatusOr<double> LpMostPlacedGpuMilli(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods);

}  // namespace tessel::bench
