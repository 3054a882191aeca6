// The e2e workload and the perfect packer: see workload.h.
#include "bench/e2e/workload.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace tessel::bench::e2e {

std::vector<int64_t> GeneratePodSizes(uint64_t seed, int64_t pods) {
  // mt19937_64's output is fixed by the standard (the distributions are not), so the sizes are
  // taken from its raw output.
  std::mt19937_64 rng(seed);
  std::vector<int64_t> sizes;
  sizes.reserve(static_cast<size_t>(std::max<int64_t>(pods, 0)));
  for (int64_t i = 0; i < pods; ++i) {
    int roll = static_cast<int>(rng() % 100);
    int k = 0;
    while (k < 3 && roll >= kSizePercent[k]) roll -= kSizePercent[k++];
    sizes.push_back(int64_t{1} << k);  // 1, 2, 4, 8
  }
  return sizes;
}

namespace {

// Pod indices, smallest first (ties by index, so the choice is reproducible).
std::vector<size_t> SmallestFirst(const std::vector<int64_t>& sizes) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sizes[a] < sizes[b]; });
  return order;
}

}  // namespace

int64_t PlaceableCount(const std::vector<int64_t>& sizes, int64_t nodes) {
  int64_t left = nodes * kGpusPerNode;
  int64_t count = 0;
  for (size_t i : SmallestFirst(sizes)) {
    if (sizes[i] > left) break;
    left -= sizes[i];
    ++count;
  }
  return count;
}

std::vector<int64_t> PerfectPlan(const std::vector<int64_t>& sizes, int64_t nodes) {
  std::vector<int64_t> plan(sizes.size(), -1);
  std::vector<size_t> chosen = SmallestFirst(sizes);
  chosen.resize(static_cast<size_t>(PlaceableCount(sizes, nodes)));
  std::stable_sort(chosen.begin(), chosen.end(),
                   [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  // Decreasing power-of-two sizes fill nodes in order without gaps: a node is full exactly
  // when the next pod no longer fits, so one cursor suffices.
  int64_t node = 0;
  int64_t used = 0;
  for (size_t i : chosen) {
    if (used + sizes[i] > kGpusPerNode) {
      ++node;
      used = 0;
    }
    plan[i] = node;
    used += sizes[i];
  }
  return plan;
}

}  // namespace tessel::bench::e2e
