// The bench's pods followed on the apiserver: which node each one is bound to first, and when.
// Built on the scheduler's own informer (scheduler/kube/informer.h), so it lists, watches,
// resumes, and relists on 410 Gone like the scheduler does: no bind is lost to a broken watch.
//
//   BindWatcher watcher(client, "tessel-e2e");   // lists and watches; returns once synced
//   watcher.Start();                             // the clock of last_bind_s() starts
//   ... a scheduler binds ...
//   watcher.bound(); watcher.last_bind_s(); watcher.bindings();
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/synchronization/mutex.h"
#include "scheduler/kube/informer.h"

namespace tessel::bench {

// The bench's pod names: e2e-pod-00042 is pod 42 of the workload.
std::string PodName(int64_t i);
std::optional<int64_t> PodIndex(std::string_view name);

class BindWatcher final : private kube::InformerHandler {
 public:
  // Starts the informer on the pods of `ns` and waits until its first list is in.
  BindWatcher(kube::KubeClient& client, std::string_view ns);
  ~BindWatcher() override;
  BindWatcher(const BindWatcher&) = delete;
  BindWatcher& operator=(const BindWatcher&) = delete;

  // The clock of last_bind_s() starts now.
  void Start();
  int64_t bound();
  // Seconds from Start() to the last first bind so far (0 with none).
  double last_bind_s();
  // Pod index -> the node it was first seen bound to.
  std::map<int64_t, std::string> bindings();
  // Lists the informer made (1 + one per relist, e.g. after 410 Gone).
  int64_t lists() const { return informer_.relists(); }

 private:
  using Clock = std::chrono::steady_clock;
  void OnAdd(const nlohmann::json& pod) override { Record(pod); }
  void OnUpdate(const nlohmann::json& pod) override { Record(pod); }
  void OnDelete(const std::string&, const nlohmann::json*) override {}
  void Record(const nlohmann::json& pod);

  absl::Mutex mu_;
  Clock::time_point start_ ABSL_GUARDED_BY(mu_) = Clock::now();
  Clock::time_point last_bind_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::string> node_of_ ABSL_GUARDED_BY(mu_);
  kube::Informer informer_;  // last: its thread stops before the rest goes
};

}  // namespace tessel::bench
