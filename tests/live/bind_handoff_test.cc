// One API write per bind: the default profile's GpuShare hands its device choice to
// DefaultBinder through the CycleState, and the bind carries it as the Binding's annotations.
// Over seeded families of GPU nodes and pods, every bound GPU pod is bound exactly once, with a
// tessel.io/gpu-devices annotation naming as many distinct devices as it asked for, and no
// device of a node is given to two pods. The typed bind answer is recorded for the core.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "plugins/default_binder/default_binder.h"
#include "default_scheduler.h"
#include "scheduler/api/device_list.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/framework/binding.h"
#include "scheduler/testing/builders.h"

namespace tessel {
namespace bind_handoff_test {

using testing::NodeBuilder;
using testing::PodBuilder;

// A ClusterApi that binds at once and confirms like an informer would.
class BindingRecorder final : public ClusterApi {
 public:
  absl::Status Bind(const Pod& pod, const std::string& node, const StringMap& annotations) override {
    binds.push_back({pod.Key(), node, annotations});
    Pod bound = pod;
    bound.node_name = node;
    for (const auto& [k, v] : annotations) bound.meta.annotations[k] = v;
    scheduler->OnPodUpdate(std::move(bound));
    return absl::OkStatus();
  }
  absl::Status Evict(const Pod&, std::string_view) override { return absl::OkStatus(); }
  void RecordEvent(const Pod&, std::string_view, std::string_view, std::string_view) override {}

  struct BindCall {
    std::string pod, node;
    StringMap annotations;
  };
  std::vector<BindCall> binds;
  Scheduler* scheduler = nullptr;
};

TEST_CASE("GPU pods are bound with their devices in the Binding, one write each") {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    ManualClock clock;
    BindingRecorder api;
    DefaultScheduler d(&clock, {}, &api);
    std::unique_ptr<Scheduler>& s = d.s;
    api.scheduler = s.get();
    const int nodes = 1 + static_cast<int>(rng() % 4);
    std::map<std::string, int> gpus_of_node;
    for (int n = 0; n < nodes; ++n) {
      const int gpus = std::vector<int>{1, 2, 4, 8}[rng() % 4];
      const std::string name = StrCat("node-", n);
      gpus_of_node[name] = gpus;
      s->OnNodeAdd(NodeBuilder(name)
                          .Allocatable(StrCat("cpu:64,memory:256Gi,nvidia.com/gpu:", gpus))
                          .Label("nvidia.com/gpu.count", StrCat(gpus))
                          .Build());
    }
    std::map<std::string, int> asked;
    const int pods = 1 + static_cast<int>(rng() % 12);
    for (int p = 0; p < pods; ++p) {
      const int gpus = std::vector<int>{0, 1, 1, 2, 4}[rng() % 5];
      PodBuilder b(StrCat("pod-", p));
      b.Requests(gpus > 0 ? StrCat("cpu:1,nvidia.com/gpu:", gpus) : std::string("cpu:1"));
      b.mutable_pod().meta.uid = StrCat("uid-", p);
      asked[StrCat("default/pod-", p)] = gpus;
      s->OnPodAdd(b.Build());
    }
    for (int i = 0; i < 10 * pods && s->ScheduleOne(); ++i) {
    }

    std::set<std::string> seen;
    std::map<std::string, std::set<int32_t>> used;  // node -> devices given out
    for (const auto& call : api.binds) {
      CAPTURE(call.pod, call.node);
      CHECK(seen.insert(call.pod).second);  // bound once
      const int want = asked.at(call.pod);
      auto it = call.annotations.find("tessel.io/gpu-devices");
      if (want == 0) {
        CHECK(it == call.annotations.end());
        continue;
      }
      REQUIRE(it != call.annotations.end());
      std::optional<DeviceList> devices = ParseDeviceList(it->second);
      REQUIRE(devices.has_value());
      CHECK(static_cast<int>(devices->size()) == want);
      for (int32_t d : *devices) {
        CHECK(d >= 0);
        CHECK(d < gpus_of_node.at(call.node));
        CHECK(used[call.node].insert(d).second);  // no device given twice
      }
    }
    // A pod that fits an empty node is placed (the first pod popped that fits always binds).
    int max_gpus = 0;
    for (const auto& [n, g] : gpus_of_node) max_gpus = std::max(max_gpus, g);
    int min_asked = 1 << 30;
    for (const auto& [p, g] : asked) min_asked = std::min(min_asked, g);
    if (min_asked <= max_gpus) CHECK_FALSE(api.binds.empty());
  }
}

TEST_CASE("DefaultBinder records the API's typed answer in the CycleState") {
  class Refusing final : public ClusterApi {
   public:
    absl::Status Bind(const Pod&, const std::string&, const StringMap&) override { return answer; }
    absl::Status Evict(const Pod&, std::string_view) override { return absl::OkStatus(); }
    void RecordEvent(const Pod&, std::string_view, std::string_view, std::string_view) override {}
    absl::Status answer;
  };
  struct OneApiHandle final : Handle {
    const Snapshot& snapshot() const override { return snap; }
    const Clock& clock() const override { return clk; }
    ClusterApi* api() const override { return const_cast<Refusing*>(&refusing); }
    uint64_t seed() const override { return 1; }
    std::optional<int32_t> PriorityClassValue(std::string_view) const override { return std::nullopt; }
    Snapshot snap;
    ManualClock clk;
    Refusing refusing;
  } handle;
  for (absl::Status answer : {absl::OkStatus(), absl::NotFoundError("gone"),
                              absl::AlreadyExistsError("bound"),
                              absl::FailedPreconditionError("not the leader"),
                              absl::UnavailableError("timeout")}) {
    CAPTURE(answer.ToString());
    handle.refusing.answer = answer;
    default_binder::DefaultBinder binder(handle);
    CycleState state;
    Status st = binder.Bind(state, PodBuilder("p").Build(), "n");
    CHECK(st.ok() == answer.ok());
    REQUIRE(BindResult(state) != nullptr);
    CHECK(BindResult(state)->code() == answer.code());
  }
}

}  // namespace bind_handoff_test
}  // namespace tessel
