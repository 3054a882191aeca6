// The workload of `tessel-bench e2e` and its perfect packer (bench/e2e/workload.h): sizes are
// reproducible, the plan never overfills a node, and the placeable count is the true maximum
// (checked against exhaustive search on small clusters).
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <random>
#include <set>
#include <vector>

#include "bench/e2e/workload.h"

namespace tessel::bench::e2e {
namespace e2e_workload_test {

// The most pods of `sizes` that fit on `nodes` nodes, by trying every assignment.
int64_t BruteForceMax(const std::vector<int64_t>& sizes, int64_t nodes) {
  std::vector<int64_t> free(static_cast<size_t>(nodes), kGpusPerNode);
  int64_t best = 0;
  std::function<void(size_t, int64_t)> go = [&](size_t i, int64_t placed) {
    if (i == sizes.size()) {
      best = std::max(best, placed);
      return;
    }
    go(i + 1, placed);  // leave pod i out
    for (auto& f : free) {
      if (f >= sizes[i]) {
        f -= sizes[i];
        go(i + 1, placed + 1);
        f += sizes[i];
      }
    }
  };
  go(0, 0);
  return best;
}

TEST_CASE("e2e pod sizes are 1, 2, 4 or 8 GPUs, reproducible from the seed", "[e2e]") {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const auto sizes = GeneratePodSizes(seed, 500);
    REQUIRE(sizes.size() == 500);
    CHECK(sizes == GeneratePodSizes(seed, 500));
    for (int64_t s : sizes) REQUIRE((s == 1 || s == 2 || s == 4 || s == 8));
    CHECK(sizes != GeneratePodSizes(seed + 1, 500));
  }
  // The mix follows kSizePercent (within 1 point over 200,000 pods).
  const auto many = GeneratePodSizes(7, 200000);
  for (int k = 0; k < 4; ++k) {
    const auto n = std::count(many.begin(), many.end(), int64_t{1} << k);
    CHECK(std::abs(n * 100 / 200000 - kSizePercent[k]) <= 1);
  }
}

TEST_CASE("e2e perfect plan: no node overfilled, placeable pods all bound, count is maximal",
          "[e2e]") {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    const int64_t nodes = 1 + static_cast<int64_t>(rng() % 40);
    const int64_t pods = 1 + static_cast<int64_t>(rng() % (nodes * 6));
    const auto sizes = GeneratePodSizes(seed, pods);
    const int64_t placeable = PlaceableCount(sizes, nodes);
    const auto plan = PerfectPlan(sizes, nodes);
    INFO("seed " << seed << ", " << nodes << " nodes, " << pods << " pods");
    REQUIRE(plan.size() == sizes.size());
    std::vector<int64_t> used(static_cast<size_t>(nodes), 0);
    int64_t placed = 0, asked = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
      asked += sizes[i];
      if (plan[i] < 0) continue;
      REQUIRE(plan[i] < nodes);
      used[static_cast<size_t>(plan[i])] += sizes[i];
      ++placed;
    }
    CHECK(placed == placeable);
    for (int64_t u : used) REQUIRE(u <= kGpusPerNode);
    if (asked <= nodes * kGpusPerNode) CHECK(placeable == pods);
    // No pod left out would fit in the GPUs the plan leaves free anywhere.
    for (size_t i = 0; i < plan.size(); ++i) {
      if (plan[i] >= 0) continue;
      for (int64_t u : used) CHECK(kGpusPerNode - u < sizes[i]);
    }
  }
}

TEST_CASE("e2e placeable count equals exhaustive search on small clusters", "[e2e]") {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    const int64_t nodes = 1 + static_cast<int64_t>(rng() % 2);
    const int64_t pods = 1 + static_cast<int64_t>(rng() % 7);
    const auto sizes = GeneratePodSizes(seed * 31, pods);
    INFO("seed " << seed);
    CHECK(PlaceableCount(sizes, nodes) == BruteForceMax(sizes, nodes));
  }
}

}  // namespace e2e_workload_test
}  // namespace tessel::bench::e2e
