// TokenReview + SubjectAccessReview with a cache (see delegated_auth.h).
#include "scheduler/kube/delegated_auth.h"

#include <openssl/evp.h>

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "nlohmann/json.hpp"
#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

namespace {

std::string Sha256Hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

// POSTs a review object and returns its status, or an error.
absl::StatusOr<json> PostReview(KubeClient& client, std::string_view path, const json& review) {
  absl::StatusOr<Response> r = client.Do(
      {.method = "POST", .path = std::string(path), .body = review.dump(), .timeout = absl::Seconds(5)});
  if (!r.ok()) return r.status();
  if (!r->ok()) return r->ToStatus(StrCat("POST ", path));
  json answer = json::parse(r->body, nullptr, false);
  if (!answer.is_object() || !answer.contains("status") || !answer["status"].is_object()) {
    return absl::DataLossError(StrCat("POST ", path, ": the answer has no status"));
  }
  return answer["status"];
}

}  // namespace

DelegatedAuthorizer::DelegatedAuthorizer(KubeClient* client, const Clock* clock,
                                         DelegatedAuthOptions options)
    : client_(client), clock_(clock), options_(options) {
  unknown_ = Bucket{.tokens = static_cast<double>(options_.review_burst), .last = clock_->Now()};
}

bool DelegatedAuthorizer::Bucket::Take(double qps, int64_t burst, absl::Time now) {
  if (qps <= 0) return true;
  if (now > last) {
    tokens = std::min(static_cast<double>(burst), tokens + absl::ToDoubleSeconds(now - last) * qps);
    last = now;
  }
  if (tokens < 1.0) return false;
  tokens -= 1.0;
  return true;
}

int64_t DelegatedAuthorizer::reviews_sent() const {
  absl::MutexLock lock(&mu_);
  return reviews_sent_;
}

server::AuthDecision DelegatedAuthorizer::Authorize(std::string_view bearer_token, std::string_view verb,
                                                    std::string_view path, std::string_view source) {
  return Decide(bearer_token, {{"nonResourceAttributes", {{"path", path}, {"verb", verb}}}},
                StrCat(verb, " ", path), source);
}

namespace {

json ResourceAttributes(const server::ResourceAccess& access) {
  json attributes = {{"verb", access.verb},
                     {"group", access.group},
                     {"resource", access.resource},
                     {"subresource", access.subresource}};
  if (!access.namespace_.empty()) attributes["namespace"] = access.namespace_;
  return {{"resourceAttributes", attributes}};
}

}  // namespace

server::AuthDecision DelegatedAuthorizer::AuthorizeResource(std::string_view bearer_token,
                                                            const server::ResourceAccess& access,
                                                            std::string_view source) {
  return Decide(bearer_token, ResourceAttributes(access), access.Describe(), source);
}

server::AuthDecision DelegatedAuthorizer::AuthorizeUser(const server::UserInfo& forwarded,
                                                        const server::ResourceAccess& access) {
  if (forwarded.name.empty()) return {401, "Unauthorized: no user"};
  json user = {{"username", forwarded.name}, {"groups", forwarded.groups}};
  if (!forwarded.uid.empty()) user["uid"] = forwarded.uid;
  if (!forwarded.extra.empty()) user["extra"] = forwarded.extra;
  // The API server authenticated this user: its reviews come out of a budget of its own, kept
  // (keyed by who it is) as a known token's is. No TokenReview: its user and expiry stay unset.
  const std::string id = StrCat("forwarded|", user.dump());
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    Trim(now);
    Identity& known = identities_[id];
    if (known.known_until <= now) {
      known.budget = Bucket{.tokens = static_cast<double>(options_.known_review_burst), .last = now};
    }
    known.known_until = now + options_.known_ttl;
  }
  return CachedAccessReview(id, user, ResourceAttributes(access), access.Describe());
}

server::AuthDecision DelegatedAuthorizer::Authenticate(std::string_view bearer_token, std::string_view source) {
  if (bearer_token.empty()) return {401, "Unauthorized: a bearer token is required"};
  json user;
  return Identify(bearer_token, Sha256Hex(bearer_token), source, &user);
}

void DelegatedAuthorizer::Trim(absl::Time now) {
  auto trim = [&](auto& map, auto expired) {
    if (map.size() < options_.max_entries) return;
    absl::erase_if(map, expired);
    if (map.size() >= options_.max_entries) map.clear();
  };
  trim(identities_, [&](const auto& e) { return e.second.known_until <= now; });
  trim(rejected_, [&](const auto& e) { return e.second <= now; });
  trim(decisions_, [&](const auto& e) { return e.second.expires <= now; });
  // A source whose bucket has refilled is as good as a new one.
  const double full = static_cast<double>(options_.review_burst_per_source);
  trim(sources_, [&](const auto& e) {
    return e.second.tokens + absl::ToDoubleSeconds(now - e.second.last) * options_.reviews_per_second_per_source >= full;
  });
}

server::AuthDecision DelegatedAuthorizer::Identify(std::string_view token, const std::string& sha,
                                                   std::string_view source, json* user) {
  const absl::Time now = clock_->Now();
  {
    absl::MutexLock lock(&mu_);
    Trim(now);
    if (auto it = rejected_.find(sha); it != rejected_.end() && now < it->second) return {401, "Unauthorized"};
    auto known = identities_.find(sha);
    if (known != identities_.end() && now < known->second.expires) {
      *user = known->second.user;
      return {200, ""};
    }
    if (known != identities_.end() && now < known->second.known_until) {
      // Known valid: asked again out of its own budget, never behind unknown tokens.
      if (!known->second.budget.Take(options_.known_reviews_per_second, options_.known_review_burst, now)) {
        return {429, "Too Many Requests: this token's review budget is spent; retry later"};
      }
    } else {
      auto [src, inserted] = sources_.try_emplace(std::string(source));
      if (inserted) src->second = Bucket{.tokens = static_cast<double>(options_.review_burst_per_source), .last = now};
      if (!src->second.Take(options_.reviews_per_second_per_source, options_.review_burst_per_source, now)) {
        return {429, StrCat("Too Many Requests: the token review budget of ", source.empty() ? "this caller" : source,
                            " is spent; retry later")};
      }
      if (!unknown_.Take(options_.reviews_per_second, options_.review_burst, now)) {
        return {429, "Too Many Requests: the review budget for new tokens is spent; retry later"};
      }
    }
    reviews_sent_ += 1;
  }
  absl::StatusOr<json> who = PostReview(
      *client_, "/apis/authentication.k8s.io/v1/tokenreviews",
      {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"}, {"spec", {{"token", token}}}});
  if (!who.ok()) {
    spdlog::warn("delegated authentication: {}", who.status().message());
    return {500, "Internal Server Error: authentication unavailable"};
  }
  const absl::Time after = clock_->Now();
  absl::MutexLock lock(&mu_);
  if (!who->value("authenticated", false)) {
    identities_.erase(sha);
    rejected_[sha] = after + options_.denied_ttl;
    return {401, "Unauthorized"};
  }
  *user = who->value("user", json::object());
  Identity& id = identities_[sha];
  if (id.known_until <= after) id.budget = Bucket{.tokens = static_cast<double>(options_.known_review_burst), .last = after};
  id.user = *user;
  id.expires = after + options_.allowed_ttl;
  id.known_until = after + options_.known_ttl;
  return {200, ""};
}

server::AuthDecision DelegatedAuthorizer::Decide(std::string_view bearer_token, const json& attributes,
                                                 std::string_view what, std::string_view source) {
  if (bearer_token.empty()) return {401, "Unauthorized: a bearer token is required"};
  const std::string sha = Sha256Hex(bearer_token);
  {
    absl::MutexLock lock(&mu_);
    auto it = decisions_.find(StrCat(sha, "|", attributes.dump()));
    if (it != decisions_.end() && clock_->Now() < it->second.expires) return it->second.decision;
  }
  json user;
  if (server::AuthDecision who = Identify(bearer_token, sha, source, &user); who.http_status != 200) return who;
  return CachedAccessReview(sha, user, attributes, what);
}

server::AuthDecision DelegatedAuthorizer::CachedAccessReview(const std::string& id, const json& user,
                                                             const json& attributes, std::string_view what) {
  const std::string key = StrCat(id, "|", attributes.dump());
  {
    absl::MutexLock lock(&mu_);
    auto it = decisions_.find(key);
    if (it != decisions_.end() && clock_->Now() < it->second.expires) return it->second.decision;
  }
  server::AuthDecision decision = AccessReview(id, user, attributes, what);
  if (decision.http_status == 200 || decision.http_status == 403) {
    const absl::Duration ttl = decision.http_status == 200 ? options_.allowed_ttl : options_.denied_ttl;
    absl::MutexLock lock(&mu_);
    decisions_[key] = Cached{decision, clock_->Now() + ttl};
  }
  return decision;
}

server::AuthDecision DelegatedAuthorizer::AccessReview(const std::string& sha, const json& user,
                                                       const json& attributes, std::string_view what) {
  {
    absl::MutexLock lock(&mu_);
    auto id = identities_.find(sha);
    if (id != identities_.end() &&
        !id->second.budget.Take(options_.known_reviews_per_second, options_.known_review_burst, clock_->Now())) {
      return {429, "Too Many Requests: this token's review budget is spent; retry later"};
    }
    reviews_sent_ += 1;
  }
  json spec = attributes;
  spec["user"] = user.value("username", "");
  if (user.contains("uid")) spec["uid"] = user["uid"];
  if (user.contains("groups")) spec["groups"] = user["groups"];
  if (user.contains("extra")) spec["extra"] = user["extra"];
  absl::StatusOr<json> may = PostReview(
      *client_, "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      {{"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}});
  if (!may.ok()) {
    spdlog::warn("delegated authorization: {}", may.status().message());
    return {500, "Internal Server Error: authorization unavailable"};
  }
  if (may->value("allowed", false)) return {200, ""};
  return {403, StrCat("Forbidden: user \"", user.value("username", ""), "\" may not ", what,
                      may->contains("reason") ? StrCat(": ", may->value("reason", "")) : "")};
}

}  // namespace tessel::kube
