// PodGroup status writes from a worker thread (see podgroup_status.h).
#include "scheduler/kube/podgroup_status.h"

#include "scheduler/kube/informer.h"
#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

json PodGroupStatusPatch(const gang::GangStatusUpdate& u) {
  json condition{{"type", "Scheduled"},
                 {"status", u.condition ? "True" : "False"},
                 {"reason", gang::ReasonName(u.reason)},
                 {"message", u.message},
                 {"lastTransitionTime", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", u.time, absl::UTCTimeZone())}};
  json status{{"phase", gang::PhaseName(u.phase)}, {"conditions", json::array({condition})}};
  if (u.reason != gang::GangReason::kBindFailed) status["scheduled"] = u.scheduled;
  status["running"] = u.running;
  status["succeeded"] = u.succeeded;
  status["failed"] = u.failed;
  return json{{"status", status}};
}

namespace {

std::string StatusPath(const gang::GangId& id) {
  return StrCat("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/", id.namespace_, "/podgroups/",
                id.name, "/status");
}

}  // namespace

PodGroupStatusWriter::PodGroupStatusWriter(KubeClient* client, PodGroupStatusOptions options)
    : client_(client), options_(std::move(options)), thread_([this] { Run(); }) {}

PodGroupStatusWriter::~PodGroupStatusWriter() { Stop(); }

void PodGroupStatusWriter::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

size_t PodGroupStatusWriter::remembered() const {
  absl::MutexLock lock(&mu_);
  return sent_.size();
}

void PodGroupStatusWriter::GangForgotten(const gang::GangId& id) {
  if (id.kind != gang::GangKind::kPodGroup) return;
  const std::string path = StatusPath(id);
  absl::MutexLock lock(&mu_);
  pending_.erase(path);
  sent_.erase(path);
}

void PodGroupStatusWriter::GangStatusChanged(const gang::GangId& id,
                                             const gang::GangStatusUpdate& update) {
  if (id.kind != gang::GangKind::kPodGroup) return;  // only the CRD has a status we own
  absl::MutexLock lock(&mu_);
  if (stop_) return;
  pending_[StatusPath(id)] = Pending{id, update};
}

absl::Status PodGroupStatusWriter::CountMembers(const gang::GangId& id,
                                                gang::GangStatusUpdate& update) {
  int64_t running = 0, succeeded = 0, failed = 0;
  std::string next;  // the continue token of the next page
  do {
    std::string path = StrCat("/api/v1/namespaces/", id.namespace_, "/pods?labelSelector=",
                              "scheduling.x-k8s.io%2Fpod-group%3D", id.name, "&limit=", options_.page_size);
    if (!next.empty()) path += StrCat("&continue=", UrlEncode(next));
    absl::StatusOr<Response> r = client_->Do(Request{.path = path});
    if (!r.ok()) return r.status();
    if (!r->ok()) return r->ToStatus(StrCat("list the pods of ", id.Describe()));
    const json list = json::parse(r->body, nullptr, false);
    if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) {
      return absl::DataLossError(StrCat("list the pods of ", id.Describe(), ": not a list"));
    }
    for (const json& pod : list["items"]) {
      const json* status = pod.is_object() && pod.contains("status") ? &pod["status"] : nullptr;
      const std::string phase = status != nullptr ? JsonString(*status, "phase") : "";
      running += phase == "Running";
      succeeded += phase == "Succeeded";
      failed += phase == "Failed";
    }
    next = list.contains("metadata") ? JsonString(list["metadata"], "continue") : "";
  } while (!next.empty());
  update.running = running;
  update.succeeded = succeeded;
  update.failed = failed;
  gang::DerivePhase(update, update.min_member);
  return absl::OkStatus();
}

void PodGroupStatusWriter::Run() {
  while (true) {
    std::map<std::string, Pending> batch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !pending_.empty(); };
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(1));
      if (stop_) return;
      batch.swap(pending_);
    }
    for (auto& [path, item] : batch) {
      // Not the leader (or shutting down): nothing is read or written; the next change of the
      // group, once this replica leads, brings a fresh update.
      if (options_.write_budget && !options_.write_budget().has_value()) continue;
      {
        absl::MutexLock lock(&mu_);
        if (stop_) return;
      }
      gang::GangStatusUpdate& update = item.update;
      // Without the count the core's own (the pods it still sees) stands.
      if (absl::Status st = CountMembers(item.id, update); !st.ok()) {
        spdlog::warn("PodGroup status {}: {}", path, st.message());
      }
      json patch = PodGroupStatusPatch(update);
      // The same status again (only the time moved) is not worth a write.
      json same = patch;
      same["status"]["conditions"][0].erase("lastTransitionTime");
      const std::string key = same.dump();
      {
        absl::MutexLock lock(&mu_);
        if (auto it = sent_.find(path); it != sent_.end() && it->second == key) continue;
      }
      absl::StatusOr<Response> r = client_->Do(Request{.method = "PATCH",
                                                        .path = path,
                                                        .body = patch.dump(),
                                                        .content_type = std::string(kMergePatch),
                                                        .write_budget = options_.write_budget});
      if (r.ok() && r->code == 404) {  // the group is gone
        absl::MutexLock lock(&mu_);
        sent_.erase(path);
        continue;
      }
      if (!r.ok() || !r->ok()) {
        spdlog::warn("PodGroup status {}: {}", path,
                     r.ok() ? std::string(r->ToStatus("patch").message()) : std::string(r.status().message()));
        continue;
      }
      absl::MutexLock lock(&mu_);
      sent_[path] = key;
    }
  }
}

}  // namespace tessel::kube
