// A generic list+watch informer, as client-go's reflector: it lists a resource (in pages),
// then watches from the list's resourceVersion with bookmarks, resumes from the last
// resourceVersion when a watch ends or breaks, relists on 410 Gone, and backs off between
// failed attempts. It keeps the key, UID and resourceVersion of every object it has delivered,
// so a relist turns into exact adds, updates and deletes: nothing is lost and nothing counted
// twice. Identity is the UID: an object deleted and re-created under the same name (a
// StatefulSet pod) while the watch was down arrives as a delete of the old one and an add of
// the new one, never as an update.
//
// Memory: list pages are delivered as they arrive (one page of parsed JSON at a time, never the
// whole list), and every object is pruned before delivery: managedFields always, and whatever
// the resource's `prune` drops (fields scheduling never reads).
//
// A resource that may not exist (a CRD that is not installed) is declared `optional`: while
// the server answers 404 the informer counts as synced with no objects, and checks again every
// `absent_recheck`.
//
//   Informer pods(client, {.name = "pods", .path = "/api/v1/pods"}, &handler);
//   pods.Start();
//   while (!pods.HasSynced()) ...
//   pods.Stop();
//
// Handlers run on the informer's own thread, one event at a time.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/client.h"
#include "scheduler/util/strings.h"

namespace tessel::kube {

struct ResourceSpec {
  std::string name;            // for logs: "pods"
  std::string path;            // collection path: "/api/v1/pods"
  std::string field_selector;  // optional
  bool optional = false;       // may be absent (a CRD)
  // Drops what the handler does not read, before delivery (metadata.managedFields is always
  // dropped).
  std::function<void(nlohmann::json& object)> prune;
};

class InformerHandler {
 public:
  virtual ~InformerHandler() = default;
  virtual void OnAdd(const nlohmann::json& object) = 0;
  virtual void OnUpdate(const nlohmann::json& object) = 0;
  // `last` is the deleted object when the watch delivered it; null when a relist found it gone.
  virtual void OnDelete(const std::string& key, const nlohmann::json* last) = 0;
};

struct InformerOptions {
  int64_t page_size = 500;
  absl::Duration min_watch_timeout = absl::Minutes(5);  // watches last 1-2x this
  BackoffOptions backoff = {.initial = absl::Milliseconds(200), .max = absl::Seconds(10)};
  absl::Duration absent_recheck = absl::Seconds(30);
};

// "namespace/name", or "name" for cluster-scoped objects.
std::string ObjectKey(const nlohmann::json& object);

class Informer {
 public:
  Informer(KubeClient* client, ResourceSpec spec, InformerHandler* handler,
           InformerOptions options = {});
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void Start();
  // Asks the thread to stop (cancels a watch in progress) without waiting for it.
  void RequestStop();
  // RequestStop, then joins the thread. Idempotent.
  void Stop();

  // The first full list has been delivered (or the optional resource is absent).
  bool HasSynced() const { return synced_.load(); }
  bool absent() const { return absent_.load(); }
  const ResourceSpec& spec() const { return spec_; }
  std::string resource_version() const;
  int64_t relists() const { return relists_.load(); }
  // Watch requests sent (they leave after the client's rate limiter: at a low QPS the first
  // watches open seconds after the lists). From the first one the informer hears of every change
  // after its list, since a watch resumes from the list's resourceVersion.
  int64_t watches_sent() const { return watches_sent_.load(); }

 private:
  void Run();
  // Lists everything and reconciles the store: OK, or the reason to back off.
  absl::Status List();
  // Watches from resource_version_ until the stream ends (OK), the server says 410 Gone
  // (FailedPrecondition: relist), or something breaks.
  absl::Status Watch();
  void Deliver(const std::string& type, nlohmann::json& object);
  void Prune(nlohmann::json& object) const;
  bool Sleep(absl::Duration d);  // false when stopped meanwhile
  std::string Query(std::initializer_list<std::pair<std::string_view, std::string>> params) const;

  KubeClient* client_;
  const ResourceSpec spec_;
  InformerHandler* handler_;
  const InformerOptions options_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  absl::Notification stopped_;
  std::atomic<bool> synced_{false};
  std::atomic<bool> absent_{false};
  std::atomic<int64_t> relists_{0};
  std::atomic<int64_t> watches_sent_{0};
  mutable absl::Mutex mu_;
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  struct Seen {
    std::string uid;
    std::string resource_version;
  };
  // Key -> identity and version of every object delivered. Touched only by the informer thread.
  StringKeyedMap<Seen> store_;
};

// Percent-encodes a query parameter value.
std::string UrlEncode(std::string_view value);

}  // namespace tessel::kube
