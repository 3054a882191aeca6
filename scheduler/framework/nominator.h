// The nominations of pending pods: the node an earlier preemption chose for each, while its
// victims leave. Read from status.nominatedNodeName (so it survives restarts and updates), set
// by the scheduling cycle when it preempts, dropped when the pod is assumed, bound, deleted or
// its preemption found nothing. Thread-safe (informer threads and the scheduling loop).
//
//   nominator.Set(pod, "node-a");
//   NominatedPodMap m = nominator.Pods();   // a copy
//   auto view = nominator.Snapshot();        // shared, with per-node versions (Nominations)
#pragma once

#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "scheduler/framework/interface.h"

namespace tessel {

class Nominator {
 public:
  // Nominates the pod (this copy) to `node`; "" drops its nomination.
  void Set(PodRef pod, const std::string& node) {
    absl::MutexLock lock(&mu_);
    RemoveLocked(pod->Key());
    if (node.empty()) return;
    view_ = nullptr;
    nodes_[pod->Key()] = node;
    by_node_[node].push_back(std::move(pod));
    version_of_[node] = ++versions_;
  }
  void Remove(const std::string& key) {
    absl::MutexLock lock(&mu_);
    RemoveLocked(key);
    observed_.erase(key);
  }
  // An informer delivered the pending pod with `from_api` as its status.nominatedNodeName; returns
  // the nomination it has now. As in kube-scheduler, a copy without one keeps the nomination
  // made in memory (the status patch may not have landed yet) unless the previous copy had one:
  // then it was removed on purpose.
  std::string Observe(const std::string& key, const std::string& from_api) {
    absl::MutexLock lock(&mu_);
    std::string& previous = observed_[key];
    std::string now = from_api;
    if (from_api.empty() && previous.empty()) {
      auto it = nodes_.find(key);
      if (it != nodes_.end()) now = it->second;
    }
    previous = from_api;
    return now;
  }
  // The pod's nominated node, or "".
  std::string NodeOf(const std::string& key) const {
    absl::MutexLock lock(&mu_);
    auto it = nodes_.find(key);
    return it == nodes_.end() ? std::string() : it->second;
  }
  NominatedPodMap Pods() const {
    absl::MutexLock lock(&mu_);
    return by_node_;
  }
  // The nominations with a version per node (interface.h). Shared, not copied, until the next
  // change: a scheduling cycle reads it without a copy.
  using View = Nominations;
  std::shared_ptr<const View> Snapshot() const {
    absl::MutexLock lock(&mu_);
    if (view_ == nullptr) view_ = std::make_shared<const View>(View{by_node_, version_of_});
    return view_;
  }
  bool empty() const {
    absl::MutexLock lock(&mu_);
    return nodes_.empty();
  }

 private:
  void RemoveLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = nodes_.find(key);
    if (it == nodes_.end()) return;
    view_ = nullptr;
    auto list = by_node_.find(it->second);
    if (list != by_node_.end()) {
      std::erase_if(list->second, [&](const PodRef& p) { return p->Key() == key; });
      if (list->second.empty()) {
        by_node_.erase(list);
        version_of_.erase(it->second);
      } else {
        version_of_[it->second] = ++versions_;
      }
    }
    nodes_.erase(it);
  }

  mutable absl::Mutex mu_;
  StringKeyedMap<std::string> nodes_ ABSL_GUARDED_BY(mu_);  // pod key -> node
  StringKeyedMap<std::string> observed_ ABSL_GUARDED_BY(mu_);  // pod key -> node, as last seen
  NominatedPodMap by_node_ ABSL_GUARDED_BY(mu_);
  StringKeyedMap<uint64_t> version_of_ ABSL_GUARDED_BY(mu_);  // per node of by_node_
  uint64_t versions_ ABSL_GUARDED_BY(mu_) = 0;  // the last version given out
  mutable std::shared_ptr<const View> view_ ABSL_GUARDED_BY(mu_);  // null after a change
};

}  // namespace tessel
