// The scheduler's HTTP endpoints (cpp-httplib, plain HTTP):
//   /healthz  200 "ok" while the process is alive and serving
//   /readyz   200 when the informers have synced and, with leader election, the leader is
//             known; 503 with the reason otherwise
//   /metrics  Prometheus text format (MetricsRegistry::Render)
//
//   HttpServer server({.bind_address = "0.0.0.0", .port = 10251}, &registry,
//                     [&] { return ReadyState{...}; });
//   RETURN_IF_ERROR(server.Start());
//   ...
//   server.Stop();
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "scheduler/server/metrics.h"

namespace httplib {
class Server;
}

namespace tessel::server {

struct HttpServerOptions {
  std::string bind_address = "0.0.0.0";
  int port = 10251;  // 0 picks a free port (see port())
};

struct ReadyState {
  bool ready = false;
  std::string reason;  // why not, for the 503 body
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, const MetricsRegistry* registry,
             std::function<ReadyState()> readiness);
  ~HttpServer();

  // Binds the port (failing at once if it is taken) and serves on a thread of its own.
  absl::Status Start();
  void Stop();
  int port() const { return port_; }

 private:
  HttpServerOptions options_;
  const MetricsRegistry* registry_;
  std::function<ReadyState()> readiness_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tessel::server
