// StatusReporter: events and PodScheduled conditions for scheduling outcomes.
#include "scheduler/kube/status_reporter.h"

#include "nlohmann/json.hpp"
#include "scheduler/util/api_time.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

std::string_view ConditionReason(FailureKind kind) {
  switch (kind) {
    case FailureKind::kUnschedulable: return "Unschedulable";
    // Not "Unschedulable": Cluster Autoscaler and Karpenter add nodes only for that reason,
    // and more nodes cannot lift a quota.
    case FailureKind::kQuotaExceeded: return "QuotaExceeded";
    // Neither: the pods' capacity is asked for by a ProvisioningRequest.
    case FailureKind::kWaitingForProvisioning: return "WaitingForProvisioning";
    case FailureKind::kError:
    case FailureKind::kBindFailed: return "SchedulerError";
  }
  return "SchedulerError";
}

StatusReporter::StatusReporter(KubeClient* client, EventRecorder* events,
                               StatusReporterOptions options)
    : client_(client), events_(events), options_(std::move(options)) {
  queue_ = std::make_unique<KeyedQueue>("status", options_.queue,
                                        [this](const std::string& key) { return Write(key); });
}

StatusReporter::~StatusReporter() { Shutdown(); }

void StatusReporter::Shutdown() { queue_->Shutdown(); }

void StatusReporter::PodScheduled(const Pod& pod, const std::string& node) {
  Bound(pod.Key());
  events_->Record(pod, "Normal", "Scheduled",
                  StrCat("Successfully assigned ", pod.Key(), " to ", node));
}

void StatusReporter::PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) {
  events_->Record(pod, "Warning", "FailedScheduling", message);
  Want(pod, PodCondition{.reason = std::string(ConditionReason(kind)),
                         .message = message,
                         .nominated_node = pod.nominated_node_name});
}

void StatusReporter::PodSchedulingGated(const Pod& pod) {
  Want(pod, PodCondition{.reason = "SchedulingGated",
                         .message = "Scheduling is blocked due to non-empty scheduling gates"});
}

void StatusReporter::NominationCleared(const Pod& pod) {
  PodCondition condition;
  {
    absl::MutexLock lock(&mu_);
    auto it = pods_.find(pod.Key());
    if (it != pods_.end() && it->second.uid == pod.meta.uid && it->second.wanted.has_value()) {
      condition = *it->second.wanted;
    }
  }
  condition.nominated_node.clear();
  Want(pod, std::move(condition));
}

void StatusReporter::Want(const Pod& pod, PodCondition condition) {
  {
    absl::MutexLock lock(&mu_);
    PodRecord& r = pods_[pod.Key()];
    r.namespace_ = pod.meta.namespace_;
    r.name = pod.meta.name;
    r.uid = pod.meta.uid;
    r.wanted = std::move(condition);
    if (r.written == r.wanted) return;  // the server has it already
  }
  queue_->Add(pod.Key());
}

void StatusReporter::Bound(const std::string& key) {
  {
    absl::MutexLock lock(&mu_);
    pods_.erase(key);
  }
  queue_->Remove(key);
}

void StatusReporter::Forget(const std::string& key) {
  Bound(key);
  events_->ForgetPod(key);
}

std::optional<PodCondition> StatusReporter::WrittenCondition(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(key);
  return it == pods_.end() ? std::nullopt : it->second.written;
}

KeyedQueue::Outcome StatusReporter::Write(const std::string& key) {
  PodRecord r;
  {
    absl::MutexLock lock(&mu_);
    auto it = pods_.find(key);
    if (it == pods_.end() || !it->second.wanted.has_value()) return KeyedQueue::Outcome::kDone;
    if (it->second.written == it->second.wanted) return KeyedQueue::Outcome::kDone;
    r = it->second;
  }
  const PodCondition& want = *r.wanted;
  // nominatedNodeName: the node a preemption chose (null removes it), as kube-scheduler sets it
  // with the condition.
  json patch = {{"status",
                 {{"nominatedNodeName",
                   want.nominated_node.empty() ? json(nullptr) : json(want.nominated_node)}}}};
  // Strategic merge: conditions merge by "type", so other conditions stay. The UID makes the
  // patch fail (422) instead of touching a new pod that took the name.
  if (!want.reason.empty()) {
    patch["status"]["conditions"] = json::array({{{"type", "PodScheduled"},
                                                  {"status", "False"},
                                                  {"reason", want.reason},
                                                  {"message", want.message},
                                                  {"lastProbeTime", nullptr},
                                                  {"lastTransitionTime", FormatRfc3339(absl::Now())}}});
  }
  if (!r.uid.empty()) patch["metadata"] = {{"uid", r.uid}};
  absl::StatusOr<Response> resp =
      client_->Do({.method = "PATCH",
                   .path = StrCat("/api/v1/namespaces/", r.namespace_, "/pods/", r.name, "/status"),
                   .body = patch.dump(),
                   .content_type = std::string(kStrategicMergePatch),
                   .write_budget = options_.write_budget});
  if (!resp.ok()) {
    // Not the leader (FailedPrecondition): nothing written, nothing claimed; the next leader
    // reports the pod itself.
    if (absl::IsFailedPrecondition(resp.status())) return KeyedQueue::Outcome::kDone;
    spdlog::warn("PodScheduled condition of pod {}: {}; will retry", key, resp.status().message());
    return KeyedQueue::Outcome::kRetry;
  }
  if (resp->code == 404) {  // the pod is gone
    absl::MutexLock lock(&mu_);
    pods_.erase(key);
    return KeyedQueue::Outcome::kDone;
  }
  if (!resp->ok()) {
    if (IsRetryableCode(resp->code)) {
      spdlog::warn("PodScheduled condition of pod {}: HTTP {}; will retry", key, resp->code);
      return KeyedQueue::Outcome::kRetry;
    }
    spdlog::error("PodScheduled condition of pod {} not written: HTTP {}: {}", key, resp->code,
                  resp->ErrorMessage());
    return KeyedQueue::Outcome::kGiveUp;
  }
  written_.fetch_add(1);
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(key);
  if (it != pods_.end()) it->second.written = want;  // a newer wish re-queued the key
  return KeyedQueue::Outcome::kDone;
}

}  // namespace tessel::kube
