// Queue status writes from a worker thread (see queue_status.h).
#include "scheduler/kube/queue_status.h"

#include <algorithm>

#include "scheduler/util/api_time.h"
#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

namespace {

// Every resource of the nominal quota (so the columns exist at 0) and every one in `amounts`.
json QuantityMap(const Resources& nominal, const Resources& amounts) {
  json out = json::object();
  for (const auto& [name, amount] : nominal.Entries()) out[name] = FormatResourceQuantity(name, 0);
  for (const auto& [name, amount] : amounts.Entries()) out[name] = FormatResourceQuantity(name, amount);
  return out;
}

std::string StatusPath(std::string_view plural, const std::string& name) {
  return StrCat("/apis/tessel.io/v1alpha1/", plural, "/", name, "/status");
}

const CohortReport* FindCohort(const QueueStatusView& view, std::string_view name) {
  for (const CohortReport& c : view.cohorts) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// FlavorsReady of a queue with spec.resourceGroups: False while a flavor it lists does not
// exist (FlavorNotFound) or does not decode (FlavorInvalid), naming each.
std::optional<QueueCondition> FlavorsCondition(const QueueStatusView& view, const std::string& name) {
  if (view.directory == nullptr) return std::nullopt;
  const Queue* queue = view.directory->Find(name);
  if (queue == nullptr || !queue->flavored()) return std::nullopt;
  std::vector<std::string> missing, invalid;
  for (const ResourceGroup& group : queue->resource_groups) {
    for (const std::string& flavor : group.flavors) {
      if (auto it = view.invalid_flavors.find(flavor); it != view.invalid_flavors.end()) {
        invalid.push_back(it->second);
      } else if (!view.directory->flavors().contains(flavor)) {
        missing.push_back(StrCat("ResourceFlavor ", flavor, " does not exist: the queue's quota in it cannot be used"));
      }
    }
  }
  if (missing.empty() && invalid.empty()) {
    return QueueCondition{"FlavorsReady", "True", "Ready", "Every ResourceFlavor it lists exists"};
  }
  std::vector<std::string> all = missing;
  all.insert(all.end(), invalid.begin(), invalid.end());
  return QueueCondition{"FlavorsReady", "False", missing.empty() ? "FlavorInvalid" : "FlavorNotFound",
                        StrJoin(all, "; ")};
}

}  // namespace

json QueueStatusFields(const QueueStatusView& view, const std::string& name, absl::Time now,
                       std::vector<QueueCondition>* conditions) {
  conditions->clear();
  const QueueReport* report = nullptr;
  for (const QueueReport& r : view.reports) {
    if (r.name == name) report = &r;
  }
  const auto bad = view.invalid.find(name);
  if (bad != view.invalid.end() && report == nullptr) {  // held: its pods wait
    conditions->push_back({"Active", "False", "InvalidSpec", bad->second});
    return json::object();
  }
  if (report == nullptr) return nullptr;
  json status{{"pendingPods", report->pending_pods},
              {"admittedPods", report->admitted_pods},
              {"usage", QuantityMap(report->nominal, report->usage)},
              {"borrowed", QuantityMap(report->nominal, report->borrowed)},
              {"lent", QuantityMap(report->nominal, report->lent)}};
  if (!report->flavors.empty()) {
    json flavors = json::array();
    for (const FlavorReport& f : report->flavors) {
      flavors.push_back({{"name", f.name},
                         {"usage", QuantityMap(f.nominal, f.usage)},
                         {"borrowed", QuantityMap(f.nominal, f.borrowed)},
                         {"lent", QuantityMap(f.nominal, f.lent)}});
    }
    status["flavorsUsage"] = std::move(flavors);
  }
  if (auto d = view.decayed.find(name); d != view.decayed.end()) {
    status["fairSharing"] = DecayedUsageStatus(d->second);
  }
  if (report->oldest_pending.has_value()) {
    status["oldestPendingSince"] = FormatRfc3339(*report->oldest_pending);
    status["oldestPendingWaitSeconds"] =
        std::max<int64_t>(0, absl::ToInt64Seconds(now - *report->oldest_pending));
  } else {
    status["oldestPendingSince"] = nullptr;
    status["oldestPendingWaitSeconds"] = nullptr;
  }
  const CohortReport* parent = nullptr;
  if (view.directory != nullptr) {
    if (const Queue* q = view.directory->Find(name); q != nullptr) parent = FindCohort(view, q->cohort);
  }
  if (parent != nullptr && !parent->problem.empty()) {
    conditions->push_back({"Active", "False", "CohortInvalid",
                           StrCat(parent->problem, "; the queue is below it, so its pods wait")});
  } else if (bad != view.invalid.end()) {  // its last valid version stays in force
    conditions->push_back({"Active", "True", "InvalidSpec", bad->second});
  } else {
    conditions->push_back({"Active", "True", "Ready", "The queue is in force: its quota limits its pods"});
  }
  std::string clashes;
  for (const NamespaceConflict& c : view.conflicts) {
    if (c.refused == name) StrAppend(&clashes, clashes.empty() ? "" : "; ", c.Message());
  }
  if (clashes.empty()) {
    conditions->push_back({"Conflict", "False", "NoConflict", "Every namespace it lists is its own"});
  } else {
    conditions->push_back({"Conflict", "True", "NamespaceConflict", clashes});
  }
  if (std::optional<QueueCondition> flavors = FlavorsCondition(view, name)) conditions->push_back(*flavors);
  return status;
}

json CohortStatusFields(const QueueStatusView& view, const std::string& name,
                        std::vector<QueueCondition>* conditions) {
  conditions->clear();
  const CohortReport* c = FindCohort(view, name);
  if (c == nullptr) return nullptr;
  json status{{"subtreeQuota", QuantityMap(c->subtree, {})},
              {"usage", QuantityMap(c->subtree, c->usage)},
              {"borrowed", QuantityMap(c->subtree, c->borrowed)},
              {"lent", QuantityMap(c->subtree, c->lent)},
              {"weightedShare", c->weighted_share_milli},
              {"path", StrJoin(c->path, "/")}};
  for (const auto& [r, amount] : c->subtree.Entries()) status["subtreeQuota"][r] = FormatResourceQuantity(r, amount);
  if (!view.decayed.empty()) {  // usage decay on
    status["fairSharing"] = DecayedUsageStatus(DecayedUsageBelow(view.decayed, view.cohorts, view.reports, c->name));
  }
  if (!c->problem.empty()) {
    conditions->push_back({"Active", "False", c->defined ? "InvalidTree" : "InvalidSpec",
                           StrCat(c->problem, "; the queues below it hold their pods")});
  } else {
    conditions->push_back({"Active", "True", "Ready", "The cohort is in force: its quota flows to the queues below it"});
  }
  return status;
}

QueueStatusWriter::QueueStatusWriter(KubeClient* client, std::function<QueueStatusView()> source,
                                     QueueStatusOptions options)
    : client_(client),
      source_(std::move(source)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : &real_clock_) {}

QueueStatusWriter::~QueueStatusWriter() { Stop(); }

void QueueStatusWriter::Start() { thread_ = std::thread([this] { Run(); }); }

void QueueStatusWriter::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void QueueStatusWriter::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stopped = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      mu_.AwaitWithTimeout(absl::Condition(&stopped), options_.interval);
      if (stop_) return;
    }
    WriteOnce();
  }
}

int QueueStatusWriter::WriteOnce() {
  // Not the leader (or shutting down): nothing is computed or written.
  if (options_.write_budget && !options_.write_budget().has_value()) return 0;
  absl::MutexLock round(&round_mu_);
  const QueueStatusView view = source_();
  const absl::Time now = clock_->Now();
  std::vector<std::string> names;
  for (const QueueReport& r : view.reports) names.push_back(r.name);
  for (const auto& [name, problem] : view.invalid) {
    // One whose last valid version is in force is among the reports already.
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  // Cohorts that exist as objects (or that break the tree: one that never decoded).
  std::vector<std::string> cohorts;
  for (const CohortReport& c : view.cohorts) {
    if (c.defined || !c.problem.empty()) cohorts.push_back(c.name);
  }
  // Objects no longer in the view (deleted) are forgotten.
  std::erase_if(sent_, [&](const auto& kv) {
    const std::string& key = kv.first;
    if (key.starts_with("cohorts/")) {
      return std::find(cohorts.begin(), cohorts.end(), key.substr(8)) == cohorts.end();
    }
    return std::find(names.begin(), names.end(), key) == names.end();
  });
  int written = 0;
  auto stopped = [this] {
    absl::MutexLock lock(&mu_);
    return stop_;
  };
  for (const std::string& name : names) {
    if (stopped()) return written;
    std::vector<QueueCondition> conditions;
    json status = QueueStatusFields(view, name, now, &conditions);
    if (status.is_null()) continue;
    written += Write(name, StatusPath("queues", name), status, conditions, now) ? 1 : 0;
  }
  for (const std::string& name : cohorts) {
    if (stopped()) return written;
    std::vector<QueueCondition> conditions;
    json status = CohortStatusFields(view, name, &conditions);
    if (status.is_null()) continue;
    written += Write(StrCat("cohorts/", name), StatusPath("cohorts", name), status, conditions, now) ? 1 : 0;
  }
  return written;
}

bool QueueStatusWriter::Write(const std::string& name, const std::string& path, const json& status,
                              const std::vector<QueueCondition>& conditions, absl::Time now) {
  json key_json = status;
  key_json.erase("oldestPendingWaitSeconds");
  // The decayed usage is rewritten when it changes, not for its time alone: a queue whose
  // decayed usage stays (a steady usage) restores to the same value from an older time.
  if (key_json.contains("fairSharing")) key_json["fairSharing"].erase("decayedUsageComputedAt");
  key_json["conditions"] = json::array();
  for (const QueueCondition& c : conditions) {
    key_json["conditions"].push_back({c.type, c.status, c.reason, c.message});
  }
  const std::string key = key_json.dump();
  auto prev = sent_.find(name);
  const bool waiting = status.contains("oldestPendingSince") && !status["oldestPendingSince"].is_null();
  if (prev != sent_.end() && prev->second.key == key && (!waiting || now - prev->second.at < options_.refresh)) {
    return false;
  }
  // Conditions keep their transition time while their status stays.
  std::map<std::string, std::pair<QueueCondition, absl::Time>> transitions;
  json list = json::array();
  for (const QueueCondition& c : conditions) {
    absl::Time since = now;
    if (prev != sent_.end()) {
      if (auto it = prev->second.conditions.find(c.type);
          it != prev->second.conditions.end() && it->second.first.status == c.status) {
        since = it->second.second;
      }
    }
    transitions[c.type] = {c, since};
    list.push_back({{"type", c.type},
                    {"status", c.status},
                    {"reason", c.reason},
                    {"message", c.message},
                    {"lastTransitionTime", FormatRfc3339(since)}});
  }
  json patch_status = status;
  patch_status["conditions"] = list;
  // A resource no longer reported is removed (a merge patch keeps keys it does not name).
  if (prev != sent_.end()) {
    for (const char* field : {"usage", "borrowed", "lent", "subtreeQuota"}) {
      const json& before = prev->second.status.contains(field) ? prev->second.status[field] : json();
      if (!before.is_object() || !patch_status.contains(field)) continue;
      for (const auto& [resource, v] : before.items()) {
        if (!patch_status[field].contains(resource)) patch_status[field][resource] = nullptr;
      }
    }
    const json& before = prev->second.status.contains("fairSharing") ? prev->second.status["fairSharing"] : json();
    if (before.is_object() && before.contains("decayedUsage") && patch_status.contains("fairSharing")) {
      for (const auto& [resource, v] : before["decayedUsage"].items()) {
        if (!patch_status["fairSharing"]["decayedUsage"].contains(resource)) {
          patch_status["fairSharing"]["decayedUsage"][resource] = nullptr;
        }
      }
    }
  }
  absl::StatusOr<Response> r = client_->Do(Request{.method = "PATCH",
                                                   .path = path,
                                                   .body = json{{"status", patch_status}}.dump(),
                                                   .content_type = std::string(kMergePatch),
                                                   .write_budget = options_.write_budget});
  if (r.ok() && r->code == 404) {  // the object is gone
    sent_.erase(name);
    return false;
  }
  if (!r.ok() || !r->ok()) {
    spdlog::warn("{} status: {}", path,
                 r.ok() ? std::string(r->ToStatus("patch").message()) : std::string(r.status().message()));
    return false;
  }
  sent_[name] = Sent{.key = key, .at = now, .status = status, .conditions = std::move(transitions)};
  return true;
}

}  // namespace tessel::kube
