// An HTTP client for the Kubernetes API, on libcurl. It verifies TLS (unless the kubeconfig
// says insecure-skip-tls-verify), authenticates with a client certificate and/or a bearer token
// (re-read from its file when it rotates) or with what the user's exec plugin gives (run again
// when it expires or the server answers 401), paces requests with a client-side QPS/burst limit,
// retries 429, 5xx and connection errors with backoff, and reuses connections: curl handles
// are pooled, and a handle keeps its connections between requests.
//
//   ASSIGN_OR_RETURN(auto client, KubeClient::New(config, {.qps = 50, .burst = 100}));
//   ASSIGN_OR_RETURN(Response r, client->Do({.method = "GET", .path = "/api/v1/nodes"}));
//   if (!r.ok()) return r.ToStatus("list nodes");
//
// Watches use Stream(), which hands over the response line by line. Each client has its own
// QPS budget; the live scheduler runs one per kind of traffic (binding, events and status,
// leader election, informers), as kube-scheduler does, so that events never delay binds and
// binds never delay the lease.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/backoff.h"
#include "scheduler/kube/exec_credential.h"
#include "scheduler/kube/kubeconfig.h"

namespace tessel::kube {

struct ClientOptions {
  double qps = 50;      // kube-scheduler's --kube-api-qps default
  int64_t burst = 100;  // kube-scheduler's --kube-api-burst default
  absl::Duration timeout = absl::Seconds(30);
  absl::Duration connect_timeout = absl::Seconds(10);
  int max_attempts = 5;  // first try + retries, for 429, 5xx and connection errors
  BackoffOptions retry_backoff = {.initial = absl::Milliseconds(100), .max = absl::Seconds(5)};
  std::string user_agent = "tessel-scheduler/0.1";
};

inline constexpr std::string_view kJson = "application/json";
inline constexpr std::string_view kMergePatch = "application/merge-patch+json";
inline constexpr std::string_view kStrategicMergePatch = "application/strategic-merge-patch+json";

struct Request {
  std::string method = "GET";
  std::string path;  // "/api/v1/namespaces/ns/pods/name/binding", with any query
  std::string body;
  std::string content_type = std::string(kJson);
  std::optional<absl::Duration> timeout;  // default: ClientOptions::timeout
  bool retry = true;
  // For writes only the leader may send: how long this replica may still write (the time left
  // on its lease; InfiniteDuration without leader election), or nullopt when it may not write.
  // Checked right before every attempt, after the rate limiter's wait, and the attempt's
  // timeout is cut to it, so no write is in flight after the lease may have passed to another
  // replica. A refusal ends the request with FailedPrecondition.
  std::function<std::optional<absl::Duration>()> write_budget;
  // Checked right before every attempt too (after the rate limiter's wait): an error ends the
  // request unsent, with that error's message and code Aborted (e.g. a bind whose node was
  // deleted while the bind waited for its token).
  std::function<absl::Status()> precondition;
  // For reads a shutdown stops (an informer's list): when it turns true, a request still waiting
  // for its rate-limiter token ends unsent (Aborted) instead of sleeping out the wait, so that a
  // scheduler with a small QPS budget exits promptly on SIGTERM.
  const std::atomic<bool>* cancel = nullptr;
};

struct Response {
  int code = 0;
  std::string body;
  std::optional<absl::Duration> retry_after;

  bool ok() const { return code >= 200 && code < 300; }
  // The message of a Kubernetes Status body, else the start of the body.
  std::string ErrorMessage() const;
  // OK for 2xx; otherwise a Status whose code matches the HTTP code (404 NotFound, 409
  // AlreadyExists, 403 PermissionDenied, ...) and whose message says `what` failed and why.
  absl::Status ToStatus(std::string_view what) const;
};

// Whether an answer (or its absence) is worth retrying: 429, 5xx, or no HTTP answer at all.
bool IsRetryableCode(int code);

// Fields of a JSON object read without throwing (nlohmann's value() throws on a type
// mismatch): the fallback when `object` is not an object or the field is missing or mistyped.
std::string JsonString(const nlohmann::json& object, std::string_view key,
                       std::string fallback = "");
int64_t JsonInt(const nlohmann::json& object, std::string_view key, int64_t fallback = 0);

class KubeClient {
 public:
  static absl::StatusOr<std::unique_ptr<KubeClient>> New(ClientConfig config,
                                                         ClientOptions options = {});
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  // Sends the request, retrying (when request.retry) on 429, 5xx and connection errors, with
  // backoff (or the server's Retry-After). The Response may carry any HTTP code; an error
  // Status means no answer came (Unavailable, DeadlineExceeded).
  absl::StatusOr<Response> Do(const Request& request);

  // A long-lived GET (a watch). Each complete line of a 200 reply goes to `on_line`; returning
  // false from it ends the stream. `cancel` turning true ends it too (checked about once a second).
  // Returns code 200 when the stream ended, or the reply of a non-200 answer. Not retried.
  absl::StatusOr<Response> Stream(const Request& request,
                                  const std::function<bool(std::string_view)>& on_line,
                                  const std::atomic<bool>* cancel);

  const ClientConfig& config() const { return config_; }
  const ClientOptions& options() const { return options_; }
  // Requests sent (attempts, retries included), for metrics: in all, and by HTTP method.
  int64_t requests_sent() const { return requests_sent_.load(); }
  static constexpr std::string_view kMethods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
  int64_t requests_sent(std::string_view method) const;

 private:
  struct Handle;
  KubeClient(ClientConfig config, ClientOptions options);
  std::unique_ptr<Handle> Acquire();
  void Release(std::unique_ptr<Handle> handle);
  absl::StatusOr<Response> Once(Handle& handle, const Request& request,
                                const std::function<bool(std::string_view)>* on_line,
                                const std::atomic<bool>* cancel);

  const ClientConfig config_;
  const ClientOptions options_;
  TokenSource token_;
  const std::unique_ptr<ExecCredentialSource> exec_;  // the kubeconfig user's exec plugin
  TokenBucket limiter_;
  std::atomic<int64_t> requests_sent_{0};
  std::atomic<int64_t> by_method_[std::size(kMethods)] = {};
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Handle>> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel::kube
