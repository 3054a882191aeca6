// Watches each TLS connection of an SSL_CTX as a whole, where cpp-httplib only bounds each
// read: a connection that trickles its request a byte at a time resets httplib's read timeout
// with every byte and would hold a worker forever. The guard sees a connection when its
// handshake starts (OpenSSL's info callback, on the worker that serves it) and shuts its
// socket down when
//   - its request headers have not all arrived within header_timeout of that start,
//   - it is still open request_timeout after it (a caller reading the answer slowly),
//   - it has sent more than max_request_bytes of TLS records (a header line that never ends is
//     not buffered past it), or
//   - its source address already holds max_per_source connections.
// Shutting the socket down makes httplib's next read or write fail, so the worker is freed at
// once; the socket is forgotten when OpenSSL frees the connection, before httplib closes it, so
// a reused descriptor is never touched.
//
//   auto guard = ConnectionGuard::Attach(https->ssl_context(), {.header_timeout = ...});
//   server.set_pre_routing_handler([&](const Request& req, Response&) {
//     guard->HeadersRead(req.remote_addr, req.remote_port); ... });
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tessel::server {

class ConnectionGuard {
 public:
  struct Options {
    absl::Duration header_timeout = absl::Seconds(5);
    absl::Duration request_timeout = absl::Seconds(30);
    size_t max_request_bytes = 128 * 1024;
    size_t max_per_source = 8;
  };
  // Installs the callbacks on `ctx` (one guard per context) and starts the watcher thread. The
  // guard must outlive every connection of `ctx`.
  static std::unique_ptr<ConnectionGuard> Attach(SSL_CTX* ctx, Options options);
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  // The request of the connection from ip:port has been read whole (its headers, and no body).
  void HeadersRead(std::string_view ip, int port);
  // Connections shut down early so far, for tests and logs.
  int64_t shut_down() const;

 private:
  struct Connection;
  explicit ConnectionGuard(Options options);
  static void OnInfo(const SSL* ssl, int where, int ret);
  static void OnMessage(int write_p, int version, int content_type, const void* buf, size_t len, SSL* ssl,
                        void* arg);
  static void OnFree(void* parent, void* ptr, CRYPTO_EX_DATA* ad, int idx, long argl, void* argp);
  void Opened(SSL* ssl);
  void Forget(Connection* c);
  void ShutDown(Connection& c, const char* why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Watch();

  const Options options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Connection*, std::unique_ptr<Connection>> open_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, size_t> per_source_ ABSL_GUARDED_BY(mu_);
  int64_t shut_down_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watcher_;
};

}  // namespace tessel::server
