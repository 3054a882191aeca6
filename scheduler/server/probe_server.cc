// One polling thread for the probe port (see probe_server.h).
#include "scheduler/server/probe_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <list>
#include <vector>

#include "absl/time/clock.h"
#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"

namespace tessel::server {
namespace {

std::string Answer(int status, std::string_view reason, std::string_view body) {
  return StrCat("HTTP/1.1 ", status, " ", reason, "\r\nContent-Type: text/plain\r\nContent-Length: ",
                body.size(), "\r\nConnection: close\r\n\r\n", body);
}

struct Connection {
  int fd = -1;
  absl::Time deadline;
  std::string in;
  std::string out;  // the answer, while it is being written
  size_t written = 0;
};

}  // namespace

std::string ProbeResponse(std::string_view request, const std::function<ReadyState()>& readiness) {
  const size_t line_end = request.find("\r\n");
  const std::string_view line = request.substr(0, line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return Answer(400, "Bad Request", "bad request line\n");
  const std::string_view method = line.substr(0, sp1);
  std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  if (method != "GET" && method != "HEAD") return Answer(405, "Method Not Allowed", "only GET\n");
  if (path == "/healthz" || path == "/livez") return Answer(200, "OK", "ok");
  if (path == "/readyz") {
    const ReadyState s = readiness ? readiness() : ReadyState{.ready = true};
    if (s.ready) return Answer(200, "OK", "ok");
    return Answer(503, "Service Unavailable", StrCat("not ready: ", s.reason));
  }
  return Answer(404, "Not Found", "only /healthz, /livez and /readyz are served here\n");
}

ProbeServer::ProbeServer(ProbeServerOptions options, std::function<ReadyState()> readiness)
    : options_(std::move(options)), readiness_(std::move(readiness)) {}

ProbeServer::~ProbeServer() { Stop(); }

absl::Status ProbeServer::Start() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(options_.port);
  if (::getaddrinfo(options_.bind_address.c_str(), service.c_str(), &hints, &found) != 0 || found == nullptr) {
    return absl::InvalidArgumentError(StrCat("probe port: cannot use the address ", options_.bind_address));
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int yes = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  const bool bound = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, 128) == 0;
  ::freeaddrinfo(found);
  if (!bound) {
    if (fd >= 0) ::close(fd);
    return absl::UnavailableError(StrCat("cannot bind ", options_.bind_address, ":", options_.port, " (probes)"));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  listen_fd_ = fd;
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  thread_ = std::thread([this] { Loop(); });
  spdlog::info("serving the probes (/healthz, /livez, /readyz) on http://{}:{}", options_.bind_address, port_);
  return absl::OkStatus();
}

void ProbeServer::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof one);
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

void ProbeServer::Loop() {
  std::list<Connection> open;  // oldest first
  std::vector<pollfd> fds;
  std::vector<std::list<Connection>::iterator> of;  // fds[i + 2] belongs to of[i]
  char buf[4096];
  for (;;) {
    fds.assign({{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}});
    of.clear();
    absl::Time next = absl::InfiniteFuture();
    for (auto it = open.begin(); it != open.end(); ++it) {
      fds.push_back({it->fd, static_cast<short>(it->out.empty() ? POLLIN : POLLOUT), 0});
      of.push_back(it);
      next = std::min(next, it->deadline);
    }
    int timeout_ms = -1;
    if (next != absl::InfiniteFuture()) {
      timeout_ms = static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(next - absl::Now())) + 1);
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      spdlog::error("probe port: poll failed: {}", errno);
      break;
    }
    if (fds[1].revents != 0) break;  // Stop()
    const absl::Time now = absl::Now();
    std::vector<std::list<Connection>::iterator> done;
    for (size_t i = 0; i < of.size(); ++i) {
      Connection& c = *of[i];
      const short ev = fds[i + 2].revents;
      if (ev == 0) {
        if (now >= c.deadline) done.push_back(of[i]);
        continue;
      }
      if (c.out.empty()) {
        const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
        if (n <= 0) {
          if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
          done.push_back(of[i]);
          continue;
        }
        c.in.append(buf, static_cast<size_t>(n));
        if (c.in.find("\r\n\r\n") != std::string::npos) {
          c.out = ProbeResponse(c.in, readiness_);
        } else if (c.in.size() > options_.max_request_bytes) {
          c.out = Answer(431, "Request Header Fields Too Large", "request too large\n");
        }
        if (c.out.empty()) continue;
      }
      const ssize_t n = ::send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n > 0) c.written += static_cast<size_t>(n);
      if (n <= 0 || c.written == c.out.size()) done.push_back(of[i]);
    }
    for (auto it : done) {
      ::shutdown(it->fd, SHUT_WR);
      ::close(it->fd);
      open.erase(it);
    }
    if (fds[0].revents & POLLIN) {
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN, or out of descriptors: the next round tries again
        if (open.size() >= options_.max_connections) {
          ::close(open.front().fd);
          open.pop_front();
        }
        open.push_back({.fd = fd, .deadline = absl::Now() + options_.header_timeout});
      }
    }
  }
  for (Connection& c : open) ::close(c.fd);
}

}  // namespace tessel::server
