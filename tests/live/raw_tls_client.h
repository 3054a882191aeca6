// Raw clients for the serving tests: a TCP connection from a chosen loopback address, and a TLS
// client on it that sends exactly the bytes a test gives it (a request trickled a byte at a
// time, headers that never end), which cpp-httplib's client cannot.
//
//   testing::TlsConnection slow(port, "127.0.0.2");
//   REQUIRE(slow.handshaken());
//   slow.Send("GET /healthz HTTP/1.1\r\n");
//   CHECK(slow.Reply().empty());  // closed by the server
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>

namespace tessel::kube::testing {

// A TCP connection to 127.0.0.1:port from `source` (-1 on failure).
inline int Connect(int port, const char* source = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{.tv_sec = 30, .tv_usec = 0};  // generous: only a server that never closes misses it
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  // A write the server no longer takes (it answered and went) fails instead of waiting for the
  // kernel's zero-window probes to learn that the peer is gone.
  timeval send{.tv_sec = 5, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send, sizeof send);
  return fd;
}

// A TLS client on a raw socket, so that a test can trickle bytes through it.
class TlsConnection {
 public:
  explicit TlsConnection(int port, const char* source = "127.0.0.1") {
    ctx_ = SSL_CTX_new(TLS_client_method());
    fd_ = Connect(port, source);
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    handshaken_ = fd_ >= 0 && SSL_connect(ssl_) == 1;
  }
  ~TlsConnection() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }
  bool handshaken() const { return handshaken_; }
  bool Send(std::string_view bytes) {
    return SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())) == static_cast<int>(bytes.size());
  }
  // What the server answers first ("" when it closed the connection instead; `timed_out` when
  // it did neither within the socket's 30 s).
  std::string Reply(bool* timed_out = nullptr) {
    char buf[256] = {};
    errno = 0;
    const int n = SSL_read(ssl_, buf, sizeof buf - 1);
    if (timed_out != nullptr) *timed_out = n <= 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    return n > 0 ? std::string(buf, n) : "";
  }

 private:
  SSL_CTX* ctx_;
  SSL* ssl_;
  int fd_;
  bool handshaken_ = false;
};

}  // namespace tessel::kube::testing
