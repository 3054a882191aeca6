// The Queue objects as the informer (live) or a snapshot (replay) delivers them, one at a time,
// turned into QueueDirectory snapshots the scheduling cycle reads. Thread-safe: informers write,
// the scheduling thread and metrics read.
//
// A Queue that does not decode, or that claims a namespace another queue (earlier by name)
// already has, is left out with an error naming the object and the field; every other queue
// stays in force. A later good version of the object replaces the error.
//
//   QueueStore store;
//   absl::Status st = store.Apply(json);          // error: "Queue team-a: spec.weight: ..."
//   std::shared_ptr<const QueueDirectory> dir = store.directory();  // never null
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "scheduler/quota/queue.h"

namespace tessel {

class QueueStore {
 public:
  QueueStore();

  // Adds or replaces the Queue `object`. An object that does not decode, or whose namespaces
  // clash with another queue's, is an error naming it and the field; the queue is then ignored
  // (its previous version too) until a good version arrives.
  absl::Status Apply(const nlohmann::json& object);
  void Delete(std::string_view name);

  std::shared_ptr<const QueueDirectory> directory() const;
  // The current problem of every ignored Queue, by name.
  std::map<std::string, std::string> Problems() const;

 private:
  void RebuildLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, Queue, std::less<>> decoded_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string, std::less<>> undecodable_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> conflicts_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const QueueDirectory> directory_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel
