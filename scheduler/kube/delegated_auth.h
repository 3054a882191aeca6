// Delegated authentication and authorization for the scheduler's own endpoints, as
// kube-scheduler does it: the caller's bearer token is checked with a TokenReview
// (authentication.k8s.io/v1), and the authenticated user's right to the verb on the
// non-resource path (get /metrics) or on a resource (the admin API, possibly in a namespace)
// with a SubjectAccessReview (authorization.k8s.io/v1). The scheduler's ServiceAccount needs
// the ClusterRole system:auth-delegator (manifests/rbac.yaml).
//
// What a caller may cost (DelegatedAuthOptions):
//   - answers are cached by the token's SHA-256: who a token is (TokenReview) and what that
//     user may do (SubjectAccessReview) until allowed_ttl; a token the API server does not
//     know, and a denial, for the shorter denied_ttl (so a grant shows soon);
//   - a TokenReview of a token not known valid costs its source address's budget and a budget
//     shared by all unknown tokens; beyond either the caller gets 429 at once, unreviewed;
//   - a token that a TokenReview authenticated within known_ttl is *known*: its reviews come
//     out of its own budget, so a flood of random tokens (from anywhere) never delays it;
//   - the SubjectAccessReviews of an authenticated user come out of that user's token budget.
// The aggregated API's callers come authenticated by the API server (its front proxy forwards
// the user): AuthorizeUser asks only the SubjectAccessReview, out of a budget of that user's own.
//
//   DelegatedAuthorizer auth(clients->auth.get(), &clock);
//   HttpServer https({.tls = cert, .metrics_authorizer = &auth}, ...);
#pragma once

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/client.h"
#include "scheduler/server/aggregated_api.h"
#include "scheduler/server/http_server.h"
#include "scheduler/util/clock.h"

namespace tessel::kube {

struct DelegatedAuthOptions {
  absl::Duration allowed_ttl = absl::Seconds(10);
  absl::Duration denied_ttl = absl::Seconds(5);  // unauthenticated and forbidden answers
  absl::Duration known_ttl = absl::Minutes(10);  // how long an authenticated token stays known
  size_t max_entries = 4096;  // per cache; beyond it the expired entries go, then all
  // TokenReviews of tokens not known valid: per source address, and for all sources together.
  double reviews_per_second_per_source = 2;
  int64_t review_burst_per_source = 5;
  double reviews_per_second = 5;
  int64_t review_burst = 10;
  // Reviews of a known token (its TokenReview again, and its user's SubjectAccessReviews).
  double known_reviews_per_second = 10;
  int64_t known_review_burst = 60;
};

class DelegatedAuthorizer final : public server::RequestAuthorizer, public server::UserAuthorizer {
 public:
  DelegatedAuthorizer(KubeClient* client, const Clock* clock, DelegatedAuthOptions options = {});

  // 200 allowed; 401 no token, or one the API server does not authenticate; 403 denied; 429
  // over the review budget; 500 when the API server could not be asked (neither cached).
  server::AuthDecision Authorize(std::string_view bearer_token, std::string_view verb,
                                 std::string_view path, std::string_view source = "") override;
  // The same with resourceAttributes (the admin API's calls; a namespace when access has one).
  server::AuthDecision AuthorizeResource(std::string_view bearer_token, const server::ResourceAccess& access,
                                         std::string_view source = "") override;
  // The TokenReview alone: 200 when the token is authenticated.
  server::AuthDecision Authenticate(std::string_view bearer_token, std::string_view source = "") override;

  // The same for a user the API server has already authenticated (the aggregated API's
  // forwarded user): only the SubjectAccessReview, cached alike.
  server::AuthDecision AuthorizeUser(const server::UserInfo& user,
                                     const server::ResourceAccess& access) override;

  int64_t reviews_sent() const;

 private:
  // A token bucket kept under mu_.
  struct Bucket {
    double tokens = 0;
    absl::Time last;
    bool Take(double qps, int64_t burst, absl::Time now);
  };
  // Who a token is, once a TokenReview said so.
  struct Identity {
    nlohmann::json user;  // the TokenReview's status.user
    absl::Time expires;     // until then no TokenReview is needed
    absl::Time known_until;  // until then its reviews use its own budget
    Bucket budget;
  };
  struct Cached {
    server::AuthDecision decision;
    absl::Time expires;
  };

  // `attributes` is the SubjectAccessReview's nonResourceAttributes or resourceAttributes;
  // `what` names the request in a denial ("get /metrics").
  server::AuthDecision Decide(std::string_view token, const nlohmann::json& attributes, std::string_view what,
                              std::string_view source);
  // The token's user (200 and `user`), from the cache or a TokenReview.
  server::AuthDecision Identify(std::string_view token, const std::string& sha, std::string_view source,
                                nlohmann::json* user);
  // The SubjectAccessReview of `user` (a TokenReview's status.user) for `attributes`, out of the
  // budget of identities_[id] (a token's sha256, or a forwarded user); CachedAccessReview keeps
  // its answer (decisions_).
  server::AuthDecision AccessReview(const std::string& id, const nlohmann::json& user,
                                    const nlohmann::json& attributes, std::string_view what);
  server::AuthDecision CachedAccessReview(const std::string& id, const nlohmann::json& user,
                                          const nlohmann::json& attributes, std::string_view what);
  void Trim(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  KubeClient* client_;
  const Clock* clock_;
  DelegatedAuthOptions options_;
  mutable absl::Mutex mu_;
  // By the token's sha256, or "forwarded|" and the user (AuthorizeUser).
  absl::flat_hash_map<std::string, Identity> identities_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::Time> rejected_ ABSL_GUARDED_BY(mu_);  // sha256: until
  absl::flat_hash_map<std::string, Cached> decisions_ ABSL_GUARDED_BY(mu_);     // sha256|attributes
  absl::flat_hash_map<std::string, Bucket> sources_ ABSL_GUARDED_BY(mu_);
  Bucket unknown_ ABSL_GUARDED_BY(mu_);
  int64_t reviews_sent_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessel::kube
