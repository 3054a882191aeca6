// A Handle for unit tests: a snapshot built from nodes, a manual clock, and a ClusterApi that
// records what plugins asked of it.
#pragma once

#include <atomic>
#include <functional>
#include <vector>

#include "scheduler/framework/interface.h"
#include "scheduler/quota/queue.h"
#include "scheduler/state/cache.h"

namespace tessel::testing {

class RecordingApi final : public ClusterApi {
 public:
  absl::Status Bind(const Pod& pod, const std::string& node, const StringMap& a) override {
    binds.emplace_back(pod.Key(), node);
    bind_annotations.emplace_back(pod.Key(), a);
    return bind_result;
  }
  absl::Status Evict(const Pod& pod, std::string_view) override {
    evictions.push_back(pod.Key());
    return absl::OkStatus();
  }
  void RecordEvent(const Pod& pod, std::string_view, std::string_view reason, std::string_view) override {
    events.emplace_back(pod.Key(), std::string(reason));
  }
  absl::Status AnnotateClaim(const PersistentVolumeClaim& claim, std::string_view key,
                             std::string_view value) override {
    claim_annotations.emplace_back(claim.Key(), std::string(key) + "=" + std::string(value));
    if (on_annotate) on_annotate(claim, value);
    return absl::OkStatus();
  }
  absl::Status SetClaimRef(const PersistentVolume& volume, const PersistentVolumeClaim& claim) override {
    claim_refs.emplace_back(volume.name(), claim.Key());
    if (on_claim_ref) on_claim_ref(volume, claim);
    return absl::OkStatus();
  }
  // Volume writes: (claim, "key=value") and (PV, claim); the hooks may play the provisioner.
  std::vector<std::pair<std::string, std::string>> claim_annotations;
  std::vector<std::pair<std::string, std::string>> claim_refs;
  std::function<void(const PersistentVolumeClaim&, std::string_view node)> on_annotate;
  std::function<void(const PersistentVolume&, const PersistentVolumeClaim&)> on_claim_ref;
  absl::Status bind_result = absl::OkStatus();
  std::vector<std::pair<std::string, std::string>> binds;
  std::vector<std::pair<std::string, StringMap>> bind_annotations;
  std::vector<std::string> evictions;
  std::vector<std::pair<std::string, std::string>> events;
};

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
  ClusterApi* api() const override { return const_cast<RecordingApi*>(&api_); }
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
  // PodEnded answers `ended` for every pod (a deletion seen by the core).
  bool PodEnded(const Pod&) const override { return pods_ended_.load(); }
  void SetPodsEnded(bool ended) { pods_ended_.store(ended); }
  ClusterObjectStore& objects() { return objects_; }
  RecordingApi& recording_api() { return api_; }
  ManualClock& manual_clock() { return clock_; }

 private:
  ManualClock clock_;
  Cache cache_;
  Snapshot snapshot_;
  RecordingApi api_;
  mutable ClusterObjectStore objects_;
  std::shared_ptr<const QueueDirectory> queues_;
  std::atomic<bool> pods_ended_{false};
};

}  // namespace tessel::testing
