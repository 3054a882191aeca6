// The workload of `tessel-bench e2e` and what a perfect packer would do with it. Pure functions,
// no I/O (the live part is e2e.cc).
//
// Nodes have kGpusPerNode whole GPUs; pods ask 1, 2, 4 or 8 of them, drawn from a seed with the
// weights below. Because every size divides the next (and the node's 8), any set of pods whose
// GPUs add up to at most the cluster's total fits on the nodes: first-fit in decreasing size
// leaves no gap. So the most pods any scheduler can bind (the "placeable" count) is what you get
// by taking the pods smallest first while their sum fits, and PerfectPlan realises it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::bench::e2e {

inline constexpr int64_t kGpusPerNode = 8;

// Percent of pods asking 1, 2, 4 and 8 GPUs: a mean of 2.45 GPUs, so 2,800 pods ask about 86 %
// of 1,000 nodes' GPUs (the reference point asked 87 %).
inline constexpr int kSizePercent[4] = {45, 30, 15, 10};

// The GPU count of each of `pods` pods, reproducible from `seed` on every platform.
std::vector<int64_t> GeneratePodSizes(uint64_t seed, int64_t pods);

// The most pods that can be bound at once on `nodes` nodes (see the file comment).
int64_t PlaceableCount(const std::vector<int64_t>& sizes, int64_t nodes);

// A node index per pod (-1: left unbound) binding PlaceableCount pods with no node over its
// GPUs: the smallest pods are chosen, then placed first-fit in decreasing size.
std::vector<int64_t> PerfectPlan(const std::vector<int64_t>& sizes, int64_t nodes);

}  // namespace tessel::bench::e2e
