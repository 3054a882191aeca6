// Whose wait a stretch below the entitlement is (bench/trace/owed_room.h): hand-made nodes and
// shares, the answer worked out by hand.
#include <catch2/catch.hpp>

#include "bench/trace/owed_room.h"

namespace tessel::bench {
namespace owed_room_test {

constexpr int64_t G = 1000;  // one GPU in milli

// research -> vision, language; product -> ads; both under org.
const std::map<std::string, std::string> kParents = {
    {"org", ""}, {"research", "org"}, {"product", "org"}, {"vision", "research"}, {"language", "research"}, {"ads", "product"}};

// Usage and entitlement in GPUs by name.
std::map<std::string, ShareSample> Shares(const std::map<std::string, std::pair<int64_t, int64_t>>& held_entitled) {
  std::map<std::string, ShareSample> out;
  for (const auto& [name, he] : held_entitled) out[name] = {.usage_milli = he.first * G, .entitlement_milli = he.second * G};
  return out;
}

RoomNode Node(int64_t free_gpus, std::vector<std::pair<std::string, int64_t>> pods_gpus) {
  RoomNode n{.free_milli = free_gpus * G};
  for (auto& [queue, gpus] : pods_gpus) n.pods.emplace_back(queue, gpus * G);
  return n;
}

TEST_CASE("owed room: free GPUs are owed to a team below its entitlement", "[owed]") {
  const OwedRoom owed(kParents, Shares({{"vision", {4, 8}}, {"research", {4, 8}}, {"org", {4, 8}}}));
  CHECK(owed.Fits("vision", {2 * G}, {Node(1, {{"vision", 4}, {"x", 3}}), Node(2, {})}));
  CHECK_FALSE(owed.Fits("vision", {3 * G}, {Node(1, {}), Node(2, {})}));  // room on no single node
}

TEST_CASE("owed room: a sibling's pod is owed only if the sibling keeps its entitlement", "[owed]") {
  // vision holds 28 of 32, language 24 of 20 in 8-GPU pods: taking one leaves language at 16,
  // further below its 20 than vision is below its 32, so no 1-GPU vision job is owed room.
  const auto shares = Shares({{"vision", {28, 32}}, {"language", {24, 20}}, {"research", {52, 52}}});
  const std::vector<RoomNode> nodes = {Node(0, {{"language", 8}}), Node(0, {{"vision", 8}})};
  CHECK_FALSE(OwedRoom(kParents, shares).Fits("vision", {1 * G}, nodes));
  // The same with language's GPUs in 4-GPU pods: one of them is owed (24 - 4 >= 20).
  CHECK(OwedRoom(kParents, shares).Fits("vision", {1 * G}, {Node(0, {{"language", 4}, {"language", 4}})}));
  // Never a pod of the team itself.
  CHECK_FALSE(OwedRoom(kParents, shares).Fits("vision", {1 * G}, {Node(0, {{"vision", 8}})}));
}

TEST_CASE("owed room: across departments, both departments' entitlements count", "[owed]") {
  const std::vector<RoomNode> nodes = {Node(0, {{"ads", 2}, {"vision", 6}})};
  // ads is above its own entitlement but its department is not: product loses the pod below 10.
  CHECK_FALSE(OwedRoom(kParents, Shares({{"ads", {12, 10}}, {"product", {10, 10}}, {"language", {0, 4}},
                                         {"research", {4, 8}}}))
                  .Fits("language", {2 * G}, nodes));
  // product above by 2: owed to language, whose department is 4 below its entitlement.
  const auto above = Shares({{"ads", {12, 10}}, {"product", {12, 10}}, {"language", {0, 4}}, {"research", {4, 8}}});
  CHECK(OwedRoom(kParents, above).Fits("language", {2 * G}, nodes));
  // research at its entitlement: the GPUs would lift it above, so they are not owed to language.
  const auto full = Shares({{"ads", {12, 10}}, {"product", {12, 10}}, {"language", {0, 4}}, {"research", {8, 8}}});
  CHECK_FALSE(OwedRoom(kParents, full).Fits("language", {2 * G}, nodes));
}

TEST_CASE("owed room: the fewest GPUs are taken, and a job's pods share what is owed", "[owed]") {
  // language 8 above: one node's 8 owed GPUs cover one 8-GPU pod, not two.
  const auto shares = Shares({{"language", {28, 20}}, {"vision", {0, 16}}, {"research", {28, 36}}});
  const std::vector<RoomNode> nodes = {Node(0, {{"language", 8}}), Node(0, {{"language", 4}, {"language", 4}}),
                                       Node(0, {{"language", 8}})};
  const OwedRoom owed(kParents, shares);
  CHECK(owed.Fits("vision", {8 * G}, nodes));
  CHECK_FALSE(owed.Fits("vision", {8 * G, 8 * G}, nodes));
  // Two 4-GPU pods: the first takes the first node's 8, the second fits in the 4 it left free.
  CHECK(owed.Fits("vision", {4 * G, 4 * G}, nodes));
  // One GPU free beside language's 4 and 2: the 4-GPU pod (largest first) takes the 4, and the
  // 3-GPU pod the 2 beside the free GPU, if language is 6 above; 5 above leaves 1 for the
  // second pod, and the other node's pods are language's 4 and a pod of no queue.
  const std::vector<RoomNode> mixed = {Node(1, {{"language", 4}, {"language", 2}}), Node(0, {{"language", 4}, {"x", 4}})};
  CHECK(OwedRoom(kParents, Shares({{"language", {26, 20}}, {"vision", {0, 16}}, {"research", {26, 36}}}))
            .Fits("vision", {3 * G, 4 * G}, mixed));
  CHECK_FALSE(OwedRoom(kParents, Shares({{"language", {25, 20}}, {"vision", {0, 16}}, {"research", {25, 36}}}))
                  .Fits("vision", {3 * G, 4 * G}, mixed));
}

}  // namespace owed_room_test
}  // namespace tessel::bench
