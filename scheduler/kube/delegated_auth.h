// Delegated authentication and authorization for the scheduler's own endpoints, as
// kube-scheduler does it: the caller's bearer token is checked with a TokenReview
// (authentication.k8s.io/v1), and the authenticated user's right to the verb on the
// non-resource path (get /metrics) with a SubjectAccessReview (authorization.k8s.io/v1).
// Answers are cached by the token's SHA-256, allowed and denied ones for their own TTL, so a
// scraper every few seconds costs the API server two requests per TTL. The scheduler's
// ServiceAccount needs the ClusterRole system:auth-delegator (manifests/rbac.yaml). The aggregated
// API's callers come authenticated by the API server: AuthorizeUser asks only the
// SubjectAccessReview.
//
//   DelegatedAuthorizer auth(clients->auth.get(), &clock);
//   HttpServer https({.tls = cert, .metrics_authorizer = &auth}, ...);
#pragma once

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "absl/time/time.h"
#include "scheduler/kube/backoff.h"
#include "scheduler/kube/client.h"
#include "scheduler/server/aggregated_api.h"
#include "scheduler/server/http_server.h"
#include "scheduler/util/clock.h"

namespace tessel::kube {

struct DelegatedAuthOptions {
  absl::Duration allowed_ttl = absl::Seconds(10);
  absl::Duration denied_ttl = absl::Seconds(10);  // unauthenticated and forbidden answers
  size_t max_entries = 4096;  // beyond it the cache is emptied (tokens are few in practice)
  // Reviews (a TokenReview, then a SubjectAccessReview) begun per second, and saved up: a caller
  // beyond them gets 429 at once, without waiting and without a review, so a flood of unknown
  // tokens costs the API server at most this, holds no server worker, and is bounded apart from
  // the scheduler's own traffic (the authorizer is given a client of its own).
  double reviews_per_second = 5;
  int64_t review_burst = 10;
};

class DelegatedAuthorizer final : public server::RequestAuthorizer, public server::UserAuthorizer {
 public:
  DelegatedAuthorizer(KubeClient* client, const Clock* clock, DelegatedAuthOptions options = {});

  // 200 allowed; 401 no token, or one the API server does not authenticate; 403 denied; 429
  // over the review budget; 500 when the API server could not be asked (neither cached).
  server::AuthDecision Authorize(std::string_view bearer_token, std::string_view verb,
                                 std::string_view path) override;
  // The same with resourceAttributes (the admin API's calls), cached alike.
  server::AuthDecision AuthorizeResource(std::string_view bearer_token,
                                         const server::ResourceAccess& access) override;

  // The same for a user the API server has already authenticated (the aggregated API's
  // forwarded user): only the SubjectAccessReview, cached alike.
  server::AuthDecision AuthorizeUser(const server::UserInfo& user,
                                     const server::ResourceAccess& access) override;

  int64_t reviews_sent() const;

 private:
  // `attributes` is the SubjectAccessReview's nonResourceAttributes or resourceAttributes;
  // `what` names the request in a denial ("get /metrics").
  server::AuthDecision Decide(std::string_view token, const nlohmann::json& attributes,
                              std::string_view what);
  server::AuthDecision Review(std::string_view token, const nlohmann::json& attributes,
                              std::string_view what);
  // The SubjectAccessReview of `subject` (user, uid, groups, extra) for `attributes`.
  server::AuthDecision AccessReview(const nlohmann::json& subject, const nlohmann::json& attributes,
                                    std::string_view what);

  KubeClient* client_;
  const Clock* clock_;
  DelegatedAuthOptions options_;
  struct Cached {
    server::AuthDecision decision;
    absl::Time expires;
  };
  TokenBucket reviews_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Cached> cache_ ABSL_GUARDED_BY(mu_);  // sha256|verb|path
  int64_t reviews_sent_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessel::kube
