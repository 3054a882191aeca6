// The record of disruptions (disruption_ledger.h).
#include "scheduler/framework/disruption_ledger.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tessel {

std::string WorkloadKey(const Pod& pod) {
  for (const OwnerReference& owner : pod.meta.owner_references) {
    if (!owner.controller || owner.uid.empty()) continue;
    auto index = pod.meta.labels.find("batch.kubernetes.io/job-completion-index");
    if (index == pod.meta.labels.end()) {
      index = pod.meta.annotations.find("batch.kubernetes.io/job-completion-index");
      if (index == pod.meta.annotations.end()) return absl::StrCat(owner.kind, "/", owner.uid);
    }
    return absl::StrCat(owner.kind, "/", owner.uid, "#", index->second);
  }
  return absl::StrCat("Pod/", pod.Key());
}

void DisruptionLedger::Record(const std::string& workload, DisruptionKind kind, absl::Time at) {
  absl::MutexLock lock(&mu_);
  history_[workload].push_back({kind, at});
  recorded_.emplace_back(at, workload);
}

int DisruptionLedger::Count(const std::string& workload, DisruptionKind kind, absl::Time since) const {
  absl::MutexLock lock(&mu_);
  auto it = history_.find(workload);
  if (it == history_.end()) return 0;
  return static_cast<int>(std::count_if(it->second.begin(), it->second.end(),
                                        [&](const Entry& e) { return e.kind == kind && e.at >= since; }));
}

void DisruptionLedger::Prune(absl::Time before) {
  absl::MutexLock lock(&mu_);
  while (!recorded_.empty() && recorded_.front().first < before) {
    auto it = history_.find(recorded_.front().second);
    if (it != history_.end()) {
      std::deque<Entry>& entries = it->second;
      while (!entries.empty() && entries.front().at < before) entries.pop_front();
      if (entries.empty()) history_.erase(it);
    }
    recorded_.pop_front();
  }
}

}  // namespace tessel
