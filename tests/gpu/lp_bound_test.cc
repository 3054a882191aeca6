// The inflate experiment's LP bound (bench/inflate/bound.h) on tiny instances whose LP optimum is
// worked out by hand: a full packing, a remainder too small for the small pods, a GPU model
// constraint, multi-GPU pods, CPU. Without GLPK the bound must say it is unavailable.
#include <catch2/catch.hpp>

#include "bench/inflate/bound.h"

namespace tessel::bench {
namespace lp_bound_test {

TraceNode Node2(int32_t gpus, int64_t cpu_milli = 64000, std::string model = "V100") {
  return {.sn = "n", .cpu_milli = cpu_milli, .memory_mib = 262144, .gpus = gpus, .model = std::move(model)};
}

std::vector<TracePod> Pods(int n, int32_t gpus, int64_t milli, int64_t cpu = 1000, std::vector<std::string> spec = {}) {
  std::vector<TracePod> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({.name = "p", .cpu_milli = cpu, .memory_mib = 1024, .num_gpu = gpus, .gpu_milli = milli,
                   .gpu_spec = spec});
  }
  return out;
}

std::vector<TracePod> Concat(std::vector<TracePod> a, const std::vector<TracePod>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

#ifdef TESSEL_HAVE_GLPK

TEST_CASE("lp bound: tiny instances solved by hand", "[gpu][bound]") {
  struct Case {
    std::string name;
    std::vector<TraceNode> nodes;
    std::vector<TracePod> pods;
    double want;
  };
  const std::vector<Case> cases = {
      // 800 + 200 on each of two GPUs: full.
      {"full", {Node2(2)}, Concat(Pods(3, 1, 800), Pods(4, 1, 200)), 2000},
      // Two 800s leave 200 each, too little for a 300. Per device: an 800 gives 800, a device
      // left open gives up to 1,000 of 300s, and only 600 of them exist: open = 0.6 device,
      // 1.4 devices of 800s: 1,120 + 600 = 1,720 (a real packing places 1,600).
      {"stranded remainder", {Node2(2)}, Concat(Pods(2, 1, 800), Pods(2, 1, 300)), 1720},
      // Two whole GPUs that need an A100 cannot use a V100 node; the unconstrained one can.
      {"gpu model", {Node2(2)}, Concat(Pods(2, 1, 1000, 1000, {"A100"}), Pods(1, 1, 1000, 1000, {"A100", "V100"})), 1000},
      // At most one 5-GPU pod on an 8-GPU node.
      {"multi-gpu", {Node2(8)}, Pods(2, 5, 1000), 5000},
      // 4 CPUs, pods of 3: 4/3 of a pod in the aggregate (a real packing places 1).
      {"cpu", {Node2(2, 4000)}, Pods(2, 1, 1000, 3000), 4000.0 / 3},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      absl::StatusOr<double> most = LpMostPlacedGpuMilli(c.nodes, c.pods);
      REQUIRE(most.ok());
      CHECK(*most == Approx(c.want).epsilon(1e-9));
    }
  }
}

#else

TEST_CASE("lp bound: unavailable without GLPK", "[gpu][bound]") {
  absl::StatusOr<double> most = LpMostPlacedGpuMilli({Node2(1)}, Pods(1, 1, 1000));
  REQUIRE_FALSE(most.ok());
  CHECK(absl::IsUnavailable(most.status()));
}

#endif

}  // namespace lp_bound_test
}  // namespace tessel::bench
