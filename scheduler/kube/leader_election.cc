// Lease-based leader election.
#include "scheduler/kube/leader_election.h"

#include <random>

#include "nlohmann/json.hpp"
#include "scheduler/util/api_time.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

namespace {
const Clock* DefaultMonotonic() {
  static const SteadyClock clock;
  return &clock;
}
const Clock* DefaultWall() {
  static const RealClock clock;
  return &clock;
}
}  // namespace

LeaderElector::LeaderElector(KubeClient* client, LeaderElectionConfig config,
                             LeaderCallbacks callbacks, ElectorClocks clocks)
    : client_(client),
      monotonic_(clocks.monotonic != nullptr ? clocks.monotonic : DefaultMonotonic()),
      wall_(clocks.wall != nullptr ? clocks.wall : DefaultWall()),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)) {}

LeaderElector::~LeaderElector() { Stop(false); }

void LeaderElector::Start() { thread_ = std::thread([this] { Run(); }); }

bool LeaderElector::Sleep(absl::Duration d) { return !stopped_.WaitForNotificationWithTimeout(d); }

bool LeaderElector::IsLeader() const {
  absl::MutexLock lock(&mu_);
  return leading_ && monotonic_->Now() < renewed_at_ + config_.renew_deadline;
}

std::optional<absl::Duration> LeaderElector::WriteBudget() const {
  absl::MutexLock lock(&mu_);
  if (!leading_) return std::nullopt;
  const absl::Duration left = renewed_at_ + config_.renew_deadline - monotonic_->Now();
  if (left <= absl::ZeroDuration()) return std::nullopt;
  return left;
}

std::string LeaderElector::leader() const {
  absl::MutexLock lock(&mu_);
  return holder_;
}

void LeaderElector::SetLeader(const std::string& holder) {
  bool changed = false;
  {
    absl::MutexLock lock(&mu_);
    changed = holder_ != holder;
    holder_ = holder;
  }
  if (changed) {
    spdlog::info("leader election: lease {}/{} is held by \"{}\"", config_.namespace_,
                 config_.name, holder);
    if (callbacks_.on_new_leader) callbacks_.on_new_leader(holder);
  }
}

bool LeaderElector::TryAcquireOrRenew() {
  const std::string path = StrCat("/apis/coordination.k8s.io/v1/namespaces/", config_.namespace_,
                                  "/leases/", config_.name);
  const absl::Time now = monotonic_->Now();
  const absl::Time wall_now = wall_->Now();
  const int lease_seconds = static_cast<int>(absl::ToInt64Seconds(config_.lease_duration));
  const Request get{.path = path, .timeout = config_.retry_period, .retry = false};
  absl::StatusOr<Response> resp = client_->Do(get);
  if (!resp.ok()) {
    spdlog::warn("leader election: get lease: {}", resp.status().message());
    return false;
  }
  if (resp->code == 404) {
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", config_.name}, {"namespace", config_.namespace_}}},
                  {"spec",
                   {{"holderIdentity", config_.identity},
                    {"leaseDurationSeconds", lease_seconds},
                    {"acquireTime", FormatMicroTime(wall_now)},
                    {"renewTime", FormatMicroTime(wall_now)},
                    {"leaseTransitions", 0}}}};
    absl::StatusOr<Response> created = client_->Do(
        {.method = "POST",
         .path = StrCat("/apis/coordination.k8s.io/v1/namespaces/", config_.namespace_, "/leases"),
         .body = lease.dump(),
         .timeout = config_.retry_period,
         .retry = false});
    if (!created.ok() || !created->ok()) {
      spdlog::warn("leader election: create lease: {}",
                   created.ok() ? created->ErrorMessage() : std::string(created.status().message()));
      return false;
    }
    absl::MutexLock lock(&mu_);
    renewed_at_ = now;
    observed_holder_ = config_.identity;
    observed_at_ = now;
    return true;
  }
  if (!resp->ok()) {
    spdlog::warn("leader election: get lease: {}", resp->ErrorMessage());
    return false;
  }
  json lease = json::parse(resp->body, nullptr, false);
  if (lease.is_discarded() || !lease.is_object()) return false;
  json& spec = lease["spec"];
  if (!spec.is_object()) spec = json::object();
  const std::string holder = JsonString(spec, "holderIdentity");
  const std::string renew = JsonString(spec, "renewTime");
  const int64_t duration_s = JsonInt(spec, "leaseDurationSeconds", lease_seconds);
  {
    absl::MutexLock lock(&mu_);
    if (holder != observed_holder_ || renew != observed_renew_) {
      observed_holder_ = holder;
      observed_renew_ = renew;
      observed_at_ = now;
    }
  }
  SetLeader(holder);
  absl::Time observed_at;
  {
    absl::MutexLock lock(&mu_);
    observed_at = observed_at_;
  }
  const bool ours = holder == config_.identity;
  if (!holder.empty() && !ours && now < observed_at + absl::Seconds(duration_s)) {
    absl::MutexLock lock(&mu_);
    expires_at_ = observed_at + absl::Seconds(duration_s);
    return false;  // someone else holds a live lease
  }
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = lease_seconds;
  spec["renewTime"] = FormatMicroTime(wall_now);
  if (!ours) {
    spec["acquireTime"] = FormatMicroTime(wall_now);
    spec["leaseTransitions"] = JsonInt(spec, "leaseTransitions") + (holder.empty() ? 0 : 1);
  }
  // PUT carries metadata.resourceVersion: a concurrent writer makes it fail with 409.
  absl::StatusOr<Response> updated = client_->Do(
      {.method = "PUT", .path = path, .body = lease.dump(), .timeout = config_.retry_period,
       .retry = false});
  if (!updated.ok() || !updated->ok()) {
    spdlog::warn("leader election: update lease: {}",
                 updated.ok() ? updated->ErrorMessage() : std::string(updated.status().message()));
    return false;
  }
  absl::MutexLock lock(&mu_);
  renewed_at_ = now;
  return true;
}

void LeaderElector::Run() {
  std::mt19937_64 rng(std::random_device{}());
  auto jittered = [&] {
    return config_.retry_period *
           std::uniform_real_distribution<double>(1.0, 1.2)(rng);  // client-go's JitterFactor
  };
  spdlog::info("leader election: campaigning for lease {}/{} as \"{}\"", config_.namespace_,
               config_.name, config_.identity);
  while (!stop_.load()) {
    if (TryAcquireOrRenew()) break;
    // Poll every retry period, but also right when the holder's lease would run out, so a
    // crashed leader is replaced after lease duration + at most one observation delay.
    absl::Duration wait = jittered();
    {
      absl::MutexLock lock(&mu_);
      const absl::Duration to_expiry = expires_at_ - monotonic_->Now() + absl::Milliseconds(20);
      if (to_expiry > absl::ZeroDuration()) wait = std::min(wait, to_expiry);
    }
    Sleep(wait);
  }
  if (stop_.load()) return;
  {
    absl::MutexLock lock(&mu_);
    leading_ = true;
  }
  SetLeader(config_.identity);
  spdlog::info("leader election: acquired lease {}/{}", config_.namespace_, config_.name);
  if (callbacks_.on_started_leading) callbacks_.on_started_leading();

  while (!stop_.load()) {
    Sleep(config_.retry_period);
    if (stop_.load()) break;
    bool renewed = false;
    for (;;) {
      if (TryAcquireOrRenew()) {
        renewed = true;
        break;
      }
      absl::Time renewed_at;
      {
        absl::MutexLock lock(&mu_);
        renewed_at = renewed_at_;
      }
      if (monotonic_->Now() >= renewed_at + config_.renew_deadline || stop_.load()) break;
      Sleep(config_.retry_period / 4);
    }
    if (!renewed) {
      if (stop_.load()) break;
      {
        absl::MutexLock lock(&mu_);
        leading_ = false;
      }
      spdlog::error("leader election: could not renew lease {}/{} within {}; leadership lost",
                    config_.namespace_, config_.name, absl::FormatDuration(config_.renew_deadline));
      if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
      return;
    }
  }
}

void LeaderElector::Stop(bool release) {
  if (!stop_.exchange(true)) stopped_.Notify();
  if (thread_.joinable()) thread_.join();
  bool was_leading = false;
  {
    absl::MutexLock lock(&mu_);
    was_leading = leading_;
    leading_ = false;
  }
  if (!was_leading) return;
  if (release) {
    // Hand the lease over at once instead of making the next leader wait for it to expire.
    const std::string path = StrCat("/apis/coordination.k8s.io/v1/namespaces/", config_.namespace_,
                                    "/leases/", config_.name);
    absl::StatusOr<Response> resp = client_->Do({.path = path, .timeout = absl::Seconds(2), .retry = false});
    if (resp.ok() && resp->ok()) {
      json lease = json::parse(resp->body, nullptr, false);
      if (!lease.is_discarded() && lease.is_object() && lease["spec"].is_object() &&
          JsonString(lease["spec"], "holderIdentity") == config_.identity) {
        lease["spec"]["holderIdentity"] = "";
        lease["spec"]["leaseDurationSeconds"] = 1;
        lease["spec"]["renewTime"] = FormatMicroTime(wall_->Now());
        auto put = client_->Do({.method = "PUT", .path = path, .body = lease.dump(),
                                .timeout = absl::Seconds(2), .retry = false});
        if (put.ok() && put->ok()) spdlog::info("leader election: released the lease");
      }
    }
  }
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

}  // namespace tessel::kube
