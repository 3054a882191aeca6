// A Handle for unit tests: a snapshot built from nodes, a manual clock, and the shared fake
// ClusterApi (scheduler/testing/fake_cluster_api.h) that records what plugins asked of it.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "scheduler/framework/interface.h"
#include "scheduler/quota/queue.h"
#include "scheduler/state/cache.h"
#include "scheduler/testing/fake_cluster_api.h"

namespace tessel::testing {

class FakeHandle final : public Handle {
 public:
  FakeHandle() : cache_(&clock_) {}
  void AddNode(Node n) {
    cache_.AddOrUpdateNode(std::move(n));
    cache_.UpdateSnapshot(snapshot_);
  }
  void AddPod(Pod p) {
    cache_.AddOrUpdatePod(std::move(p));
    cache_.UpdateSnapshot(snapshot_);
  }
  const Snapshot& snapshot() const override { return snapshot_; }
  const Clock& clock() const override { return clock_; }
  ClusterApi* api() const override { return const_cast<FakeClusterApi*>(&api_); }
  uint64_t seed() const override { return 7; }
  std::optional<int32_t> PriorityClassValue(std::string_view) const override { return std::nullopt; }
  ClusterObjectStore* ObjectStore() const override { return &objects_; }
  std::shared_ptr<const QueueDirectory> Queues() const override { return queues_; }
  void SetQueues(std::shared_ptr<const QueueDirectory> queues) { queues_ = std::move(queues); }
  void RemovePod(const std::string& key) {
    cache_.RemovePod(key);
    cache_.UpdateSnapshot(snapshot_);
  }
  void SetNamespaceLabels(std::string ns, StringMap labels) {
    objects_.Put(Namespace{.meta = {.name = std::move(ns), .labels = std::move(labels)}});
  }
  // The gang a pod is in (GangKeyOf), by pod key, as a test sets it; "" for none.
  void SetGang(std::string pod_key, std::string gang) { gangs_[std::move(pod_key)] = std::move(gang); }
  std::string GangKeyOf(const Pod& pod) const override {
    auto it = gangs_.find(pod.Key());
    return it == gangs_.end() ? std::string() : it->second;
  }
  // A pod nominated to a node by an earlier preemption (NominatedPods).
  void Nominate(Pod pod, const std::string& node) {
    pod.nominated_node_name = node;
    nominations_->pods[node].push_back(std::make_shared<const Pod>(std::move(pod)));
  }
  std::shared_ptr<const Nominations> NominatedPods() const override { return nominations_; }
  // PodEnded answers `ended` for every pod (a deletion seen by the core).
  bool PodEnded(const Pod&) const override { return pods_ended_.load(); }
  void SetPodsEnded(bool ended) { pods_ended_.store(ended); }
  ClusterObjectStore& objects() { return objects_; }
  FakeClusterApi& recording_api() { return api_; }
  ManualClock& manual_clock() { return clock_; }

 private:
  ManualClock clock_;
  Cache cache_;
  Snapshot snapshot_;
  FakeClusterApi api_;
  mutable ClusterObjectStore objects_;
  std::shared_ptr<const QueueDirectory> queues_;
  std::atomic<bool> pods_ended_{false};
  std::map<std::string, std::string> gangs_;
  std::shared_ptr<Nominations> nominations_ = std::make_shared<Nominations>();
};

}  // namespace tessel::testing
