// TokenReview + SubjectAccessReview with a cache (see delegated_auth.h).
#include "scheduler/kube/delegated_auth.h"

#include <openssl/evp.h>

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
    : client_(client), clock_(clock), options_(options),
      reviews_(options.reviews_per_second, options.review_burst, clock->Now()) {}

int64_t DelegatedAuthorizer::reviews_sent() const {
  absl::MutexLock lock(&mu_);
  return reviews_sent_;
}

server::AuthDecision DelegatedAuthorizer::Authorize(std::string_view bearer_token,
                                                    std::string_view verb, std::string_view path) {
  return Decide(bearer_token, {{"nonResourceAttributes", {{"path", path}, {"verb", verb}}}},
                StrCat(verb, " ", path));
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
                                                            const server::ResourceAccess& access) {
  return Decide(bearer_token, ResourceAttributes(access), access.Describe());
}

server::AuthDecision DelegatedAuthorizer::AuthorizeUser(const server::UserInfo& user,
                                                        const server::ResourceAccess& access) {
  if (user.name.empty()) return {401, "Unauthorized: no user"};
  json subject = {{"user", user.name}, {"groups", user.groups}};
  if (!user.uid.empty()) subject["uid"] = user.uid;
  if (!user.extra.empty()) subject["extra"] = user.extra;
  const json attributes = ResourceAttributes(access);
  const std::string key = StrCat("user|", subject.dump(), "|", attributes.dump());
  {
    absl::MutexLock lock(&mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && clock_->Now() < it->second.expires) return it->second.decision;
  }
  if (!reviews_.TryTake(clock_->Now())) {
    return {429, "Too Many Requests: the access review budget is spent; retry later"};
  }
  server::AuthDecision decision = AccessReview(subject, attributes, access.Describe());
  if (decision.http_status != 500) {
    const absl::Duration ttl = decision.http_status == 200 ? options_.allowed_ttl : options_.denied_ttl;
    absl::MutexLock lock(&mu_);
    if (cache_.size() >= options_.max_entries) cache_.clear();
    cache_[key] = Cached{decision, clock_->Now() + ttl};
  }
  return decision;
}

server::AuthDecision DelegatedAuthorizer::Decide(std::string_view bearer_token,
                                                 const json& attributes, std::string_view what) {
  if (bearer_token.empty()) return {401, "Unauthorized: a bearer token is required"};
  const std::string key = StrCat(Sha256Hex(bearer_token), "|", attributes.dump());
  {
    absl::MutexLock lock(&mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && clock_->Now() < it->second.expires) return it->second.decision;
  }
  if (!reviews_.TryTake(clock_->Now())) {
    return {429, "Too Many Requests: the token review budget is spent; retry later"};
  }
  server::AuthDecision decision = Review(bearer_token, attributes, what);
  if (decision.http_status != 500) {
    const absl::Duration ttl = decision.http_status == 200 ? options_.allowed_ttl : options_.denied_ttl;
    absl::MutexLock lock(&mu_);
    if (cache_.size() >= options_.max_entries) cache_.clear();
    cache_[key] = Cached{decision, clock_->Now() + ttl};
  }
  return decision;
}

server::AuthDecision DelegatedAuthorizer::Review(std::string_view token, const json& attributes,
                                                 std::string_view what) {
  {
    absl::MutexLock lock(&mu_);
    reviews_sent_ += 1;
  }
  absl::StatusOr<json> who = PostReview(
      *client_, "/apis/authentication.k8s.io/v1/tokenreviews",
      {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"}, {"spec", {{"token", token}}}});
  if (!who.ok()) {
    spdlog::warn("metrics authentication: {}", who.status().message());
    return {500, "Internal Server Error: authentication unavailable"};
  }
  if (!who->value("authenticated", false)) return {401, "Unauthorized"};
  const json user = who->value("user", json::object());
  json subject = {{"user", user.value("username", "")}};
  for (const char* field : {"uid", "groups", "extra"}) {
    if (user.contains(field)) subject[field] = user[field];
  }
  return AccessReview(subject, attributes, what);
}

server::AuthDecision DelegatedAuthorizer::AccessReview(const json& subject, const json& attributes,
                                                       std::string_view what) {
  json spec = attributes;
  spec.update(subject);
  {
    absl::MutexLock lock(&mu_);
    reviews_sent_ += 1;
  }
  absl::StatusOr<json> may = PostReview(
      *client_, "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      {{"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}});
  if (!may.ok()) {
    spdlog::warn("metrics authorization: {}", may.status().message());
    return {500, "Internal Server Error: authorization unavailable"};
  }
  if (may->value("allowed", false)) return {200, ""};
  return {403, StrCat("Forbidden: user \"", JsonString(subject, "user"), "\" may not ", what,
                      may->contains("reason") ? StrCat(": ", may->value("reason", "")) : "")};
}

}  // namespace tessel::kube
