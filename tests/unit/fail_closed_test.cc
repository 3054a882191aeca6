// Objects that stop decoding fail closed (issue 37, defects 9, 10, 11 and 13): a Node that does
// not read takes no pods, a Queue or ResourceFlavor keeps its last good version (or holds its
// pods), a PodGroup's waiting members are told, and a bound pod is always charged, with
// saturating arithmetic. Each case runs the whole core (tests/harness) on the reproduction.
#include <catch2/catch.hpp>

#include <limits>
#include <map>

#include "harness/core_harness.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/decode.h"
#include "scheduler/api/quantity.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/quota/queue_store.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace fail_closed_test {

using nlohmann::json;
using testing::PodBuilder;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

class Outcomes final : public SchedulingObserver {
 public:
  void PodScheduled(const Pod& pod, const std::string& node) override { scheduled[pod.Key()] = node; }
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override {
    failures[pod.Key()] = message;
    kinds[pod.Key()] = kind;
  }
  std::map<std::string, std::string> scheduled;
  std::map<std::string, std::string> failures;
  std::map<std::string, FailureKind> kinds;
};

// A Node as the API server sends it: 8 GPUs, optionally cordoned, with extra status fields.
json NodeJson(std::string_view name, json allocatable, json spec = json::object()) {
  return json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}, {"uid", StrCat("uid-", name)}, {"labels", {{"kubernetes.io/hostname", name}}}}},
              {"spec", std::move(spec)},
              {"status",
               {{"capacity", allocatable},
                {"allocatable", allocatable},
                {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json EightGpus() { return {{"cpu", "64"}, {"memory", "256Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}}; }

json BoundPodJson(std::string_view name, std::string_view node, json containers) {
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "team"}, {"uid", StrCat("uid-", name)}}},
              {"spec", {{"schedulerName", "tessel"}, {"nodeName", node}, {"containers", std::move(containers)}}},
              {"status", {{"phase", "Running"}}}};
}

json Requests(json requests) { return json{{"name", "c"}, {"image", "x"}, {"resources", {{"requests", std::move(requests)}}}}; }

json QueueObject(std::string_view name, json spec) {
  return json{{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"}, {"metadata", {{"name", name}}}, {"spec", std::move(spec)}};
}

Pod GpuPod(std::string ns, std::string name, int gpus = 1) {
  return PodBuilder(std::move(name), std::move(ns)).Requests(StrCat("cpu:1,nvidia.com/gpu:", gpus)).Build();
}

struct Core {
  Core() : harness({.observer = &outcomes}) {}
  void Run() { harness.RunUntilIdle(); }
  // Parked pods retry (their backoff and the unschedulable wait pass).
  void RetryParked() {
    harness.clock.Advance(absl::Minutes(6));
    Run();
  }
  int Bound(std::string_view ns) const {
    int n = 0;
    for (const auto& [key, node] : harness.binds()) n += key.starts_with(StrCat(ns, "/"));
    return n;
  }
  Outcomes outcomes;
  testing::CoreHarness harness;
  std::unique_ptr<Scheduler>& s = harness.s;
};

TEST_CASE("Fail closed: quantities beyond int64 saturate where asked, and say so otherwise",
          "[fail_closed][quantity]") {
  CHECK(ParseMilliSaturating("100E").value() == kInt64Max);
  CHECK(ParseValueSaturating("100E").value() == kInt64Max);
  CHECK(ParseValueSaturating("-100E").value() == std::numeric_limits<int64_t>::min());
  CHECK(ParseMilliSaturating("1e2000").value() == kInt64Max);
  CHECK(ParseMilliSaturating("0e2000").value() == 0);
  CHECK(ParseMilliSaturating("1234567890123456789012345678901234567890").value() == kInt64Max);
  CHECK(ParseValueSaturating("8Gi").value() == 8LL << 30);
  // Not a quantity at all stays an error, and so does a value too small to tell from zero.
  CHECK(ParseMilliSaturating("ten").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ParseMilliSaturating("1e-2000").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ParseMilliSaturating("1234567890123456789012345678901234567890x").status().code() ==
        absl::StatusCode::kInvalidArgument);
  // The strict parsers keep refusing, now as OutOfRange.
  CHECK(ParseMilli("100E").status().code() == absl::StatusCode::kOutOfRange);
  CHECK(ParseMilli("100E").status().message() == "quantity \"100E\" is not valid: out of range for a 64-bit integer");
}

TEST_CASE("Fail closed: a node update with an extended resource beyond int64 still cordons and "
          "shrinks the node",
          "[fail_closed][node]") {
  Core c;
  c.harness.AddNode(*DecodeNode(NodeJson("n1", EightGpus())));
  // Defect 9: cordoned, GPUs cut from 8 to 1, and status.capacity[example.com/huge]=100E.
  json shrunk = EightGpus();
  shrunk["nvidia.com/gpu"] = "1";
  shrunk["example.com/huge"] = "100E";
  const absl::StatusOr<Node> node = DecodeNode(NodeJson("n1", shrunk, {{"unschedulable", true}}));
  REQUIRE(node.ok());
  CHECK(node->unschedulable);
  CHECK(node->allocatable.Get(kNvidiaGpu) == 1000);
  CHECK(node->capacity.Get("example.com/huge") == kInt64Max);
  c.s->OnNodeUpdate(*node);
  for (int i = 0; i < 4; ++i) c.s->OnPodAdd(GpuPod("team", StrCat("p", i)));
  c.Run();
  CHECK(c.harness.binds().empty());
  CHECK(c.outcomes.failures.at("team/p0") == "0/1 nodes are available: 1 node(s) were unschedulable.");
}

TEST_CASE("Fail closed: an extended resource that does not read counts as none of it",
          "[fail_closed][node]") {
  json allocatable = EightGpus();
  allocatable["example.com/odd"] = "lots";
  const NodeRead read = ReadNode(NodeJson("n1", allocatable));
  REQUIRE(read.node.ok());
  CHECK(read.node->allocatable.Get("example.com/odd") == 0);
  CHECK(read.node->allocatable.Get(kNvidiaGpu) == 8000);
  REQUIRE(read.warnings.size() == 2);  // capacity and allocatable
  CHECK(read.warnings[1] ==
        "Node n1: status.allocatable.example.com/odd: quantity \"lots\" is not valid: no digits (read as none of "
        "it: no pod that asks for example.com/odd goes there)");
  // A resource every pod asks for, or a GPU, must read.
  allocatable = EightGpus();
  allocatable["nvidia.com/gpu"] = "eight";
  CHECK(DecodeNode(NodeJson("n1", allocatable)).status().message() ==
        "Node n1: status.capacity.nvidia.com/gpu: quantity \"eight\" is not valid: no digits");
}

TEST_CASE("Fail closed: a node that cannot be read takes no pods until it can, and its pods stay "
          "charged",
          "[fail_closed][node]") {
  Core c;
  c.harness.AddNode(*DecodeNode(NodeJson("n1", EightGpus())));
  c.s->OnPodAdd(GpuPod("team", "running", 4));
  c.Run();
  REQUIRE(c.Bound("team") == 1);
  // A taint effect this version does not know: the node does not read.
  const json odd = NodeJson("n1", EightGpus(), {{"taints", json::array({{{"key", "k"}, {"effect", "Sometimes"}}})}});
  const absl::StatusOr<Node> node = DecodeNode(odd);
  REQUIRE_FALSE(node.ok());
  CHECK(node.status().message() ==
        "Node n1: spec.taints[0].effect: unknown taint effect \"Sometimes\" (want NoSchedule, PreferNoSchedule or "
        "NoExecute)");
  c.s->OnNodeUndecodable("n1", node.status());
  Pod tolerant = GpuPod("team", "tolerates-all");
  tolerant.tolerations.push_back(Toleration{.op = Toleration::Operator::kExists});
  c.s->OnPodAdd(tolerant);
  c.s->OnPodAdd(GpuPod("team", "plain"));
  c.Run();
  CHECK(c.Bound("team") == 1);  // neither newcomer, whatever it tolerates
  CHECK(c.outcomes.failures.count("team/plain") == 1);
  CHECK(c.outcomes.failures.count("team/tolerates-all") == 1);
  const std::optional<NodeInfo> info = c.harness.cache.GetNodeInfo("n1");
  REQUIRE(info.has_value());
  CHECK(info->FindPod("team/running") != nullptr);  // still charged there
  REQUIRE(c.harness.api.object_events.size() == 1);
  CHECK(c.harness.api.object_events[0] ==
        "Warning NodeUnreadable v1 Node /n1 uid-n1: Node n1: spec.taints[0].effect: unknown taint effect "
        "\"Sometimes\" (want NoSchedule, PreferNoSchedule or NoExecute); the node takes no new pods until it reads");
  c.s->OnNodeUndecodable("n1", node.status());  // the next heartbeat: told once
  CHECK(c.harness.api.object_events.size() == 1);
  // Readable again: it takes pods.
  c.s->OnNodeUpdate(*DecodeNode(NodeJson("n1", EightGpus())));
  c.RetryParked();
  CHECK(c.Bound("team") == 3);
}

TEST_CASE("Fail closed: a node never read is known by name, unschedulable", "[fail_closed][node]") {
  Core c;
  c.s->OnNodeUndecodable("ghost", absl::InvalidArgumentError("Node ghost: spec.unschedulable: expected true or false"));
  c.s->OnPodAdd(GpuPod("team", "p"));
  c.Run();
  CHECK(c.harness.binds().empty());
}

TEST_CASE("Fail closed: a Queue that stops decoding keeps its last valid version", "[fail_closed][queue]") {
  Core c;
  c.harness.AddNode(*DecodeNode(NodeJson("n1", EightGpus())));
  const json spec = {{"namespaces", {"rev"}}, {"cohort", "c"}, {"nominalQuota", {{"nvidia.com/gpu", "1"}}}};
  REQUIRE(c.harness.ApplyQueueObject(QueueObject("rev-q", spec)).ok());
  for (int i = 0; i < 4; ++i) c.s->OnPodAdd(GpuPod("rev", StrCat("p", i)));
  c.Run();
  REQUIRE(c.Bound("rev") == 1);
  // Defect 10: a schema-valid edit that does not decode.
  json bad = spec;
  bad["borrowingLimit"] = {{"cpu", "1e30"}};
  const absl::Status st = c.harness.ApplyQueueObject(QueueObject("rev-q", bad));
  CHECK(st.message() ==
        "Queue rev-q: spec.borrowingLimit.cpu: quantity \"1e30\" is not valid: out of range for a 64-bit integer; "
        "its last valid version stays in force");
  c.RetryParked();
  CHECK(c.Bound("rev") == 1);
  CHECK(c.s->queue_store().directory()->Find("rev-q") != nullptr);
  CHECK(c.s->queue_store().Undecodable().at("rev-q") == st.message());
  // A good version replaces the error.
  json more = spec;
  more["nominalQuota"]["nvidia.com/gpu"] = "2";
  REQUIRE(c.harness.ApplyQueueObject(QueueObject("rev-q", more)).ok());
  c.RetryParked();
  CHECK(c.Bound("rev") == 2);
  CHECK(c.s->queue_store().Undecodable().empty());
}

TEST_CASE("Fail closed: a Queue that never decoded holds its pods, naming the field", "[fail_closed][queue]") {
  Core c;
  c.harness.AddNode(*DecodeNode(NodeJson("n1", EightGpus())));
  const absl::Status st = c.harness.ApplyQueueObject(
      QueueObject("held", {{"namespaces", {"h"}}, {"weight", "0"}, {"nominalQuota", {{"nvidia.com/gpu", "1"}}}}));
  CHECK(st.message() == "Queue held: spec.weight: must be positive; its pods wait until it decodes");
  c.s->OnPodAdd(GpuPod("h", "by-namespace"));
  Pod labelled = GpuPod("other", "by-label");
  labelled.meta.labels[std::string(kQueueLabel)] = "held";
  c.s->OnPodAdd(labelled);
  c.s->OnPodAdd(GpuPod("free", "unrelated"));
  c.Run();
  CHECK(c.harness.binds() == std::vector<std::pair<std::string, std::string>>{{"free/unrelated", "n1"}});
  const std::string why =
      "0/1 nodes are available: Queue held: spec.weight: must be positive; the Queue does not decode, so its pods "
      "wait until it does.";
  CHECK(c.outcomes.failures.at("h/by-namespace") == why);
  CHECK(c.outcomes.failures.at("other/by-label") == why);
  // Fixed: its quota applies.
  REQUIRE(c.harness.ApplyQueueObject(
                       QueueObject("held", {{"namespaces", {"h"}}, {"nominalQuota", {{"nvidia.com/gpu", "1"}}}}))
              .ok());
  c.RetryParked();
  CHECK(c.Bound("h") == 1);
}

TEST_CASE("Fail closed: a ResourceFlavor that stops decoding keeps its last valid version",
          "[fail_closed][flavor]") {
  QueueStore store;
  ResourceFlavor reserved;
  reserved.meta.name = "reserved";
  reserved.node_labels = {{"pool", "reserved"}};
  store.PutFlavor(reserved);
  const absl::Status st = store.PutUndecodableFlavor(
      "reserved", absl::InvalidArgumentError("ResourceFlavor reserved: spec.nodeTaints[0].effect: unknown"));
  CHECK(st.message() == "ResourceFlavor reserved: spec.nodeTaints[0].effect: unknown; its last valid version stays in force");
  CHECK(store.directory()->flavors().contains("reserved"));
  CHECK(store.UndecodableFlavors().at("reserved") == st.message());
  // One never read is no flavor (no node is in it) until it decodes.
  const absl::Status fresh = store.PutUndecodableFlavor("spot", absl::InvalidArgumentError("ResourceFlavor spot: x"));
  CHECK(fresh.message() == "ResourceFlavor spot: x; no node is in it until it decodes");
  CHECK_FALSE(store.directory()->flavors().contains("spot"));
  store.PutFlavor(reserved);
  CHECK_FALSE(store.UndecodableFlavors().contains("reserved"));
}

TEST_CASE("Fail closed: a bound pod whose requests sum past int64 is charged, saturated",
          "[fail_closed][pod]") {
  // Defect 13: "memory: 5E" twice.
  const absl::StatusOr<Pod> pod = DecodePod(BoundPodJson(
      "mem-5e", "n1", json::array({Requests({{"cpu", "1"}, {"memory", "5E"}}), Requests({{"memory", "5E"}})})));
  REQUIRE(pod.ok());
  CHECK(pod->requests.memory == kUnreadableQuantity);
  CHECK(pod->requests.milli_cpu == 1000);
  REQUIRE(pod->decode_warnings.size() == 1);
  CHECK(pod->decode_warnings[0].starts_with("Pod team/mem-5e: spec.containers: resource sum overflows a 64-bit integer"));
  Core c;
  c.harness.AddNode(*DecodeNode(NodeJson("n1", EightGpus())));
  c.harness.AddPod(*pod);
  c.s->OnPodAdd(PodBuilder("eight", "team").Requests("cpu:1,memory:1Gi,nvidia.com/gpu:8").Build());
  c.Run();
  CHECK(c.harness.binds().empty());
  CHECK(c.outcomes.failures.at("team/eight") == "0/1 nodes are available: 1 Insufficient memory.");
}

TEST_CASE("Fail closed: a bound pod's GPU request beyond int64 holds every GPU, never none",
          "[fail_closed][pod]") {
  const absl::StatusOr<Pod> pod =
      DecodePod(BoundPodJson("gpu-1e20", "n1", json::array({Requests({{"cpu", "1"}, {"nvidia.com/gpu", "1e20"}})})));
  REQUIRE(pod.ok());
  CHECK(pod->requests.Get(kNvidiaGpu) == kUnreadableQuantity);
  const gpu::GpuRequest request = gpu::ReadGpuRequest(*pod);
  CHECK(request.kind == gpu::GpuRequest::Kind::kWhole);
  CHECK(request.count == std::numeric_limits<int32_t>::max());
  Core c;
  c.harness.AddNode(*DecodeNode(NodeJson("n1", EightGpus())));
  c.harness.AddPod(*pod);
  c.s->OnPodAdd(GpuPod("team", "one"));
  c.Run();
  CHECK(c.harness.binds().empty());
  // And a bound pod holds at most kUnreadableQuantity, so a node's sum never overflows.
  const absl::StatusOr<Pod> big = DecodePod(BoundPodJson("big", "n1", json::array({Requests({{"memory", "5E"}})})));
  REQUIRE(big.ok());
  CHECK(big->requests.memory == kUnreadableQuantity);
}

TEST_CASE("Fail closed: the members of a PodGroup that does not decode are told why they wait",
          "[fail_closed][gang]") {
  Core c;
  c.harness.AddNode(*DecodeNode(NodeJson("n1", EightGpus())));
  const json pg = {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                   {"kind", "PodGroup"},
                   {"metadata", {{"name", "train"}, {"namespace", "team"}}},
                   {"spec", {{"minMember", "two"}}}};
  const absl::StatusOr<bool> delivered = c.harness.ApplyGangObject(pg);
  CHECK(delivered.status().message() == "PodGroup team/train: spec.minMember: expected an integer, got \"two\"");
  for (int i = 0; i < 2; ++i) {
    Pod member = GpuPod("team", StrCat("m", i));
    member.meta.labels["scheduling.x-k8s.io/pod-group"] = "train";
    c.s->OnPodAdd(member);
  }
  c.Run();
  CHECK(c.harness.binds().empty());
  const std::string why =
      "PodGroup team/train: spec.minMember: expected an integer, got \"two\"; the pod waits until PodGroup "
      "team/train decodes";
  for (const char* key : {"team/m0", "team/m1"}) {
    CAPTURE(key);
    REQUIRE(c.outcomes.failures.count(key) == 1);
    CHECK(c.outcomes.failures.at(key) == why);
    CHECK(c.outcomes.kinds.at(key) == FailureKind::kError);
  }
  // Fixed: the gang is placed.
  REQUIRE(c.harness.ApplyGangObject({{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                                     {"kind", "PodGroup"},
                                     {"metadata", {{"name", "train"}, {"namespace", "team"}}},
                                     {"spec", {{"minMember", 2}}}})
              .ok());
  c.RetryParked();
  CHECK(c.Bound("team") == 2);
}

}  // namespace fail_closed_test
}  // namespace tessel
