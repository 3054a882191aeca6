// VolumeBinding, VolumeZone and VolumeRestrictions: kube-scheduler's reasons in tables, and
// properties over seeded generated clusters (nodes in zones, PVs with node affinity and zone
// labels, classes with allowedTopologies, claims of random sizes and modes), each checked against
// an independent statement of the rule.
#include <catch2/catch.hpp>

#include <random>

#include "plugins/volume_binding/volume_binding.h"
#include "plugins/volume_restrictions/volume_restrictions.h"
#include "plugins/volume_zone/volume_zone.h"
#include "scheduler/api/decode.h"
#include "tests/unit/pod_rules_harness.h"

namespace tessel {
namespace volume_plugins_test {

using testing::FakeHandle;
using testing::WithClaims;
using testing::NodeBuilder;

constexpr std::string_view kZone = "topology.kubernetes.io/zone";
constexpr int64_t kGi = int64_t{1} << 30;

PersistentVolumeClaim Claim(std::string name, std::string storage_class, int64_t bytes = kGi,
                            uint8_t modes = kReadWriteOnce, std::string volume = "") {
  PersistentVolumeClaim c;
  c.meta.name = std::move(name);
  c.meta.namespace_ = "default";
  c.meta.uid = "uid-" + c.meta.name;
  c.meta.resource_version = "1";
  c.storage_class = std::move(storage_class);
  c.request_bytes = bytes;
  c.access_modes = modes;
  c.volume_name = std::move(volume);
  c.phase_bound = !c.volume_name.empty();
  return c;
}

PersistentVolume Volume(std::string name, std::string storage_class, int64_t bytes,
                        std::vector<std::string> zones, uint8_t modes = kReadWriteOnce) {
  PersistentVolume v;
  v.meta.name = std::move(name);
  v.meta.resource_version = "1";
  v.storage_class = std::move(storage_class);
  v.capacity_bytes = bytes;
  v.access_modes = modes;
  v.phase = "Available";
  if (!zones.empty()) {
    v.node_affinity = std::vector<NodeSelectorTerm>{
        {.match_expressions = {{.key = std::string(kZone), .op = NodeSelectorRequirement::Operator::kIn,
                                .values = std::move(zones)}}}};
  }
  return v;
}

StorageClass Class(std::string name, VolumeBindingMode mode, std::string provisioner,
                   std::vector<std::string> allowed_zones = {}) {
  StorageClass sc;
  sc.meta.name = std::move(name);
  sc.binding_mode = mode;
  sc.provisioner = std::move(provisioner);
  if (!allowed_zones.empty()) {
    sc.allowed_topologies = {{.match_label_expressions = {{.key = std::string(kZone), .values = std::move(allowed_zones)}}}};
  }
  return sc;
}

// Two zones: a-1, a-2 in zone-a; b-1 in zone-b.
void TwoZones(FakeHandle& h) {
  h.AddNode(NodeBuilder("a-1").Label(std::string(kZone), "zone-a").Build());
  h.AddNode(NodeBuilder("a-2").Label(std::string(kZone), "zone-a").Build());
  h.AddNode(NodeBuilder("b-1").Label(std::string(kZone), "zone-b").Build());
}

std::unique_ptr<volume_binding::VolumeBinding> NewBinding(FakeHandle& h, int timeout_seconds = 0) {
  auto plugin = volume_binding::VolumeBinding::New({.bind_timeout = absl::Seconds(timeout_seconds)}, h);
  REQUIRE(plugin.ok());
  return *std::move(plugin);
}

// A VolumeBinding that ran PreFilter and Reserve for `pod` on `node`, ready for PreBind.
struct Reserved {
  std::unique_ptr<volume_binding::VolumeBinding> plugin;
  CycleState state;
};
Reserved ReserveOn(FakeHandle& h, const Pod& pod, const std::string& node, int timeout_seconds) {
  Reserved r{.plugin = NewBinding(h, timeout_seconds)};
  REQUIRE(r.plugin->PreFilter(r.state, pod).ok());
  REQUIRE(r.plugin->Reserve(r.state, pod, node).ok());
  return r;
}

TEST_CASE("VolumeBinding gives kube-scheduler's reasons", "[plugins][volumes]") {
  using namespace volume_binding;
  const std::string unresolvable = "UnschedulableAndUnresolvable: ";
  FakeHandle h;
  TwoZones(h);
  h.objects().Put(Class("wffc", VolumeBindingMode::kWaitForFirstConsumer, "csi.example.com", {"zone-a"}));
  h.objects().Put(Class("immediate", VolumeBindingMode::kImmediate, "csi.example.com"));
  h.objects().Put(Class("local", VolumeBindingMode::kWaitForFirstConsumer, std::string(kNoProvisioner)));
  h.objects().Put(Class("anywhere", VolumeBindingMode::kWaitForFirstConsumer, "csi.example.com"));
  h.objects().Put(Volume("pv-b", "", 10 * kGi, {"zone-b"}));
  h.objects().Put(Claim("bound-b", "", kGi, kReadWriteOnce, "pv-b"));
  h.objects().Put(Claim("bound-gone", "", kGi, kReadWriteOnce, "pv-missing"));
  h.objects().Put(Claim("wait", "wffc"));
  h.objects().Put(Claim("wait-anywhere", "anywhere"));
  h.objects().Put(Claim("imm", "immediate"));
  h.objects().Put(Claim("no-class", ""));
  h.objects().Put(Claim("local-claim", "local"));
  h.objects().Put(Claim("unknown-class", "fast"));
  PersistentVolumeClaim chosen = Claim("chosen", "wffc");
  chosen.meta.annotations[std::string(kSelectedNodeAnnotation)] = "a-2";
  h.objects().Put(chosen);
  PersistentVolumeClaim deleting = Claim("deleting", "wffc");
  deleting.meta.deletion_timestamp = absl::UnixEpoch();
  h.objects().Put(deleting);

  struct Case {
    std::string name;
    std::vector<std::string> claims;
    std::map<std::string, std::string> want;
  };
  const std::string pre = "prefilter: " + unresolvable;
  auto all = [](std::string v) {
    return std::map<std::string, std::string>{{"a-1", v}, {"a-2", v}, {"b-1", v}};
  };
  const std::vector<Case> cases = {
      {"no claims: skip", {}, all("skip")},
      {"a missing claim is named", {"nope"}, all(pre + "persistentvolumeclaim \"nope\" not found")},
      {"a claim being deleted", {"deleting"}, all(pre + "persistentvolumeclaim \"deleting\" is being deleted")},
      {"unbound Immediate claim", {"imm"}, all(pre + std::string(kReasonUnboundImmediate))},
      {"unbound claim without a class binds immediately", {"no-class"}, all(pre + std::string(kReasonUnboundImmediate))},
      {"unknown class", {"unknown-class"}, all(pre + "storageclass.storage.k8s.io \"fast\" not found")},
      {"bound PV in zone-b", {"bound-b"},
       {{"a-1", unresolvable + std::string(kReasonNodeConflict)},
        {"a-2", unresolvable + std::string(kReasonNodeConflict)},
        {"b-1", "ok"}}},
      {"bound to a PV that does not exist", {"bound-gone"}, all(unresolvable + std::string(kReasonPVNotExist))},
      {"WaitForFirstConsumer, allowedTopologies zone-a", {"wait"},
       {{"a-1", "ok"}, {"a-2", "ok"}, {"b-1", unresolvable + std::string(kReasonBindConflict)}}},
      {"a provisioner without allowedTopologies allows every node", {"wait-anywhere"}, all("ok")},
      {"no-provisioner class and no PV", {"local-claim"}, all(unresolvable + std::string(kReasonBindConflict))},
      {"a selected node allows only that node", {"chosen"},
       {{"a-1", unresolvable + std::string(kReasonBindConflict)}, {"a-2", "ok"},
        {"b-1", unresolvable + std::string(kReasonBindConflict)}}},
      {"bound in zone-b and provisioned in zone-a: nowhere", {"bound-b", "wait"},
       {{"a-1", unresolvable + std::string(kReasonNodeConflict)},
        {"a-2", unresolvable + std::string(kReasonNodeConflict)},
        {"b-1", unresolvable + std::string(kReasonBindConflict)}}},
  };
  auto plugin = NewBinding(h);
  for (const Case& c : cases) {
    SECTION(c.name) { CHECK(testing::RunFilter(*plugin, h, WithClaims("p", c.claims)).by_node == c.want); }
  }
}

// A pod with a bound PV is never placed on a node that violates the PV's nodeAffinity, and is
// allowed on every node that satisfies it (300 generated clusters).
TEST_CASE("VolumeBinding: a bound PV's nodeAffinity decides, over generated clusters", "[plugins][volumes]") {
  std::mt19937 rng(20241);
  const std::vector<std::string> zones = {"z0", "z1", "z2", "z3"};
  for (int round = 0; round < 300; ++round) {
    FakeHandle h;
    const int nodes = 1 + static_cast<int>(rng() % 8);
    for (int n = 0; n < nodes; ++n) {
      NodeBuilder b("n" + std::to_string(n));
      if (rng() % 5 != 0) b.Label(std::string(kZone), zones[rng() % zones.size()]);
      h.AddNode(b.Build());
    }
    std::vector<std::string> allowed;
    for (const std::string& z : zones) {
      if (rng() % 2) allowed.push_back(z);
    }
    PersistentVolume pv = Volume("pv", "", kGi, allowed);
    if (allowed.empty() && rng() % 2) pv.node_affinity.reset();  // no affinity: any node
    h.objects().Put(pv);
    h.objects().Put(Claim("data", "", kGi, kReadWriteOnce, "pv"));
    auto plugin = NewBinding(h);
    auto run = testing::RunFilter(*plugin, h, WithClaims("p", {"data"}));
    for (const NodeInfo* info : h.snapshot().nodes()) {
      const auto& labels = info->node()->meta.labels;
      auto zone = labels.find(kZone);
      const bool fits = !pv.node_affinity.has_value() ||
                        (zone != labels.end() &&
                         std::find(allowed.begin(), allowed.end(), zone->second) != allowed.end());
      INFO("round " << round << " node " << info->name());
      CHECK((run.by_node[info->name()] == "ok") == fits);
    }
  }
}

// WaitForFirstConsumer: a node fits exactly when some available PV can serve the claim there
// (class, mode, size, access modes, node affinity) or the class may provision there; Reserve
// takes the smallest such PV (a pre-bound one first) and no two claims get the same PV.
TEST_CASE("VolumeBinding: WaitForFirstConsumer matching over generated clusters", "[plugins][volumes]") {
  std::mt19937 rng(777);
  const std::vector<std::string> zones = {"z0", "z1", "z2"};
  const uint8_t modes[] = {kReadWriteOnce, kReadOnlyMany, kReadWriteMany, kReadWriteOnce | kReadOnlyMany};
  for (int round = 0; round < 300; ++round) {
    FakeHandle h;
    const int nodes = 1 + static_cast<int>(rng() % 6);
    for (int n = 0; n < nodes; ++n) {
      h.AddNode(NodeBuilder("n" + std::to_string(n)).Label(std::string(kZone), zones[rng() % zones.size()]).Build());
    }
    // Class "wffc": provisions in some zones, or not at all (no-provisioner).
    std::vector<std::string> allowed;
    for (const std::string& z : zones) {
      if (rng() % 2) allowed.push_back(z);
    }
    const bool provisions = rng() % 3 != 0;
    if (provisions && allowed.empty()) allowed.push_back(zones[rng() % zones.size()]);
    h.objects().Put(Class("wffc", VolumeBindingMode::kWaitForFirstConsumer,
                          provisions ? "csi.example.com" : std::string(kNoProvisioner), allowed));
    std::vector<PersistentVolume> pvs;
    const int volume_count = static_cast<int>(rng() % 6);
    for (int v = 0; v < volume_count; ++v) {
      PersistentVolume pv = Volume("pv" + std::to_string(v), rng() % 4 ? "wffc" : "other",
                                   static_cast<int64_t>(1 + rng() % 8) * kGi, {zones[rng() % zones.size()]},
                                   modes[rng() % 4]);
      if (rng() % 6 == 0) pv.claim_ref = ClaimReference{.namespace_ = "default", .name = "someone-else"};
      pvs.push_back(pv);
      h.objects().Put(pv);
    }
    const PersistentVolumeClaim claim = Claim("data", "wffc", static_cast<int64_t>(1 + rng() % 6) * kGi,
                                              modes[rng() % 3]);
    h.objects().Put(claim);
    auto plugin = NewBinding(h);
    const Pod pod = WithClaims("p", {"data"});
    auto run = testing::RunFilter(*plugin, h, pod);
    for (const NodeInfo* info : h.snapshot().nodes()) {
      const std::string zone = info->node()->meta.labels.at(std::string(kZone));
      const PersistentVolume* smallest = nullptr;
      for (const PersistentVolume& pv : pvs) {
        const bool serves = !pv.claim_ref.has_value() && pv.storage_class == "wffc" &&
                            pv.capacity_bytes >= claim.request_bytes &&
                            (pv.access_modes & claim.access_modes) == claim.access_modes &&
                            pv.node_affinity->front().match_expressions.front().values.front() == zone;
        if (serves && (smallest == nullptr || pv.capacity_bytes < smallest->capacity_bytes)) smallest = &pv;
      }
      const bool can_provision =
          provisions && std::find(allowed.begin(), allowed.end(), zone) != allowed.end();
      INFO("round " << round << " node " << info->name());
      REQUIRE((run.by_node[info->name()] == "ok") == (smallest != nullptr || can_provision));
      if (smallest == nullptr) continue;
      // Reserve on this node takes a PV of the smallest fitting size for the claim.
      CycleState state = run.state.Clone();
      REQUIRE(plugin->Reserve(state, pod, info->name()).ok());
      std::shared_ptr<const ClusterObjects> after = h.Objects();
      const PersistentVolume* taken = nullptr;
      for (const auto& [name, pv] : after->volumes()) {
        if (pv.claim_ref.has_value() && pv.claim_ref->name == "data") taken = &pv;
      }
      REQUIRE(taken != nullptr);
      CHECK(taken->capacity_bytes == smallest->capacity_bytes);
      // Another claim of the same shape cannot get that PV while it is assumed.
      PersistentVolumeClaim twin = claim;
      twin.meta.name = "twin";
      twin.meta.uid = "uid-twin";
      CHECK_FALSE(VolumeCanServe(*taken, twin));
      plugin->Unreserve(state, pod, info->name());
      for (const auto& [name, pv] : h.Objects()->volumes()) {
        CHECK_FALSE((pv.claim_ref.has_value() && pv.claim_ref->name == "data"));
      }
    }
  }
}

TEST_CASE("VolumeBinding PreBind annotates the claim and waits for it to bind", "[plugins][volumes]") {
  FakeHandle h;
  TwoZones(h);
  h.objects().Put(Class("wffc", VolumeBindingMode::kWaitForFirstConsumer, "csi.example.com", {"zone-b"}));
  h.objects().Put(Claim("data", "wffc"));
  const Pod pod = WithClaims("p", {"data"});

  SECTION("the provisioner binds the claim: PreBind succeeds") {
    // The fake provisioner binds as soon as it sees the annotation, with a PV in the node's zone.
    h.recording_api().on_annotate = [&](const PersistentVolumeClaim& claim, std::string_view node) {
      h.objects().Put(Volume("pv-new", "wffc", kGi, {"zone-b"}));
      PersistentVolumeClaim bound = claim;
      bound.meta.annotations[std::string(kSelectedNodeAnnotation)] = std::string(node);
      bound.volume_name = "pv-new";
      bound.phase_bound = true;
      h.objects().Put(bound);
    };
    Reserved r = ReserveOn(h, pod, "b-1", 600);
    // The assumed annotation pins the claim for the next cycles.
    CHECK(h.Objects()->Claim("default", "data")->selected_node() == "b-1");
    CHECK(testing::Describe(r.plugin->PreBind(r.state, pod, "b-1")) == "ok");
    CHECK(h.recording_api().claim_annotations ==
          std::vector<std::pair<std::string, std::string>>{
              {"default/data", "volume.kubernetes.io/selected-node=b-1"}});
  }
  SECTION("bindTimeoutSeconds 0 binds right after the annotation") {
    Reserved r = ReserveOn(h, pod, "b-1", 0);
    CHECK(r.plugin->PreBind(r.state, pod, "b-1").ok());
    CHECK(h.recording_api().claim_annotations.size() == 1);
  }
  SECTION("a claim that does not bind in time fails the binding cycle; Unreserve restores it") {
    Reserved r = ReserveOn(h, pod, "b-1", 1);
    Status st = r.plugin->PreBind(r.state, pod, "b-1");
    CHECK(st.code() == Code::kError);
    CHECK_THAT(st.Message(), Catch::Contains("PersistentVolumeClaim default/data is not bound yet"));
    r.plugin->Unreserve(r.state, pod, "b-1");
    CHECK(h.Objects()->Claim("default", "data")->selected_node().empty());
  }
  SECTION("a claim deleted during the wait ends it at once, whatever the pod's other claims show") {
    // Two claims; the first is deleted as soon as it is annotated, the second never binds. The
    // wait must stop on the deletion (not wait out the 600 s for the second claim) and say so.
    h.objects().Put(Claim("logs", "wffc"));
    const Pod two = WithClaims("p2", {"data", "logs"});
    h.recording_api().on_annotate = [&](const PersistentVolumeClaim& claim, std::string_view) {
      if (claim.meta.name == "data") h.objects().DeleteClaim("default/data");
    };
    Reserved r = ReserveOn(h, two, "b-1", 600);
    Status st = r.plugin->PreBind(r.state, two, "b-1");
    CHECK(st.code() == Code::kError);
    CHECK_THAT(st.Message(), Catch::Contains("PersistentVolumeClaim default/data was deleted"));
    CHECK_THAT(st.Message(), !Catch::Contains("timed out"));
  }
  SECTION("a pod deleted during the wait ends it, not the timeout") {
    // The claim never binds; the pod is deleted once its claim is annotated. The wait notices
    // (it looks at the pod between store changes) and frees its binder thread.
    h.recording_api().on_annotate = [&](const PersistentVolumeClaim&, std::string_view) {
      h.SetPodsEnded(true);
    };
    Reserved r = ReserveOn(h, pod, "b-1", 600);
    Status st = r.plugin->PreBind(r.state, pod, "b-1");
    CHECK(st.code() == Code::kError);
    CHECK_THAT(st.Message(), Catch::Contains("the pod was deleted during the wait"));
    CHECK_THAT(st.Message(), !Catch::Contains("timed out"));
  }
  SECTION("a static match writes the PV's claimRef") {
    h.objects().Put(Volume("pv-small", "wffc", 2 * kGi, {"zone-b"}));
    h.objects().Put(Volume("pv-big", "wffc", 8 * kGi, {"zone-b"}));
    h.recording_api().on_claim_ref = [&](const PersistentVolume& v, const PersistentVolumeClaim& c) {
      PersistentVolumeClaim bound = c;
      bound.volume_name = v.name();
      bound.phase_bound = true;
      h.objects().Put(bound);
    };
    Reserved r = ReserveOn(h, pod, "b-1", 600);
    CHECK(r.plugin->PreBind(r.state, pod, "b-1").ok());
    CHECK(h.recording_api().claim_refs ==
          std::vector<std::pair<std::string, std::string>>{{"pv-small", "default/data"}});
    CHECK(h.recording_api().claim_annotations.empty());
  }
}

TEST_CASE("VolumeZone: PV zone labels against node labels, over generated clusters", "[plugins][volumes]") {
  std::mt19937 rng(4242);
  const std::vector<std::string> zones = {"za", "zb", "zc"};
  const std::vector<std::string> regions = {"r1", "r2"};
  for (int round = 0; round < 300; ++round) {
    FakeHandle h;
    for (int n = 0; n < 5; ++n) {
      NodeBuilder b("n" + std::to_string(n));
      if (rng() % 4) b.Label("topology.kubernetes.io/zone", zones[rng() % 3]);
      if (rng() % 2) b.Label("topology.kubernetes.io/region", regions[rng() % 2]);
      h.AddNode(b.Build());
    }
    PersistentVolume pv = Volume("pv", "", kGi, {});
    std::vector<std::string> pv_zones;
    if (rng() % 4) {
      for (const std::string& z : zones) {
        if (rng() % 2) pv_zones.push_back(z);
      }
      if (pv_zones.empty()) pv_zones.push_back("za");
      std::string joined;
      for (const std::string& z : pv_zones) joined += (joined.empty() ? "" : "__") + z;
      pv.meta.labels["topology.kubernetes.io/zone"] = joined;
    }
    std::string pv_region;
    if (rng() % 3 == 0) {
      pv_region = regions[rng() % 2];
      pv.meta.labels["topology.kubernetes.io/region"] = pv_region;
    }
    h.objects().Put(pv);
    h.objects().Put(Claim("data", "", kGi, kReadWriteOnce, "pv"));
    auto plugin = volume_zone::VolumeZone::New(h);
    REQUIRE(plugin.ok());
    auto run = testing::RunFilter(**plugin, h, WithClaims("p", {"data"}));
    const bool labelled = !pv_zones.empty() || !pv_region.empty();
    for (const NodeInfo* info : h.snapshot().nodes()) {
      const auto& labels = info->node()->meta.labels;
      const bool node_has_topology = labels.contains("topology.kubernetes.io/zone") ||
                                     labels.contains("topology.kubernetes.io/region");
      auto value = [&](const char* key) {
        auto it = labels.find(key);
        return it == labels.end() ? std::string() : it->second;
      };
      bool fits = true;
      if (node_has_topology) {
        if (!pv_zones.empty()) {
          fits &= std::find(pv_zones.begin(), pv_zones.end(), value("topology.kubernetes.io/zone")) != pv_zones.end();
        }
        if (!pv_region.empty()) fits &= value("topology.kubernetes.io/region") == pv_region;
      }
      INFO("round " << round << " node " << info->name());
      const std::string got = run.by_node[info->name()];
      if (!labelled) {
        CHECK(got == "skip");
      } else {
        CHECK(got == (fits ? "ok" : "UnschedulableAndUnresolvable: " + std::string(volume_zone::kReasonConflict)));
      }
    }
  }
}

// A ReadWriteOncePod claim fits nowhere while another pod uses it, and anywhere once none does;
// the PreFilter extensions (preemption's dry run) keep the count equal to a fresh PreFilter.
TEST_CASE("VolumeRestrictions: ReadWriteOncePod, over generated clusters", "[plugins][volumes]") {
  using namespace volume_restrictions;
  std::mt19937 rng(99);
  for (int round = 0; round < 300; ++round) {
    FakeHandle h;
    h.AddNode(NodeBuilder("n0").Build());
    h.AddNode(NodeBuilder("n1").Build());
    const int claims = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < claims; ++c) {
      h.objects().Put(Claim("c" + std::to_string(c), "", kGi, rng() % 2 ? kReadWriteOncePod : kReadWriteOnce,
                            "pv" + std::to_string(c)));
    }
    std::vector<Pod> running;
    for (int p = 0; p < static_cast<int>(rng() % 4); ++p) {
      Pod pod = WithClaims("run" + std::to_string(p), {"c" + std::to_string(rng() % claims)},
                           "n" + std::to_string(rng() % 2));
      running.push_back(pod);
      h.AddPod(pod);
    }
    const std::string wanted = "c" + std::to_string(rng() % claims);
    const bool rwop = h.Objects()->Claim("default", wanted)->access_modes & kReadWriteOncePod;
    int64_t users = 0;
    for (const Pod& p : running) users += p.volumes.front().claim_name == wanted;
    auto plugin = VolumeRestrictions::New(h);
    REQUIRE(plugin.ok());
    const Pod pod = WithClaims("new", {wanted});
    auto run = testing::RunFilter(**plugin, h, pod);
    INFO("round " << round);
    const std::string want = !rwop ? "skip"
                             : users > 0 ? "Unschedulable: " + std::string(kReasonReadWriteOncePodConflict)
                                         : "ok";
    CHECK(run.by_node["n0"] == want);
    if (!rwop || running.empty()) continue;
    // Removing every user through the extension frees the claim, as a fresh PreFilter would see.
    CycleState state = run.state.Clone();
    for (const Pod& p : running) {
      REQUIRE((*plugin)->RemovePod(state, pod, p, *h.snapshot().Get(p.node_name)).ok());
    }
    CHECK((*plugin)->Filter(state, pod, *h.snapshot().nodes().front()).ok());
    for (const Pod& p : running) {
      REQUIRE((*plugin)->AddPod(state, pod, p, *h.snapshot().Get(p.node_name)).ok());
    }
    CHECK(testing::Describe((*plugin)->Filter(state, pod, *h.snapshot().nodes().front())) == want);
  }
}

TEST_CASE("Storage objects decode with errors naming the object and the field", "[decode][volumes]") {
  auto pvc = DecodePersistentVolumeClaim(nlohmann::json::parse(R"({
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data", "namespace": "team", "annotations": {"volume.kubernetes.io/selected-node": "n1"}},
    "spec": {"accessModes": ["ReadWriteOncePod"], "storageClassName": "fast",
             "resources": {"requests": {"storage": "10Gi"}}, "volumeName": ""},
    "status": {"phase": "Pending"}})"));
  REQUIRE(pvc.ok());
  CHECK(pvc->access_modes == kReadWriteOncePod);
  CHECK(pvc->request_bytes == 10 * kGi);
  CHECK(pvc->storage_class == "fast");
  CHECK(pvc->selected_node() == "n1");
  CHECK_FALSE(pvc->bound());

  auto bad_mode = DecodePersistentVolumeClaim(nlohmann::json::parse(R"({
    "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "team"},
    "spec": {"accessModes": ["ReadWriteSometimes"]}})"));
  REQUIRE_FALSE(bad_mode.ok());
  CHECK(bad_mode.status().message() ==
        "PersistentVolumeClaim team/data: spec.accessModes[0]: unknown access mode \"ReadWriteSometimes\" "
        "(want ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod)");

  auto bad_size = DecodePersistentVolume(nlohmann::json::parse(R"({
    "kind": "PersistentVolume", "metadata": {"name": "pv1"},
    "spec": {"capacity": {"storage": "lots"}}})"));
  REQUIRE_FALSE(bad_size.ok());
  CHECK_THAT(std::string(bad_size.status().message()),
             Catch::StartsWith("PersistentVolume pv1: spec.capacity.storage: "));

  auto pv = DecodePersistentVolume(nlohmann::json::parse(R"({
    "kind": "PersistentVolume", "metadata": {"name": "pv1", "labels": {"topology.kubernetes.io/zone": "a"}},
    "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
             "claimRef": {"namespace": "team", "name": "data"},
             "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}]}}}})"));
  REQUIRE(pv.ok());
  CHECK(pv->capacity_bytes == 5 * kGi);
  CHECK(pv->claim_ref->name == "data");
  CHECK(VolumeNodeAffinityMatches(*pv, NodeBuilder("x").Label(std::string(kZone), "a").Build()));
  CHECK_FALSE(VolumeNodeAffinityMatches(*pv, NodeBuilder("y").Label(std::string(kZone), "b").Build()));

  auto bad_class = DecodeStorageClass(nlohmann::json::parse(R"({
    "kind": "StorageClass", "metadata": {"name": "fast"}, "provisioner": "csi.example.com",
    "volumeBindingMode": "Later"})"));
  REQUIRE_FALSE(bad_class.ok());
  CHECK(bad_class.status().message() ==
        "StorageClass fast: volumeBindingMode: unknown binding mode \"Later\" (want Immediate or WaitForFirstConsumer)");

  auto pod = DecodePod(nlohmann::json::parse(R"({
    "kind": "Pod", "metadata": {"name": "p", "namespace": "team"},
    "spec": {"containers": [{"name": "c"}], "volumes": [
      {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
      {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
      {"name": "config", "configMap": {"name": "cfg"}}]}})"));
  REQUIRE(pod.ok());
  REQUIRE(pod->volumes.size() == 2);
  CHECK(ClaimNameOf(*pod, pod->volumes[0]) == "data");
  CHECK(ClaimNameOf(*pod, pod->volumes[1]) == "p-scratch");

  auto no_claim = DecodePod(nlohmann::json::parse(R"({
    "kind": "Pod", "metadata": {"name": "p", "namespace": "team"},
    "spec": {"containers": [{"name": "c"}], "volumes": [{"name": "data", "persistentVolumeClaim": {}}]}})"));
  REQUIRE_FALSE(no_claim.ok());
  CHECK(no_claim.status().message() == "Pod team/p: spec.volumes[0].persistentVolumeClaim.claimName: missing");
}

}  // namespace volume_plugins_test
}  // namespace tessel
