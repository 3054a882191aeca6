// QueueStore: decoded Queue objects -> QueueDirectory snapshots.
#include "scheduler/quota/queue_store.h"

#include "scheduler/util/strings.h"

namespace tessel {

QueueStore::QueueStore() : directory_(std::make_shared<QueueDirectory>()) {}

absl::Status QueueStore::Apply(const nlohmann::json& object) {
  absl::StatusOr<Queue> queue = DecodeQueue(object);
  std::string name;
  if (const auto m = object.find("metadata"); m != object.end() && m->is_object()) {
    if (const auto n = m->find("name"); n != m->end() && n->is_string()) name = n->get<std::string>();
  }
  absl::MutexLock lock(&mu_);
  if (!queue.ok()) {
    if (!name.empty()) {
      decoded_.erase(name);
      undecodable_[name] = std::string(queue.status().message());
      RebuildLocked();
    }
    return absl::InvalidArgumentError(StrCat(queue.status().message(), "; the queue is ignored"));
  }
  undecodable_.erase(queue->name());
  const std::string key = queue->name();
  decoded_[key] = *std::move(queue);
  RebuildLocked();
  if (auto it = conflicts_.find(key); it != conflicts_.end()) {
    return absl::InvalidArgumentError(it->second);
  }
  return absl::OkStatus();
}

void QueueStore::Delete(std::string_view name) {
  absl::MutexLock lock(&mu_);
  decoded_.erase(std::string(name));
  undecodable_.erase(std::string(name));
  RebuildLocked();
}

void QueueStore::RebuildLocked() {
  std::vector<Queue> queues;
  queues.reserve(decoded_.size());
  for (const auto& [name, q] : decoded_) queues.push_back(q);
  auto dir = std::make_shared<QueueDirectory>();
  conflicts_.clear();
  std::vector<std::string> errors = dir->SetSkippingConflicts(std::move(queues));
  // Name each left-out queue's problem under its name ("Queue NAME: ...").
  for (std::string& e : errors) {
    const size_t start = std::string_view("Queue ").size();
    const size_t end = e.find(':', start);
    conflicts_[e.substr(start, end == std::string::npos ? std::string::npos : end - start)] =
        std::move(e);
  }
  directory_ = std::move(dir);
}

std::shared_ptr<const QueueDirectory> QueueStore::directory() const {
  absl::MutexLock lock(&mu_);
  return directory_;
}

std::map<std::string, std::string> QueueStore::Problems() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, std::string> out(conflicts_.begin(), conflicts_.end());
  for (const auto& [name, why] : undecodable_) out[name] = why;
  return out;
}

}  // namespace tessel
