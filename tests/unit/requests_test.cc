// Pod request computation, as kube-scheduler does it: max(sum of containers + sidecars, the
// peak during init) + overhead.
#include <catch2/catch.hpp>

#include "scheduler/testing/builders.h"

namespace tessel {
namespace requests_test {

using testing::Res;

Container C(std::string_view spec, bool sidecar = false) {
  return Container{.name = "c", .requests = Res(spec), .restart_always = sidecar};
}

TEST_CASE("pod requests follow kube-scheduler's rules", "[requests]") {
  struct Case {
    std::string name;
    std::vector<Container> containers;
    std::vector<Container> init;
    std::string overhead;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"single container", {C("cpu:1,memory:1Gi")}, {}, "", "cpu:1,memory:1Gi,pods:1"},
      {"containers add up", {C("cpu:500m,nvidia.com/gpu:1"), C("cpu:250m,nvidia.com/gpu:2")}, {}, "",
       "cpu:750m,nvidia.com/gpu:3,pods:1"},
      {"a larger init container wins",
       {C("cpu:1,memory:1Gi")}, {C("cpu:4,memory:512Mi")}, "", "cpu:4,memory:1Gi,pods:1"},
      {"init containers do not add up",
       {C("cpu:1")}, {C("cpu:2"), C("cpu:3")}, "", "cpu:3,pods:1"},
      {"sidecars add to the sum",
       {C("cpu:1")}, {C("cpu:500m", true)}, "", "cpu:1500m,pods:1"},
      {"an init container after a sidecar runs beside it",
       {C("cpu:1")}, {C("cpu:1", true), C("cpu:3")}, "", "cpu:4,pods:1"},
      {"an init container before a sidecar does not",
       {C("cpu:1")}, {C("cpu:3"), C("cpu:1", true)}, "", "cpu:3,pods:1"},
      {"overhead is added", {C("cpu:1,memory:1Gi")}, {}, "cpu:250m,memory:120Mi",
       "cpu:1250m,memory:1144Mi,pods:1"},
      {"no containers still counts one pod", {}, {}, "", "pods:1"},
      {"extended resources from init containers", {C("cpu:1")}, {C("nvidia.com/gpu:1")}, "",
       "cpu:1,nvidia.com/gpu:1,pods:1"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      Pod pod;
      pod.containers = c.containers;
      pod.init_containers = c.init;
      pod.overhead = Res(c.overhead);
      auto got = ComputePodRequests(pod);
      REQUIRE(got.ok());
      CHECK(got->DebugString() == Res(c.want).DebugString());
    }
  }
}

TEST_CASE("request sums that overflow int64 are errors", "[requests]") {
  Pod pod;
  Container big{.name = "big"};
  big.requests.memory = std::numeric_limits<int64_t>::max() - 1;
  pod.containers = {big, big};
  CHECK_FALSE(ComputePodRequests(pod).ok());
}

TEST_CASE("Resources arithmetic and FitsIn", "[requests]") {
  Resources free = Res("cpu:4,memory:8Gi,nvidia.com/gpu:2,pods:10");
  CHECK(Res("cpu:4,memory:8Gi,nvidia.com/gpu:2").FitsIn(free));
  CHECK_FALSE(Res("cpu:4001m").FitsIn(free));
  CHECK_FALSE(Res("nvidia.com/gpu:3").FitsIn(free));
  CHECK_FALSE(Res("example.com/fpga:1").FitsIn(free));
  Resources r = Res("cpu:1,nvidia.com/gpu:1");
  REQUIRE(r.Add(Res("cpu:1,nvidia.com/gpu:1")).ok());
  CHECK(r == Res("cpu:2,nvidia.com/gpu:2"));
  r.Sub(Res("nvidia.com/gpu:2"));
  CHECK(r == Res("cpu:2"));  // a zero extended resource disappears
  CHECK(Res("memory:1536Mi").DebugString() == "memory:1536Mi");
  CHECK(Res("memory:2Gi,cpu:1500m").DebugString() == "cpu:1500m,memory:2Gi");
}

}  // namespace requests_test
}  // namespace tessel
