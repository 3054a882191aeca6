// EventRecorder: correlation of identical events and their writes.
#include "scheduler/kube/event_recorder.h"

#include <random>

#include "nlohmann/json.hpp"
#include "scheduler/util/api_time.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

namespace {

constexpr char kSep = '\x1f';
constexpr size_t kMaxMessage = 1024;  // the API caps event messages
constexpr int64_t kPruneEvery = 1024;

// Where an object's Events go: its namespace, or "default" for a cluster-scoped object.
std::string EventNamespace(const ObjectReference& object) {
  return object.namespace_.empty() ? "default" : object.namespace_;
}

// "Pod ns/name", "Queue /name": one key per object, a pod's from its own key (ForgetPod).
std::string ObjectKey(std::string_view kind, std::string_view namespace_and_name) {
  return StrCat(kind, " ", namespace_and_name);
}
std::string ObjectKey(const ObjectReference& object) {
  return ObjectKey(object.kind, StrCat(object.namespace_, "/", object.name));
}

std::string EventKey(std::string_view object_key, std::string_view type, std::string_view reason,
                     std::string_view message) {
  return StrCat(object_key, std::string_view(&kSep, 1), type, std::string_view(&kSep, 1), reason,
                std::string_view(&kSep, 1), message);
}

std::string NewEventName(const std::string& object_name) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  // Like client-go: "<object name>.<unique hex>".
  return fmt::format("{}.{:x}{:04x}", object_name, absl::ToUnixNanos(absl::Now()),
                     static_cast<unsigned>(rng() & 0xffff));
}

}  // namespace

EventRecorder::EventRecorder(KubeClient* client, EventRecorderOptions options)
    : client_(client), options_(std::move(options)) {
  KeyedQueueOptions q = options_.queue;
  q.threads = options_.threads;
  queue_ = std::make_unique<KeyedQueue>("events", q,
                                        [this](const std::string& key) { return Write(key); });
}

EventRecorder::~EventRecorder() { Shutdown(); }

void EventRecorder::Shutdown() { queue_->Shutdown(); }

void EventRecorder::Record(const ObjectReference& object, std::string_view type,
                           std::string_view reason, std::string_view message) {
  if (message.size() > kMaxMessage) message = message.substr(0, kMaxMessage);
  const absl::Time now = absl::Now();
  const std::string object_key = ObjectKey(object);
  const std::string key = EventKey(object_key, type, reason, message);
  recorded_.fetch_add(1);
  {
    absl::MutexLock lock(&mu_);
    if (++records_since_prune_ >= kPruneEvery) Prune(now);
    auto [it, inserted] = entries_.try_emplace(key);
    Entry& e = it->second;
    if (!inserted && now - e.last < options_.window) {
      correlated_.fetch_add(1);
      ++e.count;
      e.last = now;
    } else {
      // New, or the last one is older than the window: a fresh Event object.
      e = Entry{.object_key = object_key,
                .object = object,
                .type = std::string(type),
                .reason = std::string(reason),
                .message = std::string(message),
                .count = 1,
                .first = now,
                .last = now};
      by_object_[object_key].insert(key);
    }
  }
  queue_->Add(key);
}

void EventRecorder::ForgetPod(const std::string& pod_key) {
  StringSet forgotten;
  {
    absl::MutexLock lock(&mu_);
    auto it = by_object_.find(ObjectKey("Pod", pod_key));
    if (it == by_object_.end()) return;
    for (const std::string& k : it->second) {
      // An event not yet written is still written (often the one saying why the pod was evicted,
      // whose deletion arrives before a loaded writer got to it); Prune forgets it once written.
      if (auto e = entries_.find(k); e != entries_.end() && e->second.written_count < e->second.count) continue;
      entries_.erase(k);
      forgotten.insert(k);
    }
    by_object_.erase(it);
  }
  for (const std::string& k : forgotten) queue_->Remove(k);
}

void EventRecorder::Prune(absl::Time now) {
  records_since_prune_ = 0;
  // Events whose window has passed and which are fully written are forgotten: a repeat
  // starts a new Event anyway. So are those of a forgotten pod (ForgetPod) that were still
  // unwritten then, once their window has passed, written or not (a write given up is not
  // retried): nothing else would ever remove them.
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Entry& e = it->second;
    if (now - e.last >= options_.window &&
        (e.written_count == e.count || !by_object_.contains(e.object_key))) {
      if (auto p = by_object_.find(e.object_key); p != by_object_.end()) {
        p->second.erase(it->first);
        if (p->second.empty()) by_object_.erase(p);
      }
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

int64_t EventRecorder::WrittenCount(const std::string& pod_key, std::string_view reason,
                                    std::string_view message) const {
  const std::string object_key = ObjectKey("Pod", pod_key);
  absl::MutexLock lock(&mu_);
  for (const auto& [key, e] : entries_) {
    if (e.object_key == object_key && e.reason == reason && e.message == message) {
      return e.written_count;
    }
  }
  return 0;
}

KeyedQueue::Outcome EventRecorder::Write(const std::string& key) {
  Entry e;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return KeyedQueue::Outcome::kDone;  // forgotten meanwhile
    if (it->second.written_count == it->second.count) return KeyedQueue::Outcome::kDone;
    e = it->second;
  }
  const std::string events_namespace = EventNamespace(e.object);
  const std::string events_path = StrCat("/api/v1/namespaces/", events_namespace, "/events");
  absl::StatusOr<Response> resp;
  bool created = false;
  std::string name = e.event_name;
  if (!name.empty()) {
    // A repeat: bump count and lastTimestamp on the existing Event, as client-go's logger.
    json patch = {{"count", e.count}, {"lastTimestamp", FormatRfc3339(e.last)}};
    resp = client_->Do({.method = "PATCH",
                        .path = StrCat(events_path, "/", name),
                        .body = patch.dump(),
                        .content_type = std::string(kMergePatch),
                        .write_budget = options_.write_budget});
    if (resp.ok() && resp->code == 404) name.clear();  // expired (event TTL): create anew
  }
  if (name.empty()) {
    name = NewEventName(e.object.name);
    json involved = {{"apiVersion", e.object.api_version},
                     {"kind", e.object.kind},
                     {"name", e.object.name},
                     {"uid", e.object.uid}};
    if (!e.object.namespace_.empty()) involved["namespace"] = e.object.namespace_;
    json event = {{"apiVersion", "v1"},
                  {"kind", "Event"},
                  {"metadata", {{"name", name}, {"namespace", events_namespace}}},
                  {"involvedObject", std::move(involved)},
                  {"reason", e.reason},
                  {"message", e.message},
                  {"type", e.type},
                  {"source", {{"component", options_.component}}},
                  {"reportingComponent", options_.component},
                  {"reportingInstance", options_.identity},
                  {"firstTimestamp", FormatRfc3339(e.first)},
                  {"lastTimestamp", FormatRfc3339(e.last)},
                  {"count", e.count}};
    resp = client_->Do({.method = "POST",
                        .path = events_path,
                        .body = event.dump(),
                        .write_budget = options_.write_budget});
    created = true;
  }
  if (!resp.ok()) {
    if (absl::IsFailedPrecondition(resp.status())) return KeyedQueue::Outcome::kDone;  // not leader
    spdlog::warn("event {} for {}: {}; will retry", e.reason, e.object_key, resp.status().message());
    return KeyedQueue::Outcome::kRetry;
  }
  if (!resp->ok()) {
    if (IsRetryableCode(resp->code)) {
      spdlog::warn("event {} for {}: HTTP {}; will retry", e.reason, e.object_key, resp->code);
      return KeyedQueue::Outcome::kRetry;
    }
    // The namespace is gone, or the server refuses it: not worth repeating.
    spdlog::warn("event {} for {} not written: HTTP {}: {}", e.reason, e.object_key, resp->code,
                 resp->ErrorMessage());
    return KeyedQueue::Outcome::kGiveUp;
  }
  (created ? created_ : bumped_).fetch_add(1);
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    it->second.event_name = name;
    it->second.written_count = e.count;  // a later bump re-queued the key (KeyedQueue)
  }
  return KeyedQueue::Outcome::kDone;
}

}  // namespace tessel::kube
