// HTTP endpoints on cpp-httplib.
#include "scheduler/server/http_server.h"

#include <httplib.h>

#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"

namespace tessel::server {

HttpServer::HttpServer(HttpServerOptions options, const MetricsRegistry* registry,
                       std::function<ReadyState()> readiness)
    : options_(std::move(options)), registry_(registry), readiness_(std::move(readiness)) {}

HttpServer::~HttpServer() { Stop(); }

absl::Status HttpServer::Start() {
  server_ = std::make_unique<httplib::Server>();
  server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
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
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
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
  spdlog::info("serving /healthz, /readyz and /metrics on {}:{}", options_.bind_address, port_);
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tessel::server
