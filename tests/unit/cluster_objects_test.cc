// ClusterObjectStore: a view a cycle holds never changes, whatever is put, deleted, assumed or
// restored after it was taken; the current view always shows the latest state. Checked against a
// plain map over seeded random operation streams, with views taken and dropped at random (the
// store changes a kind's map in place only while no view holds it).
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "scheduler/state/cluster_objects.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace cluster_objects_test {

// What a view shows: claim key -> its volume name; namespace -> its "team" label.
struct Model {
  std::map<std::string, std::string> claims;
  std::map<std::string, std::string> namespaces;
};

void CheckViewMatches(const ClusterObjects& view, const Model& model, int names) {
  for (int i = 0; i < names; ++i) {
    const std::string name = StrCat("o", i);
    const PersistentVolumeClaim* claim = view.Claim("ns", name);
    auto c = model.claims.find(StrCat("ns/", name));
    REQUIRE((claim != nullptr) == (c != model.claims.end()));
    if (claim != nullptr) REQUIRE(claim->volume_name == c->second);
    const StringMap* labels = view.NamespaceLabels(name);
    auto n = model.namespaces.find(name);
    REQUIRE((labels != nullptr) == (n != model.namespaces.end()));
    if (labels != nullptr) REQUIRE(labels->at("team") == n->second);
  }
}

TEST_CASE("ClusterObjectStore: held views never change; the current view is the latest state",
          "[cluster_objects][property]") {
  std::mt19937 rng(777);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  constexpr int kNames = 12;
  int held_checks = 0;
  for (int round = 0; round < 300; ++round) {
    ClusterObjectStore store;
    Model model;
    std::vector<std::pair<std::shared_ptr<const ClusterObjects>, Model>> held;
    int version = 0;
    for (int step = 0; step < 60; ++step) {
      const std::string name = StrCat("o", pick(0, kNames - 1));
      const std::string value = StrCat("v", ++version);
      switch (pick(0, 6)) {
        case 0:
        case 1: {
          PersistentVolumeClaim claim;
          claim.meta = {.name = name, .namespace_ = "ns", .resource_version = value};
          claim.volume_name = value;
          store.Put(claim);
          model.claims[claim.Key()] = value;
          break;
        }
        case 2:
          store.DeleteClaim(StrCat("ns/", name));
          model.claims.erase(StrCat("ns/", name));
          break;
        case 3: {
          // Restore applies only while the claim is still at the version it names.
          const PersistentVolumeClaim* now = store.view()->Claim("ns", name);
          PersistentVolumeClaim original;
          original.meta = {.name = name, .namespace_ = "ns",
                           .resource_version = now != nullptr && pick(0, 1) ? now->meta.resource_version : "stale"};
          original.volume_name = value;
          store.Restore(original);
          if (now != nullptr && original.meta.resource_version == now->meta.resource_version) {
            model.claims[original.Key()] = value;
          }
          break;
        }
        case 4:
          store.Put(Namespace{.meta = {.name = name, .labels = {{"team", value}}}});
          model.namespaces[name] = value;
          break;
        case 5:
          store.DeleteNamespace(name);
          model.namespaces.erase(name);
          break;
        case 6:
          if (pick(0, 2) == 0 && !held.empty()) {
            held.erase(held.begin() + pick(0, static_cast<int>(held.size()) - 1));
          } else {
            held.emplace_back(store.view(), model);
          }
          break;
      }
      CheckViewMatches(*store.view(), model, kNames);
      for (const auto& [view, seen] : held) {
        CheckViewMatches(*view, seen, kNames);
        ++held_checks;
      }
    }
  }
  CHECK(held_checks > 10000);
}

}  // namespace cluster_objects_test
}  // namespace tessel
