// QueueStore: decoded Queue objects and Namespace labels -> QueueDirectory snapshots.
#include "scheduler/quota/queue_store.h"

#include <algorithm>

#include "scheduler/util/strings.h"

namespace tessel {

QueueStore::QueueStore() : directory_(std::make_shared<QueueDirectory>()) {}

absl::Status QueueStore::PutUndecodable(const std::string& name, const absl::Status& problem,
                                        std::vector<std::string> namespaces) {
  if (name.empty()) return absl::InvalidArgumentError(StrCat(problem.message(), "; the queue is not read"));
  absl::MutexLock lock(&mu_);
  std::string reported;
  if (decoded_.contains(name)) {
    reported = StrCat(problem.message(), "; its last valid version stays in force");
  } else {
    reported = StrCat(problem.message(), "; its pods wait until it decodes");
    held_[name] = HeldQueue{.namespaces = std::move(namespaces), .problem = std::string(problem.message())};
  }
  undecodable_[name] = reported;
  RebuildLocked();
  return absl::InvalidArgumentError(reported);
}

absl::Status QueueStore::Put(Queue queue) {
  absl::MutexLock lock(&mu_);
  undecodable_.erase(queue.name());
  held_.erase(queue.name());
  const std::string key = queue.name();
  decoded_[key] = std::move(queue);
  RebuildLocked();
  std::string clashes;
  for (const NamespaceConflict& c : conflicts_) {
    if (c.refused != key && c.kept_by != key) continue;
    StrAppend(&clashes, clashes.empty() ? "" : "; ", c.Message());
  }
  if (!clashes.empty()) return absl::InvalidArgumentError(clashes);
  return absl::OkStatus();
}

void QueueStore::Delete(std::string_view name) {
  absl::MutexLock lock(&mu_);
  decoded_.erase(std::string(name));
  undecodable_.erase(std::string(name));
  held_.erase(std::string(name));
  RebuildLocked();
}

bool QueueStore::SelectionDiffersLocked(const StringMap* a, const StringMap* b) const {
  for (const auto& [name, q] : decoded_) {
    // nil selects no namespace, {} every one: neither depends on labels.
    if (!q.namespace_selector.has_value() || q.namespace_selector->empty()) continue;
    const bool in_a = a != nullptr && MatchesLabelSelector(*q.namespace_selector, *a);
    const bool in_b = b != nullptr && MatchesLabelSelector(*q.namespace_selector, *b);
    if (in_a != in_b) return true;
  }
  return false;
}

bool QueueStore::PutNamespace(const std::string& name, const StringMap& labels) {
  absl::MutexLock lock(&mu_);
  auto it = namespaces_.find(name);
  const StringMap* before = it == namespaces_.end() ? nullptr : &it->second;
  if (before != nullptr && *before == labels) return false;  // e.g. a status update
  const bool differs = SelectionDiffersLocked(before, &labels);
  namespaces_[name] = labels;
  if (!differs) return false;
  RebuildLocked();
  return true;
}

bool QueueStore::DeleteNamespace(std::string_view name) {
  absl::MutexLock lock(&mu_);
  auto it = namespaces_.find(name);
  if (it == namespaces_.end()) return false;
  const bool differs = SelectionDiffersLocked(&it->second, nullptr);
  namespaces_.erase(it);
  if (!differs) return false;
  RebuildLocked();
  return true;
}

void QueueStore::PutFlavor(ResourceFlavor flavor) {
  absl::MutexLock lock(&mu_);
  const std::string name = flavor.name();
  undecodable_flavors_.erase(name);
  flavors_[name] = std::move(flavor);
  RebuildLocked();
}

absl::Status QueueStore::PutUndecodableFlavor(const std::string& name, const absl::Status& problem) {
  absl::MutexLock lock(&mu_);
  // Its last good version keeps its nodes; with none, no node is in it (its quota waits).
  const std::string reported =
      StrCat(problem.message(), flavors_.contains(name) ? "; its last valid version stays in force"
                                                        : "; no node is in it until it decodes");
  if (!name.empty()) undecodable_flavors_[name] = reported;
  return absl::InvalidArgumentError(reported);
}

void QueueStore::DeleteFlavor(std::string_view name) {
  absl::MutexLock lock(&mu_);
  undecodable_flavors_.erase(std::string(name));
  if (flavors_.erase(std::string(name)) > 0) RebuildLocked();
}

std::map<std::string, std::string> QueueStore::UndecodableFlavors() const {
  absl::MutexLock lock(&mu_);
  return {undecodable_flavors_.begin(), undecodable_flavors_.end()};
}

void QueueStore::PutCohort(Cohort cohort) {
  absl::MutexLock lock(&mu_);
  const std::string name = cohort.name();
  undecodable_cohorts_.erase(name);
  cohorts_[name] = std::move(cohort);
  RebuildLocked();
}

absl::Status QueueStore::PutUndecodableCohort(const std::string& name, const absl::Status& problem) {
  absl::MutexLock lock(&mu_);
  const std::string reported =
      StrCat(problem.message(), cohorts_.contains(name) ? "; its last valid version stays in force"
                                                        : "; the queues below it hold their pods until it decodes");
  if (!name.empty()) {
    undecodable_cohorts_[name] = std::string(problem.message());
    RebuildLocked();
  }
  return absl::InvalidArgumentError(reported);
}

void QueueStore::DeleteCohort(std::string_view name) {
  absl::MutexLock lock(&mu_);
  undecodable_cohorts_.erase(std::string(name));
  cohorts_.erase(std::string(name));
  RebuildLocked();
}

std::map<std::string, std::string> QueueStore::CohortProblems() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, std::string> out = directory_->tree().Problems();
  for (const auto& [name, why] : undecodable_cohorts_) {
    if (cohorts_.contains(name)) out.emplace(name, StrCat(why, "; its last valid version stays in force"));
  }
  return out;
}

void QueueStore::RebuildLocked() {
  std::vector<Queue> queues;
  queues.reserve(decoded_.size());
  for (const auto& [name, q] : decoded_) queues.push_back(q);
  auto dir = std::make_shared<QueueDirectory>();
  CohortObjects cohorts;
  for (const auto& [name, c] : cohorts_) cohorts.cohorts.push_back(c);
  for (const auto& [name, why] : undecodable_cohorts_) {
    if (!cohorts_.contains(name)) cohorts.held.emplace(name, why);
  }
  conflicts_ = dir->SetResolvingConflicts(std::move(queues), namespaces_, flavors_, held_, std::move(cohorts));
  // A conflict that ended is forgotten, so that it is handed out again if it comes back.
  std::erase_if(taken_, [&](const NamespaceConflict& c) {
    return std::find(conflicts_.begin(), conflicts_.end(), c) == conflicts_.end();
  });
  directory_ = std::move(dir);
}

std::shared_ptr<const QueueDirectory> QueueStore::directory() const {
  absl::MutexLock lock(&mu_);
  return directory_;
}

std::map<std::string, std::string> QueueStore::Problems() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, std::string> out;
  for (const NamespaceConflict& c : conflicts_) {
    std::string& problem = out[c.refused];
    StrAppend(&problem, problem.empty() ? "" : "; ", c.Message());
  }
  for (const auto& [name, why] : undecodable_) out[name] = why;
  return out;
}

std::vector<NamespaceConflict> QueueStore::Conflicts() const {
  absl::MutexLock lock(&mu_);
  return conflicts_;
}

std::map<std::string, std::string> QueueStore::Undecodable() const {
  absl::MutexLock lock(&mu_);
  return {undecodable_.begin(), undecodable_.end()};
}

std::vector<NamespaceConflict> QueueStore::TakeNewConflicts() {
  absl::MutexLock lock(&mu_);
  std::vector<NamespaceConflict> fresh;
  for (const NamespaceConflict& c : conflicts_) {
    if (std::find(taken_.begin(), taken_.end(), c) != taken_.end()) continue;
    fresh.push_back(c);
    taken_.push_back(c);
  }
  return fresh;
}

}  // namespace tessel
