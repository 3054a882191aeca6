// The per-gang ProvisioningRequest state machine (request_book.h).
#include "scheduler/provisioning/request_book.h"

#include <algorithm>
#include <charconv>
#include <utility>

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
  return StrCat("ProvisioningRequest ", g.namespace_, "/", g.name, " (class ", g.class_name, ")");
}

Step RequestBook::Create(const Ask& ask, GangRequests& g, std::string why) {
  Step step{.kind = Step::Kind::kCreate, .remove = std::move(g.stale)};
  g.stale.clear();
  if (!g.name.empty()) step.remove.push_back({g.namespace_, g.name});
  g.namespace_ = ask.namespace_;
  g.class_name = ask.marking.class_name;
  g.attempt += 1;
  g.name = RequestName(ask.gang_key, g.attempt);
  g.phase = RequestPhase::kPending;
  g.reason.clear();
  g.message.clear();
  g.failed_at.reset();
  step.create = RequestSpec{.namespace_ = ask.namespace_,
                            .name = g.name,
                            .gang_key = ask.gang_key,
                            .marking = ask.marking,
                            .owner = ask.owner};
  step.message = StrCat(why, "waiting for ", Describe(g), " to be provisioned");
  return step;
}

Step RequestBook::Shortfall(const Ask& ask, absl::Time now) {
  absl::MutexLock lock(&mu_);
  Step step = Decide(ask, now);
  deleting_.insert(step.remove.begin(), step.remove.end());
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
    case RequestPhase::kProvisioned:
      return {.kind = Step::Kind::kWait, .remove = std::exchange(g.stale, {}),
              .message = StrCat(what, " is Provisioned; waiting for its nodes")};
    case RequestPhase::kBookingExpired:
      return Create(ask, g, StrCat(what, " expired before the gang was placed (BookingExpired", detail, "); "));
    case RequestPhase::kCapacityRevoked:
      return Create(ask, g, StrCat(what, " lost its capacity (CapacityRevoked", detail, said, "); "));
    case RequestPhase::kFailed: {
      const absl::Time retry = g.failed_at.value_or(now) + options_.failed_retry;
      if (now >= retry) return Create(ask, g, StrCat(what, " failed", detail, said, "; "));
      return {.kind = Step::Kind::kFailed, .remove = std::exchange(g.stale, {}),
              .message = StrCat(what, " failed", detail, said, "; asking again at ",
                                absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", retry, absl::UTCTimeZone()))};
    }
  }
  return {};
}

void RequestBook::Observe(const ObservedRequest& request, absl::Time now) {
  if (request.gang_key.empty()) return;  // not one of Tessel's
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
  }
  if (request.phase == RequestPhase::kFailed && g.phase != RequestPhase::kFailed) g.failed_at = now;
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

}  // namespace tessel::provisioning
