// NodeVolumeLimits: kube-scheduler's CSI attach limits in a table (shared volumes count once,
// unbound claims count for their class's provisioner, CSINode over allocatable, unlimited
// drivers), and a property over seeded generated nodes, claims and pods checked against the rule
// stated on what the generator knows: per limited driver, distinct attached plus new volumes.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "absl/strings/str_join.h"
#include "plugins/node_volume_limits/node_volume_limits.h"
#include "scheduler/api/decode.h"
#include "tests/unit/pod_rules_harness.h"

namespace tessel {
namespace node_volume_limits_test {

using node_volume_limits::NodeVolumeLimits;
using testing::FakeHandle;
using testing::WithClaims;
using testing::NodeBuilder;

PersistentVolumeClaim Claim(std::string name, std::string storage_class, std::string volume = "") {
  PersistentVolumeClaim c;
  c.meta = {.name = std::move(name), .namespace_ = "default", .resource_version = "1"};
  c.storage_class = std::move(storage_class);
  c.volume_name = std::move(volume);
  c.phase_bound = !c.volume_name.empty();
  return c;
}

PersistentVolume CsiVolume(std::string name, std::string driver, std::string handle) {
  PersistentVolume v;
  v.meta = {.name = std::move(name), .resource_version = "1"};
  v.csi_driver = std::move(driver);
  v.csi_volume_handle = std::move(handle);
  v.phase = "Bound";
  return v;
}

CSINode Limits(std::string node, std::vector<std::pair<std::string, std::optional<int64_t>>> drivers) {
  CSINode n{.meta = {.name = std::move(node)}};
  for (auto& [name, count] : drivers) n.drivers.push_back({.name = std::move(name), .allocatable_count = count});
  return n;
}

// PreFilter then Filter on `node`; Skip from PreFilter is a pass.
Status Verdict(FakeHandle& h, const Pod& pod, const std::string& node) {
  auto plugin = NodeVolumeLimits::New(h);
  REQUIRE(plugin.ok());
  CycleState state;
  Status pre = (*plugin)->PreFilter(state, pod);
  if (pre.IsSkip()) return Status::Ok();
  REQUIRE(pre.ok());
  return (*plugin)->Filter(state, pod, *h.snapshot().Get(node));
}

TEST_CASE("NodeVolumeLimits: the CSI attach-limit rules", "[plugins][volumes][node_volume_limits]") {
  FakeHandle h;
  h.AddNode(NodeBuilder("n1").Build());
  StorageClass ebs{.meta = {.name = "ebs"}, .provisioner = "ebs.csi"};
  StorageClass local{.meta = {.name = "local"}, .provisioner = std::string(kNoProvisioner)};
  h.objects().Put(ebs);
  h.objects().Put(local);
  for (std::string v : {"a", "b", "c"}) {
    h.objects().Put(CsiVolume("pv-" + v, "ebs.csi", "h-" + v));
    h.objects().Put(Claim(v, "ebs", "pv-" + v));
  }
  h.objects().Put(Limits("n1", {{"ebs.csi", 2}}));
  h.AddPod(WithClaims("running", {"a"}, "n1"));

  SECTION("attached plus new volumes over the limit: rejected with kube-scheduler's reason") {
    Status st = Verdict(h, WithClaims("p", {"b", "c"}), "n1");
    CHECK(st.code() == Code::kUnschedulable);
    CHECK(st.reasons() == std::vector<std::string>{std::string(node_volume_limits::kReasonMaxVolumeCountExceeded)});
  }
  SECTION("a volume already attached on the node counts once") {
    CHECK(Verdict(h, WithClaims("p", {"a", "b"}), "n1").ok());
  }
  SECTION("an unbound claim counts as a volume of its class's provisioner") {
    h.objects().Put(Claim("new", "ebs"));
    CHECK(Verdict(h, WithClaims("p", {"b"}), "n1").ok());
    CHECK(Verdict(h, WithClaims("p", {"b", "new"}), "n1").code() == Code::kUnschedulable);
  }
  SECTION("volumes without a CSI driver are not counted") {
    h.objects().Put(Claim("local-1", "local"));
    PersistentVolume in_tree;
    in_tree.meta = {.name = "pv-nfs", .resource_version = "1"};
    h.objects().Put(in_tree);
    h.objects().Put(Claim("nfs", "", "pv-nfs"));
    CHECK(Verdict(h, WithClaims("p", {"b", "local-1", "nfs"}), "n1").ok());
  }
  SECTION("node allocatable gives the limit when the CSINode has none; the CSINode wins") {
    h.AddNode(NodeBuilder("n2").AttachLimit("ebs.csi", 1).Build());
    CHECK(Verdict(h, WithClaims("p", {"b"}), "n2").ok());
    CHECK(Verdict(h, WithClaims("p", {"b", "c"}), "n2").code() == Code::kUnschedulable);
    h.objects().Put(Limits("n2", {{"ebs.csi", 3}}));
    CHECK(Verdict(h, WithClaims("p", {"b", "c"}), "n2").ok());
    h.objects().Put(Limits("n2", {{"ebs.csi", std::nullopt}}));  // no count: allocatable's
    CHECK(Verdict(h, WithClaims("p", {"b", "c"}), "n2").code() == Code::kUnschedulable);
  }
  SECTION("a driver without a limit on the node, and pods without claims, pass") {
    h.objects().Put(Limits("n1", {{"other.csi", 0}}));
    CHECK(Verdict(h, WithClaims("p", {"b", "c"}), "n1").ok());
    CHECK(Verdict(h, WithClaims("p", {}), "n1").ok());
  }
}

TEST_CASE("NodeVolumeLimits' objects decode: CSINode, a PV's CSI source, node attach limits",
          "[decode][node_volume_limits]") {
  auto csi = DecodeCSINode(nlohmann::json::parse(R"({
    "kind": "CSINode", "metadata": {"name": "n1"},
    "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25}},
                         {"name": "efs.csi.aws.com", "nodeID": "i-1"}]}})"));
  REQUIRE(csi.ok());
  CHECK(csi->LimitOf("ebs.csi.aws.com") == 25);
  CHECK(csi->LimitOf("efs.csi.aws.com") == std::nullopt);
  CHECK(csi->LimitOf("other") == std::nullopt);
  auto bad_csi = DecodeCSINode(nlohmann::json::parse(R"({
    "kind": "CSINode", "metadata": {"name": "n1"},
    "spec": {"drivers": [{"name": "a"}, {"allocatable": {"count": 3}}]}})"));
  REQUIRE_FALSE(bad_csi.ok());
  CHECK(bad_csi.status().message() == "CSINode n1: spec.drivers[1].name: missing");
  auto negative = DecodeCSINode(nlohmann::json::parse(R"({
    "kind": "CSINode", "metadata": {"name": "n1"},
    "spec": {"drivers": [{"name": "a", "allocatable": {"count": -1}}]}})"));
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().message() == "CSINode n1: spec.drivers[0].allocatable.count: must not be negative");

  auto pv = DecodePersistentVolume(nlohmann::json::parse(R"({
    "kind": "PersistentVolume", "metadata": {"name": "pv1"},
    "spec": {"capacity": {"storage": "5Gi"}, "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}}})"));
  REQUIRE(pv.ok());
  CHECK(pv->csi_driver == "ebs.csi.aws.com");
  CHECK(pv->csi_volume_handle == "vol-1");
  auto no_handle = DecodePersistentVolume(nlohmann::json::parse(R"({
    "kind": "PersistentVolume", "metadata": {"name": "pv1"}, "spec": {"csi": {"driver": "d"}}})"));
  REQUIRE_FALSE(no_handle.ok());
  CHECK(no_handle.status().message() == "PersistentVolume pv1: spec.csi.volumeHandle: missing");

  auto node = DecodeNode(nlohmann::json::parse(R"({
    "kind": "Node", "metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "8", "attachable-volumes-csi-ebs.csi.aws.com": "39",
                               "attachable-volumes-csi-none": "0"}}})"));
  REQUIRE(node.ok());
  CHECK(node->attach_limits == std::map<std::string, int64_t, std::less<>>{
                                   {"ebs.csi.aws.com", 39}, {"none", 0}});
}

TEST_CASE("NodeVolumeLimits: property over generated nodes, claims and pods",
          "[plugins][volumes][node_volume_limits][property]") {
  std::mt19937 rng(5150);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::vector<std::string> drivers = {"d1.csi", "d2.csi"};
  int rejected = 0, accepted = 0;
  for (int round = 0; round < 300; ++round) {
    FakeHandle h;
    for (const std::string& d : drivers) h.objects().Put(StorageClass{.meta = {.name = "sc-" + d}, .provisioner = d});
    h.objects().Put(StorageClass{.meta = {.name = "local"}, .provisioner = std::string(kNoProvisioner)});
    // What each claim is, as the rule sees it: (driver, unique volume) or none.
    std::map<std::string, std::optional<std::pair<std::string, std::string>>> truth;
    const int claims = pick(2, 10);
    for (int c = 0; c < claims; ++c) {
      const std::string name = StrCat("c", c);
      const std::string& d = drivers[pick(0, 1)];
      switch (pick(0, 3)) {
        case 0:  // bound to a CSI volume; sometimes two claims' PVs share a handle
        case 1: {
          const std::string handle = StrCat("h", pick(0, claims));
          h.objects().Put(CsiVolume("pv-" + name, d, handle));
          h.objects().Put(Claim(name, "sc-" + d, "pv-" + name));
          truth[name] = std::pair(d, StrCat(d, "/", handle));
          break;
        }
        case 2:  // waits for its provisioner
          h.objects().Put(Claim(name, "sc-" + d));
          truth[name] = std::pair(d, StrCat(d, "/default/", name));
          break;
        default:  // local, not counted
          h.objects().Put(Claim(name, "local"));
          truth[name] = std::nullopt;
      }
    }
    auto some_claims = [&] {
      std::vector<std::string> out;
      for (int c = 0; c < claims; ++c) {
        if (pick(0, 2) == 0) out.push_back(StrCat("c", c));
      }
      return out;
    };
    std::map<std::string, std::map<std::string, int64_t>> limits;  // node -> driver -> limit
    std::map<std::string, std::vector<std::vector<std::string>>> on_node;
    for (int n = 0; n < 3; ++n) {
      const std::string node = StrCat("n", n);
      NodeBuilder builder(node);
      CSINode csi{.meta = {.name = node}};
      for (const std::string& d : drivers) {
        const int limit = pick(0, 4);
        switch (pick(0, 2)) {
          case 0:
            csi.drivers.push_back({.name = d, .allocatable_count = limit});
            limits[node][d] = limit;
            break;
          case 1:
            builder.AttachLimit(d, limit);
            limits[node][d] = limit;
            break;
          default:
            break;  // unlimited
        }
      }
      h.AddNode(builder.Build());
      h.objects().Put(csi);
      for (int p = pick(0, 3); p > 0; --p) {
        on_node[node].push_back(some_claims());
        h.AddPod(WithClaims(StrCat(node, "-p", p), on_node[node].back(), node));
      }
    }
    const std::vector<std::string> wanted = some_claims();
    const Pod pod = WithClaims("new", wanted);
    for (int n = 0; n < 3; ++n) {
      const std::string node = StrCat("n", n);
      std::map<std::string, std::set<std::string>> volumes;  // driver -> distinct volumes
      std::set<std::string> adds;  // drivers the pod brings a volume of that is not attached
      for (const auto& pod_claims : on_node[node]) {
        for (const std::string& c : pod_claims) {
          if (truth[c]) volumes[truth[c]->first].insert(truth[c]->second);
        }
      }
      for (const std::string& c : wanted) {
        if (truth[c] && volumes[truth[c]->first].insert(truth[c]->second).second) adds.insert(truth[c]->first);
      }
      // Only drivers the pod adds a volume of are checked (the node may be over a limit already).
      bool fits = true;
      for (const auto& [driver, limit] : limits[node]) {
        if (adds.contains(driver) && static_cast<int64_t>(volumes[driver].size()) > limit) fits = false;
      }
      const Status st = Verdict(h, pod, node);
      std::string story;
      for (const auto& [d, l] : limits[node]) StrAppend(&story, " limit ", d, "=", l);
      for (const auto& [d, v] : volumes) StrAppend(&story, " volumes ", d, "=", v.size());
      for (const std::string& c : wanted) StrAppend(&story, " wants ", c, "=", truth[c] ? truth[c]->second : "-");
      for (const auto& pod_claims : on_node[node]) StrAppend(&story, " | pod ", absl::StrJoin(pod_claims, ","));
      INFO("round " << round << " node " << node << ": " << st.Message() << story);
      REQUIRE(st.ok() == fits);
      (fits ? accepted : rejected)++;
    }
  }
  CHECK(accepted > 100);
  CHECK(rejected > 100);
}

}  // namespace node_volume_limits_test
}  // namespace tessel
