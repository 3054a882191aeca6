// The kubelet's probes, on a port of their own (--probe-port) that no caller can starve:
// plain HTTP, GET /healthz, /livez and /readyz only, served by one thread that polls every
// connection at once, so a connection that trickles its request holds no worker; it only
// holds a slot, for at most header_timeout. At most max_connections are open: a new one
// closes the oldest, so a flood of connections cannot shut the kubelet out either. A request
// is read up to max_request_bytes (its headers; a body is never read), answered, and its
// connection closed.
//
//   ProbeServer probes({.bind_address = "0.0.0.0", .port = 10261}, [&] { return ReadyState{...}; });
//   RETURN_IF_ERROR(probes.Start());
//   ...
//   probes.Stop();
#pragma once

#include <functional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "scheduler/server/http_server.h"

namespace tessel::server {

struct ProbeServerOptions {
  std::string bind_address = "0.0.0.0";
  int port = 10261;  // 0 picks a free port (see port())
  size_t max_connections = 256;
  absl::Duration header_timeout = absl::Seconds(2);
  size_t max_request_bytes = 4096;
};

class ProbeServer {
 public:
  ProbeServer(ProbeServerOptions options, std::function<ReadyState()> readiness);
  ~ProbeServer();
  ProbeServer(const ProbeServer&) = delete;
  ProbeServer& operator=(const ProbeServer&) = delete;

  // Binds the port (failing at once if it is taken) and serves on a thread of its own.
  absl::Status Start();
  void Stop();
  int port() const { return port_; }

 private:
  void Loop();

  ProbeServerOptions options_;
  std::function<ReadyState()> readiness_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: Stop() writes it
  int port_ = 0;
  std::thread thread_;
};

// The answer to one probe request (its request line and headers): the whole HTTP response.
// Exposed for tests.
std::string ProbeResponse(std::string_view request, const std::function<ReadyState()>& readiness);

}  // namespace tessel::server
