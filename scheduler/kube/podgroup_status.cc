// PodGroup status writes from a worker thread (see podgroup_status.h).
#include "scheduler/kube/podgroup_status.h"

#include "scheduler/gang/gang_api.h"
#include "scheduler/kube/informer.h"
#include "scheduler/util/api_time.h"
#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

json PodGroupStatusPatch(const gang::GangStatusUpdate& u) {
  json condition{{"type", "Scheduled"},
                 {"status", u.condition ? "True" : "False"},
                 {"reason", gang::ReasonName(u.reason)},
                 {"message", u.message},
                 {"lastTransitionTime", FormatRfc3339(u.time)}};
  json status{{"phase", gang::PhaseName(u.phase)}, {"conditions", json::array({condition})}};
  if (u.reason != gang::GangReason::kBindFailed) status["scheduled"] = u.scheduled;
  status["running"] = u.running;
  status["succeeded"] = u.succeeded;
  status["failed"] = u.failed;
  return json{{"status", status}};
}

namespace {

// kube-scheduler's reasons where they apply (Scheduled, Unschedulable, SchedulerError), Tessel's
// own for the states it has no name for (WaitingForMembers, WaitingForProvisioning, ...).
std::string_view UpstreamReason(gang::GangReason reason) {
  switch (reason) {
    case gang::GangReason::kScheduleTimeout:
      return "Unschedulable";
    case gang::GangReason::kBindFailed:
      return "SchedulerError";
    default:
      return gang::ReasonName(reason);
  }
}

// The condition of `type` in `conditions`, or nullptr.
const json* FindCondition(const json& conditions, std::string_view type) {
  if (!conditions.is_array()) return nullptr;
  for (const json& c : conditions) {
    if (c.is_object() && JsonString(c, "type") == type) return &c;
  }
  return nullptr;
}

}  // namespace

std::optional<json> UpstreamPodGroupStatusPatch(const gang::GangStatusUpdate& u, const json& current) {
  static const json kNone = json::array();
  const json* status = current.is_object() && current.contains("status") ? &current["status"] : nullptr;
  const json& conditions = status != nullptr && status->is_object() && status->contains("conditions")
                               ? (*status)["conditions"]
                               : kNone;
  std::optional<int64_t> generation;
  if (current.is_object() && current.contains("metadata") && current["metadata"].is_object()) {
    const json& meta = current["metadata"];
    if (auto it = meta.find("generation"); it != meta.end() && it->is_number_integer()) generation = it->get<int64_t>();
  }
  json out = json::array();
  // `want` (type, status, reason, message) unless the server has it already; the transition
  // time moves only when the status does.
  auto put = [&](std::string_view type, std::string_view st, std::string_view reason, const std::string& message) {
    const json* have = FindCondition(conditions, type);
    if (have != nullptr && JsonString(*have, "status") == st && JsonString(*have, "reason") == reason &&
        JsonString(*have, "message") == message) {
      return;
    }
    json c{{"type", type}, {"status", st}, {"reason", reason}, {"message", message}};
    c["lastTransitionTime"] =
        have != nullptr && JsonString(*have, "status") == st ? json(JsonString(*have, "lastTransitionTime")) : json(FormatRfc3339(u.time));
    if (generation.has_value()) c["observedGeneration"] = *generation;
    out.push_back(std::move(c));
  };
  const json* scheduled = FindCondition(conditions, gang::kInitiallyScheduledCondition);
  const bool was_scheduled = scheduled != nullptr && JsonString(*scheduled, "status") == "True";
  // Once True it stays True (upstream's rule): later members and evictions do not undo it.
  if (u.condition || !was_scheduled) {
    put(gang::kInitiallyScheduledCondition, u.condition ? "True" : "False", UpstreamReason(u.reason), u.message);
  }
  if (!u.unsupported.empty()) {
    put(gang::kUnsupportedCondition, "True", "NotHonoured", StrJoin(u.unsupported, "; "));
  }
  if (out.empty()) return std::nullopt;
  return json{{"status", {{"conditions", std::move(out)}}}};
}

std::string PodGroupStatusWriter::StatusPath(const gang::GangId& id) const {
  if (id.kind == gang::GangKind::kPodGroup) {
    return StrCat("/apis/", gang::kPodGroupApiVersion, "/namespaces/", id.namespace_, "/podgroups/", id.name,
                  "/status");
  }
  const std::string& api = options_.scheduling_pod_group_api;
  if (id.kind == gang::GangKind::kSchedulingPodGroup &&
      (api == gang::kSchedulingPodGroupV1beta1 || api == gang::kSchedulingPodGroupV1alpha3)) {
    return StrCat("/apis/", api, "/namespaces/", id.namespace_, "/podgroups/", id.name, "/status");
  }
  return "";
}

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
  const std::string path = StatusPath(id);
  if (path.empty()) return;
  absl::MutexLock lock(&mu_);
  pending_.erase(path);
  sent_.erase(path);
}

void PodGroupStatusWriter::GangStatusChanged(const gang::GangId& id,
                                             const gang::GangStatusUpdate& update) {
  std::string path = StatusPath(id);
  if (path.empty()) return;  // a Workload or a Job: no status of ours
  absl::MutexLock lock(&mu_);
  if (stop_) return;
  pending_[std::move(path)] = Pending{id, update};
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
      if (item.id.kind == gang::GangKind::kSchedulingPodGroup) {
        WriteUpstream(path, update);
        continue;
      }
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

void PodGroupStatusWriter::WriteUpstream(const std::string& path, const gang::GangStatusUpdate& update) {
  // The object itself (RBAC grants get on podgroups; the status subresource only patch).
  constexpr std::string_view kStatus = "/status";
  absl::StatusOr<Response> got = client_->Do(Request{.path = path.substr(0, path.size() - kStatus.size())});
  if (got.ok() && got->code == 404) return;  // the group is gone
  if (!got.ok() || !got->ok()) {
    spdlog::warn("PodGroup status {}: {}", path,
                 got.ok() ? std::string(got->ToStatus("get").message()) : std::string(got.status().message()));
    return;
  }
  const json current = json::parse(got->body, nullptr, false);
  std::optional<json> patch = UpstreamPodGroupStatusPatch(update, current);
  if (!patch.has_value()) return;  // the server has it already
  absl::StatusOr<Response> r = client_->Do(Request{.method = "PATCH",
                                                    .path = path,
                                                    .body = patch->dump(),
                                                    .content_type = std::string(kStrategicMergePatch),
                                                    .write_budget = options_.write_budget});
  if (r.ok() && (r->ok() || r->code == 404)) return;
  spdlog::warn("PodGroup status {}: {}", path,
               r.ok() ? std::string(r->ToStatus("patch").message()) : std::string(r.status().message()));
}

}  // namespace tessel::kube
