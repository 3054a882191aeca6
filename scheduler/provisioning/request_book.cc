// The per-gang ProvisioningRequest state machine (request_book.h).
#include "scheduler/provisioning/request_book.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "scheduler/util/api_time.h"
#include "scheduler/util/strings.h"

namespace tessel::provisioning {
namespace {

// The attempt RequestName put at the end of `name` ("...-3" -> 3); 0 when there is none.
int32_t AttemptOf(std::string_view name) {
  const size_t dash = name.rfind('-');
  if (dash == std::string_view::npos) return 0;
  int32_t attempt = 0;
  const std::string_view digits = name.substr(dash + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), attempt);
  return ec == std::errc() && end == digits.data() + digits.size() ? attempt : 0;
}

}  // namespace

std::string RequestBook::Describe(const GangRequests& g) {
  return StrCat("ProvisioningRequest ", g.namespace_, "/", g.name, " (class ", g.class_name,
                g.flavors.empty() ? "" : StrCat(", flavor ", g.flavors), ")");
}

int64_t RequestBook::OpenLocked() const {
  return std::count_if(gangs_.begin(), gangs_.end(), [](const auto& kv) { return kv.second.open(); });
}

Step RequestBook::Create(const Ask& ask, GangRequests& g, std::string why) {
  Step step{.kind = Step::Kind::kCreate, .remove = std::exchange(g.stale, {})};
  if (!g.name.empty()) step.remove.push_back({g.namespace_, g.name});
  g.name.clear();
  g.phase = RequestPhase::kPending;
  g.reason.clear();
  g.message.clear();
  g.failed_at.reset();
  g.provisioned_at.reset();
  g.consumers.clear();
  g.capped = options_.max_open > 0 && OpenLocked() >= options_.max_open;
  if (g.capped) {
    step.kind = Step::Kind::kCapped;
    step.message = StrCat(why, "not asking for capacity yet: ", OpenLocked(),
                          " ProvisioningRequests are open, the most --max-open-provisioning-requests allows; "
                          "waiting for one to close");
    return step;
  }
  g.namespace_ = ask.namespace_;
  g.class_name = ask.marking.class_name;
  g.flavors = StrJoin(ask.nodes.flavors, ", ");
  g.attempt += 1;
  g.name = RequestName(ask.gang_key, g.attempt);
  step.create = RequestSpec{.namespace_ = ask.namespace_,
                            .name = g.name,
                            .gang_key = ask.gang_key,
                            .marking = ask.marking,
                            .owner = ask.owner,
                            .nodes = ask.nodes};
  step.message = StrCat(why, "waiting for ", Describe(g), " to be provisioned");
  return step;
}

Step RequestBook::Shortfall(const Ask& ask, const std::vector<std::string>& members, absl::Time now) {
  absl::MutexLock lock(&mu_);
  Step step = Decide(ask, now);
  deleting_.insert(step.remove.begin(), step.remove.end());
  GangRequests& g = gangs_[ask.gang_key];
  if (step.kind == Step::Kind::kCreate) {
    g.consumers = std::set<std::string>(members.begin(), members.end());  // annotated after the create
  } else if (step.kind != Step::Kind::kCapped && !g.name.empty()) {
    for (const std::string& m : members) {
      if (g.consumers.insert(m).second) step.consume.pods.push_back(m);
    }
    if (!step.consume.pods.empty()) {
      step.consume.request = g.name;
      step.consume.class_name = g.class_name;
    }
  }
  return step;
}

Step RequestBook::Decide(const Ask& ask, absl::Time now) {
  GangRequests& g = gangs_[ask.gang_key];
  if (g.name.empty()) return Create(ask, g, "");
  const std::string what = Describe(g);
  const std::string detail = g.reason.empty() ? std::string() : StrCat(": ", g.reason);
  const std::string said = g.message.empty() ? std::string() : StrCat(": ", g.message);
  switch (g.phase) {
    case RequestPhase::kPending:
      return {.kind = Step::Kind::kWait, .remove = std::exchange(g.stale, {}),
              .message = StrCat("waiting for ", what, " to be provisioned")};
    case RequestPhase::kProvisioned: {
      const absl::Time since = g.provisioned_at.value_or(now);
      if (now - since < options_.nodes_grace) {
        return {.kind = Step::Kind::kWait, .remove = std::exchange(g.stale, {}),
                .message = StrCat(what, " is Provisioned; waiting for its nodes")};
      }
      // Its nodes had time to come and the gang still does not fit: they may not match it.
      return {.kind = Step::Kind::kWait, .remove = std::exchange(g.stale, {}),
              .message = StrCat(what, " is Provisioned since ", FormatRfc3339(since),
                                " but the gang does not fit yet: its nodes may not have come, or may not fit the "
                                "gang (the shortfall above says why); waiting until its booking expires")};
    }
    case RequestPhase::kBookingExpired:
      return Create(ask, g, StrCat(what, " expired before the gang was placed (BookingExpired", detail, "); "));
    case RequestPhase::kCapacityRevoked:
      return Create(ask, g, StrCat(what, " lost its capacity (CapacityRevoked", detail, said, "); "));
    case RequestPhase::kFailed: {
      const absl::Time retry = g.failed_at.value_or(now) + options_.failed_retry;
      if (now >= retry) return Create(ask, g, StrCat(what, " failed", detail, said, "; "));
      return {.kind = Step::Kind::kFailed, .remove = std::exchange(g.stale, {}),
              .message = StrCat(what, " failed", detail, said, "; asking again at ",
                                FormatRfc3339(retry))};
    }
  }
  return {};
}

void RequestBook::Observe(const ObservedRequest& request, absl::Time now) {
  // Not one of Tessel's; and never another namespace's request for a gang (DecodeRequest refuses
  // those already: this holds for every caller).
  if (request.gang_key.empty() || GangNamespace(request.gang_key) != request.namespace_) return;
  absl::MutexLock lock(&mu_);
  if (deleting_.contains(RequestRef{request.namespace_, request.name})) return;
  GangRequests& g = gangs_[request.gang_key];
  const int32_t attempt = AttemptOf(request.name);
  if (request.name != g.name) {
    if (attempt <= g.attempt) {
      // An earlier attempt (or a stranger with the gang's annotation): to delete.
      const RequestRef ref{request.namespace_, request.name};
      if (std::find(g.stale.begin(), g.stale.end(), ref) == g.stale.end()) g.stale.push_back(ref);
      return;
    }
    // Adopted after a restart: a later attempt than the book knew is current.
    if (!g.name.empty()) g.stale.push_back({g.namespace_, g.name});
    g.namespace_ = request.namespace_;
    g.name = request.name;
    g.attempt = attempt;
    g.failed_at.reset();
    g.provisioned_at.reset();
    g.consumers.clear();
    g.capped = false;
  }
  if (request.phase == RequestPhase::kFailed && g.phase != RequestPhase::kFailed) g.failed_at = now;
  if (request.phase == RequestPhase::kProvisioned && g.phase != RequestPhase::kProvisioned) g.provisioned_at = now;
  g.phase = request.phase;
  g.reason = request.reason;
  g.message = request.message;
}

void RequestBook::Removed(const RequestRef& request) {
  absl::MutexLock lock(&mu_);
  deleting_.erase(request);
  for (auto& [key, g] : gangs_) {
    std::erase(g.stale, request);
    if (g.name == request.name && g.namespace_ == request.namespace_) {
      // Gone before the gang was placed: the next shortfall asks again (a new attempt).
      g.name.clear();
      g.phase = RequestPhase::kPending;
      g.failed_at.reset();
      g.provisioned_at.reset();
    }
  }
}

void RequestBook::CreateFailed(const std::string& gang_key, const RequestRef& request, const std::string& error,
                               absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(gang_key);
  if (it == gangs_.end() || it->second.name != request.name) return;
  it->second.phase = RequestPhase::kFailed;
  it->second.reason = "CreateFailed";
  it->second.message = error;
  it->second.failed_at = now;
}

std::vector<RequestRef> RequestBook::Release(const std::string& gang_key) {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(gang_key);
  if (it == gangs_.end()) return {};
  std::vector<RequestRef> out = std::move(it->second.stale);
  if (!it->second.name.empty()) out.push_back({it->second.namespace_, it->second.name});
  gangs_.erase(it);
  deleting_.insert(out.begin(), out.end());
  return out;
}

std::optional<RequestRef> RequestBook::Current(const std::string& gang_key) const {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(gang_key);
  if (it == gangs_.end() || it->second.name.empty()) return std::nullopt;
  return RequestRef{it->second.namespace_, it->second.name};
}

std::optional<RequestPhase> RequestBook::PhaseOf(const std::string& gang_key) const {
  absl::MutexLock lock(&mu_);
  auto it = gangs_.find(gang_key);
  if (it == gangs_.end() || it->second.name.empty()) return std::nullopt;
  return it->second.phase;
}

size_t RequestBook::size() const {
  absl::MutexLock lock(&mu_);
  return gangs_.size();
}

int64_t RequestBook::open() const {
  absl::MutexLock lock(&mu_);
  return OpenLocked();
}

bool RequestBook::AnyCapped() const {
  absl::MutexLock lock(&mu_);
  return std::any_of(gangs_.begin(), gangs_.end(), [](const auto& kv) { return kv.second.capped; });
}

}  // namespace tessel::provisioning
