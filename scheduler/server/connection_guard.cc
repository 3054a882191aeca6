// Deadlines and budgets per TLS connection (see connection_guard.h).
#include "scheduler/server/connection_guard.h"

#include <netdb.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdlib>

#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace tessel::server {

struct ConnectionGuard::Connection {
  ConnectionGuard* guard = nullptr;
  int fd = -1;
  std::string ip;
  int port = 0;
  absl::Time started;
  bool headers_read = false;
  bool shut = false;
  std::atomic<size_t> bytes{0};
};

namespace {

// The connection's record on its SSL: a lookup slot, and the same pointer under a slot whose
// free callback forgets it when OpenSSL frees the SSL.
int ConnectionIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

int GuardIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// The peer's numeric address as cpp-httplib writes Request::remote_addr.
bool PeerOf(int fd, std::string* ip, int* port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  char host[NI_MAXHOST];
  char service[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, service, sizeof service,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  *ip = host;
  *port = std::atoi(service);
  return true;
}

}  // namespace

std::unique_ptr<ConnectionGuard> ConnectionGuard::Attach(SSL_CTX* ctx, Options options) {
  std::unique_ptr<ConnectionGuard> guard(new ConnectionGuard(options));
  SSL_CTX_set_ex_data(ctx, GuardIndex(), guard.get());
  SSL_CTX_set_info_callback(ctx, &ConnectionGuard::OnInfo);
  SSL_CTX_set_msg_callback(ctx, &ConnectionGuard::OnMessage);
  return guard;
}

ConnectionGuard::ConnectionGuard(Options options) : options_(options) {
  watcher_ = std::thread([this] { Watch(); });
}

ConnectionGuard::~ConnectionGuard() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  watcher_.join();
}

void ConnectionGuard::OnInfo(const SSL* ssl, int where, int) {
  if ((where & SSL_CB_HANDSHAKE_START) == 0) return;
  auto* guard = static_cast<ConnectionGuard*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), GuardIndex()));
  if (guard != nullptr && SSL_get_ex_data(ssl, ConnectionIndex()) == nullptr) guard->Opened(const_cast<SSL*>(ssl));
}

void ConnectionGuard::Opened(SSL* ssl) {
  auto c = std::make_unique<Connection>();
  c->guard = this;
  c->fd = SSL_get_fd(ssl);
  c->started = absl::Now();
  if (c->fd < 0 || !PeerOf(c->fd, &c->ip, &c->port)) return;
  Connection* raw = c.get();
  static const int free_index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, &ConnectionGuard::OnFree);
  SSL_set_ex_data(ssl, ConnectionIndex(), raw);
  SSL_set_ex_data(ssl, free_index, raw);
  absl::MutexLock lock(&mu_);
  size_t& from_source = per_source_[raw->ip];
  from_source += 1;
  open_[raw] = std::move(c);
  if (from_source > options_.max_per_source) ShutDown(*raw, "too many connections from its address");
}

void ConnectionGuard::OnMessage(int write_p, int, int content_type, const void* buf, size_t len, SSL* ssl, void*) {
  if (write_p != 0 || content_type != SSL3_RT_HEADER || len < 5) return;
  auto* c = static_cast<Connection*>(SSL_get_ex_data(ssl, ConnectionIndex()));
  if (c == nullptr) return;
  const auto* header = static_cast<const unsigned char*>(buf);
  const size_t record = (static_cast<size_t>(header[3]) << 8) | header[4];
  if (c->bytes.fetch_add(record + 5) + record + 5 > c->guard->options_.max_request_bytes) {
    absl::MutexLock lock(&c->guard->mu_);
    c->guard->ShutDown(*c, "sent more than its request may");
  }
}

void ConnectionGuard::OnFree(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  if (ptr == nullptr) return;
  auto* c = static_cast<Connection*>(ptr);
  c->guard->Forget(c);
}

void ConnectionGuard::Forget(Connection* c) {
  absl::MutexLock lock(&mu_);
  auto it = per_source_.find(c->ip);
  if (it != per_source_.end() && --it->second == 0) per_source_.erase(it);
  open_.erase(c);
}

void ConnectionGuard::HeadersRead(std::string_view ip, int port) {
  absl::MutexLock lock(&mu_);
  for (auto& [raw, c] : open_) {
    if (c->port == port && c->ip == ip) c->headers_read = true;
  }
}

int64_t ConnectionGuard::shut_down() const {
  absl::MutexLock lock(&mu_);
  return shut_down_;
}

void ConnectionGuard::ShutDown(Connection& c, const char* why) {
  if (c.shut) return;
  c.shut = true;
  shut_down_ += 1;
  ::shutdown(c.fd, SHUT_RDWR);
  spdlog::debug("closed the connection from {}:{}: {}", c.ip, c.port, why);
}

void ConnectionGuard::Watch() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    const bool stop = mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(100));
    if (stop) return;
    const absl::Time now = absl::Now();
    for (auto& [raw, c] : open_) {
      if (!c->headers_read && now - c->started > options_.header_timeout) {
        ShutDown(*c, "its request headers did not arrive in time");
      } else if (now - c->started > options_.request_timeout) {
        ShutDown(*c, "it outlived the request deadline");
      }
    }
  }
}

}  // namespace tessel::server
