// libcurl transport for KubeClient.
#include "scheduler/kube/client.h"

#include <curl/curl.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "nlohmann/json.hpp"
#include "scheduler/kube/line_splitter.h"
#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

absl::StatusCode CodeForHttp(int code) {
  switch (code) {
    case 400: return absl::StatusCode::kInvalidArgument;
    case 401: return absl::StatusCode::kUnauthenticated;
    case 403: return absl::StatusCode::kPermissionDenied;
    case 404: return absl::StatusCode::kNotFound;
    case 409: return absl::StatusCode::kAlreadyExists;
    case 410: return absl::StatusCode::kFailedPrecondition;
    case 422: return absl::StatusCode::kInvalidArgument;
    case 429: return absl::StatusCode::kResourceExhausted;
    case 504: return absl::StatusCode::kDeadlineExceeded;
    default:
      return code >= 500 ? absl::StatusCode::kUnavailable : absl::StatusCode::kUnknown;
  }
}

// Retry-After: seconds (the apiserver never sends the HTTP-date form).
std::optional<absl::Duration> ParseRetryAfter(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  int64_t seconds = 0;
  bool any = false;
  for (char c : value) {
    if (c < '0' || c > '9') break;
    seconds = seconds * 10 + (c - '0');
    any = true;
    if (seconds > 3600) break;
  }
  if (!any) return std::nullopt;
  return absl::Seconds(std::min<int64_t>(seconds, 60));
}

}  // namespace

bool IsRetryableCode(int code) { return code == 0 || code == 429 || code >= 500; }

std::string JsonString(const nlohmann::json& object, std::string_view key, std::string fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

int64_t JsonInt(const nlohmann::json& object, std::string_view key, int64_t fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return fallback;
  return it->get<int64_t>();
}

std::string Response::ErrorMessage() const {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && JsonString(j, "kind") == "Status") {
    auto it = j.find("message");
    if (it != j.end() && it->is_string()) return it->get<std::string>();
  }
  std::string head = body.substr(0, 200);
  for (char& c : head) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return head.empty() ? StrCat("HTTP ", code) : head;
}

absl::Status Response::ToStatus(std::string_view what) const {
  if (ok()) return absl::OkStatus();
  return absl::Status(CodeForHttp(code), StrCat(what, ": HTTP ", code, ": ", ErrorMessage()));
}

struct KubeClient::Handle {
  CURL* curl = nullptr;
  ~Handle() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
};

KubeClient::KubeClient(ClientConfig config, ClientOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      token_(config_.token, config_.token_file),
      exec_(config_.exec ? std::make_unique<ExecCredentialSource>(*config_.exec) : nullptr),
      limiter_(options_.qps, options_.burst) {}

KubeClient::~KubeClient() = default;

absl::StatusOr<std::unique_ptr<KubeClient>> KubeClient::New(ClientConfig config,
                                                            ClientOptions options) {
  GlobalInit();
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    return absl::InvalidArgumentError(StrCat("server \"", config.server, "\" is not an http(s) URL"));
  }
  if (options.max_attempts < 1) options.max_attempts = 1;
  return std::unique_ptr<KubeClient>(new KubeClient(std::move(config), std::move(options)));
}

std::unique_ptr<KubeClient::Handle> KubeClient::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      auto h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
  }
  auto h = std::make_unique<Handle>();
  h->curl = curl_easy_init();
  return h;
}

void KubeClient::Release(std::unique_ptr<Handle> handle) {
  absl::MutexLock lock(&mu_);
  if (idle_.size() < 32) idle_.push_back(std::move(handle));
}

namespace {

struct Transfer {
  Response* response = nullptr;
  CURL* curl = nullptr;
  const std::function<bool(std::string_view)>* on_line = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  LineSplitter lines;  // the lines of a stream
  bool stopped = false;  // on_line asked to stop
  bool streaming_decided = false;
  bool streaming = false;
};

size_t OnWrite(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  if (t->on_line == nullptr) {
    t->response->body.append(data, n);
    return n;
  }
  if (!t->streaming_decided) {
    long code = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
    t->streaming = code == 200;
    t->streaming_decided = true;
  }
  if (!t->streaming) {
    t->response->body.append(data, n);
    return n;
  }
  if (!t->lines.Feed(std::string_view(data, n), *t->on_line)) {
    t->stopped = true;
    return 0;  // aborts the transfer
  }
  return n;
}

size_t OnHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  std::string_view line(data, n);
  constexpr std::string_view kRetryAfter = "retry-after:";
  if (line.size() > kRetryAfter.size()) {
    bool match = true;
    for (size_t i = 0; i < kRetryAfter.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(line[i])) != kRetryAfter[i]) {
        match = false;
        break;
      }
    }
    if (match) t->response->retry_after = ParseRetryAfter(line.substr(kRetryAfter.size()));
  }
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->cancel != nullptr && t->cancel->load() ? 1 : 0;
}

}  // namespace

absl::StatusOr<Response> KubeClient::Once(Handle& handle, const Request& request,
                                          const std::function<bool(std::string_view)>* on_line,
                                          const std::atomic<bool>* cancel) {
  CURL* c = handle.curl;
  if (c == nullptr) return absl::InternalError("curl_easy_init failed");
  curl_easy_reset(c);  // keeps the handle's live connections
  Response response;
  Transfer t{.response = &response, .curl = c, .on_line = on_line, .cancel = cancel};
  const std::string url = config_.server + request.path;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 30L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 10L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
  // The rate limiter first, then the leadership check, so the check is as late as possible.
  // A write waiting for its token gives up as soon as the replica may no longer write (lost
  // lease, SIGTERM), instead of sleeping out the wait.
  // The time this replica may still write, or the refusal.
  auto budget = [&]() -> absl::StatusOr<absl::Duration> {
    if (!request.write_budget) return absl::InfiniteDuration();
    const std::optional<absl::Duration> left = request.write_budget();
    if (left.has_value() && *left > absl::ZeroDuration()) return *left;
    return absl::FailedPreconditionError(StrCat(request.method, " ", request.path,
                                                ": not sent: this replica may not write"));
  };
  // A watch's `cancel`, or the request's own, ends the wait too.
  const std::atomic<bool>* stop = cancel != nullptr ? cancel : request.cancel;
  for (absl::Duration wait = limiter_.Reserve(absl::Now()); wait > absl::ZeroDuration();) {
    const absl::Duration slice = std::min(wait, absl::Milliseconds(100));
    absl::SleepFor(slice);
    wait -= slice;
    if (stop != nullptr && stop->load()) {
      return absl::AbortedError(StrCat(request.method, " ", request.path, ": not sent: cancelled"));
    }
    if (request.write_budget && wait > absl::ZeroDuration()) {
      if (absl::StatusOr<absl::Duration> left = budget(); !left.ok()) return left.status();
    }
  }
  absl::StatusOr<absl::Duration> left = budget();
  if (!left.ok()) return left.status();
  if (request.precondition) {
    if (absl::Status st = request.precondition(); !st.ok()) {
      return absl::AbortedError(StrCat(request.method, " ", request.path, ": not sent: ", st.message()));
    }
  }
  const absl::Duration timeout = std::min(request.timeout.value_or(options_.timeout), *left);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout))));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnWrite);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  if (cancel != nullptr) {
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnProgress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  }

  // TLS: verification stays on unless the kubeconfig asked otherwise.
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  } else {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  }
  if (!config_.ca_pem.empty()) {
    curl_blob blob{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(),
                   CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
  }
  // An exec plugin's credential, when the kubeconfig user has one, wins over static ones.
  ExecCredential exec_cred;
  if (exec_ != nullptr) {
    absl::StatusOr<ExecCredential> got = exec_->Get();
    if (!got.ok()) return got.status();  // Unauthenticated: not sent
    exec_cred = *std::move(got);
  }
  const std::string& cert_pem = exec_cred.client_cert_pem.empty() ? config_.client_cert_pem : exec_cred.client_cert_pem;
  const std::string& key_pem = exec_cred.client_key_pem.empty() ? config_.client_key_pem : exec_cred.client_key_pem;
  if (!cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(cert_pem.data()), cert_pem.size(), CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(key_pem.data()), key_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
  }

  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  const std::string token = exec_cred.token.empty() ? token_.Token() : exec_cred.token;
  const std::string auth = StrCat("Authorization: Bearer ", token);
  if (!token.empty()) headers = curl_slist_append(headers, auth.c_str());
  const std::string content_type = StrCat("Content-Type: ", request.content_type);
  if (request.method == "GET") {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (request.method != "DELETE" || !request.body.empty()) {
      headers = curl_slist_append(headers, content_type.c_str());
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    }
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);

  requests_sent_.fetch_add(1);
  for (size_t i = 0; i < std::size(kMethods); ++i) {
    if (request.method == kMethods[i]) by_method_[i].fetch_add(1);
  }
  const CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  response.code = static_cast<int>(code);

  if (rc == CURLE_OK || (t.stopped && rc == CURLE_WRITE_ERROR)) return response;
  if (rc == CURLE_ABORTED_BY_CALLBACK && cancel != nullptr && cancel->load()) {
    return absl::CancelledError("cancelled");
  }
  if (on_line != nullptr && t.streaming && rc == CURLE_OPERATION_TIMEDOUT) {
    return response;  // a watch that ran out its time ends like a closed one
  }
  const std::string what = StrCat(request.method, " ", request.path, ": ", curl_easy_strerror(rc));
  if (rc == CURLE_OPERATION_TIMEDOUT) return absl::DeadlineExceededError(what);
  return absl::UnavailableError(what);
}

absl::StatusOr<Response> KubeClient::Do(const Request& request) {
  std::optional<Backoff> backoff;  // made on the first retry: most requests never need it
  const int attempts = request.retry ? options_.max_attempts : 1;
  absl::StatusOr<Response> result;
  bool exec_refreshed = false;
  for (int attempt = 1;; ++attempt) {
    auto handle = Acquire();
    result = Once(*handle, request, nullptr, nullptr);
    const bool not_sent = !result.ok() && (absl::IsFailedPrecondition(result.status()) ||
                                           absl::IsAborted(result.status()) ||
                                           absl::IsUnauthenticated(result.status()));
    if (result.ok() || not_sent) {
      Release(std::move(handle));
    }  // after a transport error the handle's connection is suspect: drop it
    if (not_sent) return result;
    // A plugin's credential the server refuses (revoked, expired early): ask the plugin again,
    // once, as client-go does.
    if (result.ok() && result->code == 401 && exec_ != nullptr && !exec_refreshed) {
      exec_refreshed = true;
      exec_->Invalidate();
      continue;
    }
    const bool retryable = result.ok() ? IsRetryableCode(result->code) : true;
    if (!retryable || attempt >= attempts) return result;
    if (!backoff) backoff.emplace(options_.retry_backoff);
    absl::Duration delay = backoff->Next();
    if (result.ok() && result->retry_after.has_value()) delay = std::max(delay, *result->retry_after);
    spdlog::debug("{} {}: {}; retrying in {}", request.method, request.path,
                  result.ok() ? StrCat("HTTP ", result->code) : std::string(result.status().message()),
                  absl::FormatDuration(delay));
    absl::SleepFor(delay);
  }
}

int64_t KubeClient::requests_sent(std::string_view method) const {
  for (size_t i = 0; i < std::size(kMethods); ++i) {
    if (method == kMethods[i]) return by_method_[i].load();
  }
  return 0;
}

absl::StatusOr<Response> KubeClient::Stream(const Request& request,
                                            const std::function<bool(std::string_view)>& on_line,
                                            const std::atomic<bool>* cancel) {
  Handle handle;
  handle.curl = curl_easy_init();
  return Once(handle, request, &on_line, cancel);
}

}  // namespace tessel::kube
