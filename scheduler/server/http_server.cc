// HTTP endpoints on cpp-httplib.
#include "scheduler/server/http_server.h"

#include <httplib.h>
#include <openssl/ssl.h>

#include <algorithm>

#include "scheduler/server/connection_guard.h"
#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"

namespace tessel::server {

std::string ResourceAccess::Describe() const {
  return StrCat(verb, " ", group, "/", resource, subresource.empty() ? "" : "/", subresource,
                namespace_.empty() ? "" : " in namespace ", namespace_);
}

AuthDecision RequestAuthorizer::AuthorizeResource(std::string_view, const ResourceAccess& access, std::string_view) {
  return {403, StrCat("Forbidden: ", access.Describe(), " is not authorized here")};
}

AuthDecision RequestAuthorizer::Authenticate(std::string_view bearer_token, std::string_view) {
  if (bearer_token.empty()) return {401, "Unauthorized: a bearer token is required"};
  return {200, ""};
}


std::unique_ptr<ConnectionGuard> ApplyServingLimits(httplib::Server& server, const ServingLimits& limits,
                                                    SSL_CTX* tls) {
  std::unique_ptr<ConnectionGuard> guard;
  if (tls != nullptr) {
    guard = ConnectionGuard::Attach(tls, {.header_timeout = limits.header_timeout,
                                          .request_timeout = limits.request_timeout,
                                          .max_request_bytes = limits.max_request_bytes,
                                          .max_per_source = limits.max_connections_per_source});
  }
  const size_t workers = std::max<size_t>(limits.workers, 1);
  server.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  server.set_payload_max_length(limits.max_body_bytes);
  auto set = [](absl::Duration d, auto&& setter) {
    const int64_t usec = absl::ToInt64Microseconds(d);
    setter(static_cast<time_t>(usec / 1000000), static_cast<time_t>(usec % 1000000));
  };
  set(limits.read_timeout, [&](time_t s, time_t us) { server.set_read_timeout(s, us); });
  set(limits.write_timeout, [&](time_t s, time_t us) { server.set_write_timeout(s, us); });
  // One request per connection: whatever a caller sends after it (a body included) is never read.
  server.set_keep_alive_max_count(1);
  // Before any handler, whatever the method: a body is refused before it is read.
  const size_t max_body = limits.max_body_bytes;
  ConnectionGuard* watch = guard.get();
  server.set_pre_routing_handler([watch, max_body](const httplib::Request& req, httplib::Response& res) {
    if (watch != nullptr) watch->HeadersRead(req.remote_addr, req.remote_port);
    const bool chunked = req.has_header("Transfer-Encoding");
    const std::string length = req.get_header_value("Content-Length");
    const bool numeric = std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!chunked && numeric && length.size() < 19 && req.get_header_value<uint64_t>("Content-Length") <= max_body) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.status = 413;
    res.set_header("Connection", "close");
    res.set_content(StrCat("request body too large: at most ", max_body, " bytes, and not chunked\n"), "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  return guard;
}

HttpServer::HttpServer(HttpServerOptions options, const MetricsRegistry* registry,
                       std::function<ReadyState()> readiness)
    : options_(std::move(options)), registry_(registry), readiness_(std::move(readiness)) {}

HttpServer::~HttpServer() { Stop(); }

namespace {

// The token of an "Authorization: Bearer TOKEN" header, or "".
std::string BearerToken(const httplib::Request& req) {
  const std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (header.size() <= kBearer.size() || header.compare(0, kBearer.size(), kBearer) != 0) return "";
  return header.substr(kBearer.size());
}

}  // namespace

absl::Status HttpServer::Start() {
  if (options_.tls.has_value()) {
    auto https = std::make_unique<httplib::SSLServer>(options_.tls->cert_file.c_str(),
                                                      options_.tls->key_file.c_str());
    if (!https->is_valid()) {
      return absl::InvalidArgumentError(StrCat("cannot serve HTTPS with ", options_.tls->cert_file,
                                               " and ", options_.tls->key_file));
    }
    server_ = std::move(https);
  } else {
    server_ = std::make_unique<httplib::Server>();
  }
  SSL_CTX* tls = nullptr;
  if (options_.tls.has_value()) {
    // No SSLv3, TLS 1.0 or 1.1, whatever OpenSSL's build defaults are.
    tls = static_cast<httplib::SSLServer*>(server_.get())->ssl_context();
    if (SSL_CTX_set_min_proto_version(tls, TLS1_2_VERSION) != 1) {
      return absl::InternalError("cannot set the TLS minimum version to 1.2");
    }
  }
  guard_ = ApplyServingLimits(*server_, options_.limits, tls);
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
  server_->Get("/livez", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    ReadyState s = readiness_ ? readiness_() : ReadyState{.ready = true};
    if (s.ready) {
      res.set_content("ok", "text/plain");
    } else {
      res.status = 503;
      res.set_content(StrCat("not ready: ", s.reason), "text/plain");
    }
  });
  server_->Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    if (options_.metrics_authorizer != nullptr) {
      AuthDecision d =
          options_.metrics_authorizer->Authorize(BearerToken(req), "get", "/metrics", req.remote_addr);
      if (d.http_status != 200) {
        res.status = d.http_status;
        if (d.http_status == 401) res.set_header("WWW-Authenticate", "Bearer");
        res.set_content(d.reason + "\n", "text/plain");
        return;
      }
    }
    res.set_content(registry_->Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.bind_address);
    if (port_ <= 0) {
      return absl::UnavailableError(StrCat("cannot bind ", options_.bind_address, " (any port)"));
    }
  } else {
    if (!server_->bind_to_port(options_.bind_address, options_.port)) {
      return absl::UnavailableError(
          StrCat("cannot bind ", options_.bind_address, ":", options_.port));
    }
    port_ = options_.port;
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // A stop() that comes before the accept loop runs would be lost: wait until it runs.
  for (int i = 0; i < 1000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  spdlog::info("serving /healthz, /readyz and /metrics on {}://{}:{}{}",
               options_.tls ? "https" : "http", options_.bind_address, port_,
               options_.metrics_authorizer ? " (/metrics authorized by the API server)" : "");
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  guard_.reset();  // after the workers: no connection of the context is left
}

}  // namespace tessel::server
