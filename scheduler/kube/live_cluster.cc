// API writes of the live scheduler.
#include "scheduler/kube/live_cluster.h"

#include <random>

#include "nlohmann/json.hpp"
#include "scheduler/kube/leader_election.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

namespace {

std::string PodPath(const Pod& pod, std::string_view sub = "") {
  std::string p = StrCat("/api/v1/namespaces/", pod.meta.namespace_, "/pods/", pod.meta.name);
  if (!sub.empty()) StrAppend(&p, "/", sub);
  return p;
}

absl::Status NotLeader() {
  return absl::UnavailableError("not the leader: this replica must not write");
}

std::string Describe(const absl::StatusOr<Response>& r) {
  return r.ok() ? StrCat("HTTP ", r->code, ": ", r->ErrorMessage()) : std::string(r.status().message());
}

}  // namespace

absl::StatusOr<std::string> DiscoverEvictionApi(KubeClient& client) {
  absl::StatusOr<Response> resp = client.Do({.path = "/apis/policy"});
  if (!resp.ok()) return resp.status();
  if (resp->code == 404) return std::string("policy/v1beta1");
  if (!resp->ok()) return resp->ToStatus("discovery GET /apis/policy");
  json group = json::parse(resp->body, nullptr, false);
  if (group.is_discarded() || !group.is_object()) {
    return absl::DataLossError("discovery GET /apis/policy: reply is not JSON");
  }
  bool v1 = false, v1beta1 = false;
  if (auto it = group.find("versions"); it != group.end() && it->is_array()) {
    for (const json& v : *it) {
      if (!v.is_object()) continue;
      const std::string gv = JsonString(v, "groupVersion");
      v1 |= gv == "policy/v1";
      v1beta1 |= gv == "policy/v1beta1";
    }
  }
  if (v1) return std::string("policy/v1");
  if (v1beta1) return std::string("policy/v1beta1");
  return absl::NotFoundError("the server serves no Eviction API (policy/v1 or policy/v1beta1)");
}

LiveCluster::LiveCluster(KubeClient* client, WorkerPool* event_pool, LiveClusterOptions options)
    : client_(client),
      event_pool_(event_pool),
      options_(std::move(options)),
      event_limiter_(options_.events_qps, options_.events_burst) {}

absl::Status LiveCluster::Bind(const Pod& pod, const std::string& node) {
  if (!MayWrite()) return NotLeader();
  // metadata.uid makes the bind fail if the pod was deleted and recreated under the same name.
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata",
                   {{"name", pod.meta.name}, {"namespace", pod.meta.namespace_}, {"uid", pod.meta.uid}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (pod.meta.uid.empty()) binding["metadata"].erase("uid");
  absl::StatusOr<Response> resp =
      client_->Do({.method = "POST",
                   .path = PodPath(pod, "binding"),
                   .body = binding.dump(),
                   .may_send = [this] { return MayWrite(); }});
  if (!resp.ok()) return resp.status();
  if (resp->ok()) {
    binds_.fetch_add(1);
    spdlog::info("bound pod {} to node {}", pod.Key(), node);
    return absl::OkStatus();
  }
  if (resp->code == 409) {
    // Already bound. Ours (a retried request whose first answer was lost) or someone else's?
    absl::StatusOr<Response> got = client_->Do({.path = PodPath(pod)});
    if (got.ok() && got->ok()) {
      json current = json::parse(got->body, nullptr, false);
      const std::string bound_to =
          current.is_object() && current.contains("spec") ? JsonString(current["spec"], "nodeName") : "";
      if (bound_to == node) {
        binds_.fetch_add(1);
        spdlog::info("bound pod {} to node {} (an earlier attempt landed)", pod.Key(), node);
        return absl::OkStatus();
      }
      if (!bound_to.empty()) {
        bind_conflicts_.fetch_add(1);
        absl::MutexLock lock(&mu_);
        if (bound_elsewhere_.insert(pod.Key()).second) bound_elsewhere_order_.push_back(pod.Key());
        while (bound_elsewhere_order_.size() > 10000) {
          bound_elsewhere_.erase(bound_elsewhere_order_.front());
          bound_elsewhere_order_.pop_front();
        }
        spdlog::warn("bind of pod {} to {}: already bound to {}", pod.Key(), node, bound_to);
        return absl::AlreadyExistsError(
            StrCat("pod ", pod.Key(), " is already bound to node ", bound_to));
      }
    }
    bind_conflicts_.fetch_add(1);
  }
  spdlog::warn("bind of pod {} to {} failed: {}", pod.Key(), node, resp->ErrorMessage());
  return resp->ToStatus(StrCat("bind pod ", pod.Key(), " to node ", node));
}

bool LiveCluster::FoundBoundElsewhere(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  return bound_elsewhere_.contains(key);
}

void LiveCluster::ForgetPod(const std::string& key) {
  absl::MutexLock lock(&mu_);
  events_.erase(key);
}

absl::Status LiveCluster::PatchAnnotations(const Pod& pod, const StringMap& annotations) {
  if (!MayWrite()) return NotLeader();
  json patch = {{"metadata", {{"annotations", json::object()}}}};
  for (const auto& [k, v] : annotations) patch["metadata"]["annotations"][k] = v;
  absl::StatusOr<Response> resp = client_->Do({.method = "PATCH",
                                               .path = PodPath(pod),
                                               .body = patch.dump(),
                                               .content_type = std::string(kMergePatch),
                                               .may_send = [this] { return MayWrite(); }});
  if (!resp.ok()) return resp.status();
  return resp->ToStatus(StrCat("annotate pod ", pod.Key()));
}

absl::Status LiveCluster::Evict(const Pod& pod, std::string_view reason) {
  if (!MayWrite()) return NotLeader();
  json eviction = {{"apiVersion", options_.eviction_api},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", pod.meta.name}, {"namespace", pod.meta.namespace_}}}};
  if (!pod.meta.uid.empty()) {
    eviction["deleteOptions"] = {{"preconditions", {{"uid", pod.meta.uid}}}};
  }
  absl::StatusOr<Response> resp =
      client_->Do({.method = "POST",
                   .path = PodPath(pod, "eviction"),
                   .body = eviction.dump(),
                   .may_send = [this] { return MayWrite(); }});
  if (!resp.ok()) return resp.status();
  if (resp->ok() || resp->code == 404) {
    evictions_.fetch_add(1);
    spdlog::info("evicted pod {}: {}", pod.Key(), reason);
    return absl::OkStatus();
  }
  // 429: a PodDisruptionBudget forbids it now.
  return resp->ToStatus(StrCat("evict pod ", pod.Key()));
}

void LiveCluster::RecordEvent(const Pod& pod, std::string_view type, std::string_view reason,
                              std::string_view message) {
  if (!MayWrite()) return;
  const absl::Time now = absl::Now();
  std::string bump_name;
  int64_t count = 1;
  {
    absl::MutexLock lock(&mu_);
    EventState& s = events_[pod.Key()];
    if (s.reason == reason && s.message == message) {
      if (now - s.last_posted < options_.same_event_interval) {
        events_suppressed_.fetch_add(1);
        return;  // deduplicated
      }
      bump_name = s.event_name;
      count = ++s.count;
    } else {
      s.reason = std::string(reason);
      s.message = std::string(message);
      s.count = 1;
      s.event_name.clear();
    }
    if (!event_limiter_.TryTake(now)) {
      events_suppressed_.fetch_add(1);
      return;  // rate-limited
    }
    s.last_posted = now;
  }
  if (!bump_name.empty()) {
    // A repeat: bump count and lastTimestamp on the existing Event, as client-go's aggregator.
    event_pool_->Submit([this, ns = pod.meta.namespace_, name = bump_name, count, now] {
      json patch = {{"count", count}, {"lastTimestamp", FormatRfc3339(now)}};
      auto resp = client_->Do({.method = "PATCH",
                               .path = StrCat("/api/v1/namespaces/", ns, "/events/", name),
                               .body = patch.dump(),
                               .content_type = std::string(kMergePatch)});
      if (resp.ok() && resp->ok()) events_posted_.fetch_add(1);
    });
    return;
  }
  event_pool_->Submit([this, pod, type = std::string(type), reason = std::string(reason),
                       message = std::string(message)]() mutable {
    PostEvent(pod, std::move(type), std::move(reason), std::move(message));
  });
}

void LiveCluster::PostEvent(const Pod& pod, std::string type, std::string reason,
                            std::string message) {
  if (!MayWrite()) return;
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const absl::Time now = absl::Now();
  // Like client-go: "<object name>.<unique hex>".
  const std::string name = fmt::format("{}.{:x}{:04x}", pod.meta.name, absl::ToUnixNanos(now),
                                       static_cast<unsigned>(rng() & 0xffff));
  if (message.size() > 1024) message.resize(1024);  // the API caps event messages
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", name}, {"namespace", pod.meta.namespace_}}},
                {"involvedObject",
                 {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"name", pod.meta.name},
                  {"namespace", pod.meta.namespace_},
                  {"uid", pod.meta.uid}}},
                {"reason", reason},
                {"message", message},
                {"type", type},
                {"source", {{"component", options_.component}}},
                {"reportingComponent", options_.component},
                {"reportingInstance", options_.identity},
                {"firstTimestamp", FormatRfc3339(now)},
                {"lastTimestamp", FormatRfc3339(now)},
                {"count", 1}};
  absl::StatusOr<Response> resp = client_->Do({.method = "POST",
                                               .path = StrCat("/api/v1/namespaces/",
                                                              pod.meta.namespace_, "/events"),
                                               .body = event.dump()});
  if (!resp.ok() || !resp->ok()) {
    spdlog::warn("event {} for pod {}: {}", reason, pod.Key(), Describe(resp));
    return;
  }
  events_posted_.fetch_add(1);
  absl::MutexLock lock(&mu_);
  auto it = events_.find(pod.Key());
  if (it != events_.end() && it->second.reason == reason && it->second.message == message) {
    it->second.event_name = name;
  }
}

absl::Status LiveCluster::SetUnschedulableCondition(const Pod& pod, std::string_view reason,
                                                    std::string_view message) {
  if (!MayWrite()) return NotLeader();
  json condition = {{"type", "PodScheduled"},
                    {"status", "False"},
                    {"reason", reason},
                    {"message", message},
                    {"lastProbeTime", nullptr},
                    {"lastTransitionTime", FormatRfc3339(absl::Now())}};
  // Strategic merge: conditions merge by "type", so other conditions stay.
  json patch = {{"status", {{"conditions", json::array({condition})}}}};
  absl::StatusOr<Response> resp = client_->Do({.method = "PATCH",
                                               .path = PodPath(pod, "status"),
                                               .body = patch.dump(),
                                               .content_type = std::string(kStrategicMergePatch),
                                               .may_send = [this] { return MayWrite(); }});
  if (!resp.ok()) return resp.status();
  if (resp->code == 404) return absl::OkStatus();  // the pod is gone
  return resp->ToStatus(StrCat("set PodScheduled condition of pod ", pod.Key()));
}

void StatusReporter::PodScheduled(const Pod& pod, const std::string& node) {
  Bound(pod.Key());
  cluster_->RecordEvent(pod, "Normal", "Scheduled",
                        StrCat("Successfully assigned ", pod.Key(), " to ", node));
}

void StatusReporter::PodUnschedulable(const Pod& pod, FailureKind /*kind*/,
                                      const std::string& message) {
  if (cluster_->FoundBoundElsewhere(pod.Key())) return;  // it is bound: nothing to report
  const bool error = message.rfind("binding rejected", 0) == 0;
  if (!cluster_->MayWrite()) return;
  cluster_->RecordEvent(pod, "Warning", "FailedScheduling", message);
  {
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = condition_.try_emplace(pod.Key(), message);
    if (!inserted) {
      if (it->second == message) return;  // unchanged: no write
      it->second = message;
    }
  }
  pool_->Submit([this, pod, message, error] {
    if (Placed(pod.Key())) return;  // bound meanwhile: the condition is True now
    absl::Status st =
        cluster_->SetUnschedulableCondition(pod, error ? "SchedulerError" : "Unschedulable", message);
    if (!st.ok()) {
      spdlog::warn("{}", st.message());
      absl::MutexLock lock(&mu_);
      condition_.erase(pod.Key());  // try again next time
    }
  });
}

void StatusReporter::Bound(const std::string& key) {
  absl::MutexLock lock(&mu_);
  condition_.erase(key);
  placed_.insert(key);
}

bool StatusReporter::Placed(const std::string& key) {
  absl::MutexLock lock(&mu_);
  return placed_.contains(key);
}

void StatusReporter::Forget(const std::string& key) {
  {
    absl::MutexLock lock(&mu_);
    condition_.erase(key);
    placed_.erase(key);
  }
  cluster_->ForgetPod(key);
}

}  // namespace tessel::kube
