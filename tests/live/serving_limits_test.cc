// The endpoints against hostile and unlucky callers (ServingLimits, ConnectionGuard, ProbeServer,
// DelegatedAuthOptions): a connection trickling its request is closed whatever it trickles; a
// source holds a bounded number of connections; the probe port answers while trickling clients
// hold the HTTPS port and the probe port itself; a body is refused unread on every method; a
// header that never ends is cut off; a flood of unknown tokens is answered 429 beyond its
// source's budget while a token known valid is still reviewed.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/ssl.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/synchronization/notification.h"
#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "raw_tls_client.h"
#include "scheduler/kube/delegated_auth.h"
#include "scheduler/server/http_server.h"
#include "scheduler/server/probe_server.h"
#include "scheduler/server/serving_cert.h"

namespace tessel::kube {
namespace serving_limits_test {

using nlohmann::json;
using testing::Connect;
using testing::TlsConnection;

int64_t RssKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

struct Https {
  explicit Https(server::ServingLimits limits) {
    dir = std::filesystem::temp_directory_path() / ("tessel-limits-test-" + std::to_string(getpid()));
    absl::StatusOr<server::ServingCert> cert = server::ServingCertFor({.cert_dir = dir.string()});
    REQUIRE(cert.ok());
    server = std::make_unique<server::HttpServer>(
        server::HttpServerOptions{.bind_address = "127.0.0.1", .port = 0, .tls = *cert, .limits = limits},
        &registry, [] { return server::ReadyState{.ready = true}; });
    REQUIRE(server->Start().ok());
  }
  ~Https() {
    server->Stop();
    std::filesystem::remove_all(dir);
  }
  std::filesystem::path dir;
  server::MetricsRegistry registry;
  std::unique_ptr<server::HttpServer> server;
};

TEST_CASE("a TLS connection trickling its request is closed at its header deadline", "[serving]") {
  Https https({.header_timeout = absl::Seconds(1), .read_timeout = absl::Seconds(2)});
  TlsConnection slow(https.server->port());
  REQUIRE(slow.handshaken());
  // One byte every half second: each within the read timeout, which it resets every time.
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(200, 'a');
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0};
  std::thread trickler([&] {
    for (char c : request) {
      if (stop || !slow.Send(std::string_view(&c, 1))) return;
      sent += 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  // The server closes it (its next read fails) long before the request could end.
  bool timed_out = false;
  const std::string reply = slow.Reply(&timed_out);
  stop = true;
  trickler.join();
  INFO("bytes trickled before the close: " << sent);
  CHECK_FALSE(timed_out);
  CHECK(reply.empty());
}

TEST_CASE("a source holds a bounded number of TLS connections", "[serving]") {
  Https https({.header_timeout = absl::Seconds(30), .max_connections_per_source = 4});
  std::vector<std::unique_ptr<TlsConnection>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<TlsConnection>(https.server->port(), "127.0.0.2"));
    REQUIRE(held.back()->handshaken());
  }
  TlsConnection fifth(https.server->port(), "127.0.0.2");
  CHECK_FALSE(fifth.handshaken());
  // Another address is served.
  TlsConnection other(https.server->port(), "127.0.0.1");
  REQUIRE(other.handshaken());
  REQUIRE(other.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  CHECK_THAT(other.Reply(), Catch::StartsWith("HTTP/1.1 200"));
}

TEST_CASE("the probe port answers while trickling clients hold it and the HTTPS port", "[serving]") {
  Https https({});
  server::ProbeServer probes({.bind_address = "127.0.0.1", .port = 0}, [] {
    return server::ReadyState{.ready = false, .reason = "informers not synced"};
  });
  REQUIRE(probes.Start().ok());
  // 40 connections on each port that have sent part of a request and wait.
  std::vector<std::unique_ptr<TlsConnection>> on_https;
  std::vector<int> on_probe;
  for (int i = 0; i < 40; ++i) {
    on_https.push_back(std::make_unique<TlsConnection>(https.server->port(), "127.0.0.2"));
    (void)on_https.back()->Send("GET /heal");
    const int fd = Connect(probes.port(), "127.0.0.2");
    REQUIRE(fd >= 0);
    (void)::send(fd, "GET /heal", 9, MSG_NOSIGNAL);
    on_probe.push_back(fd);
  }
  int healthy = 0, unready = 0;
  for (int i = 0; i < 5; ++i) {
    httplib::Client probe("127.0.0.1", probes.port());
    probe.set_connection_timeout(5);
    probe.set_read_timeout(5);
    auto health = probe.Get("/healthz");
    healthy += health && health->status == 200 && health->body == "ok";
    auto ready = probe.Get("/readyz");
    unready += ready && ready->status == 503 && ready->body == "not ready: informers not synced";
  }
  CHECK(healthy == 5);
  CHECK(unready == 5);
  for (int fd : on_probe) ::close(fd);
  probes.Stop();
}

TEST_CASE("probe requests: only GET of the probe paths", "[serving]") {
  auto ready = [] { return server::ReadyState{.ready = true}; };
  CHECK_THAT(server::ProbeResponse("GET /healthz HTTP/1.1\r\n\r\n", ready), Catch::StartsWith("HTTP/1.1 200 OK"));
  CHECK_THAT(server::ProbeResponse("GET /readyz?verbose HTTP/1.1\r\n\r\n", ready), Catch::StartsWith("HTTP/1.1 200 OK"));
  CHECK_THAT(server::ProbeResponse("POST /healthz HTTP/1.1\r\n\r\n", ready), Catch::StartsWith("HTTP/1.1 405"));
  CHECK_THAT(server::ProbeResponse("GET /metrics HTTP/1.1\r\n\r\n", ready), Catch::StartsWith("HTTP/1.1 404"));
  CHECK_THAT(server::ProbeResponse("garbage\r\n\r\n", ready), Catch::StartsWith("HTTP/1.1 400"));
}

TEST_CASE("a body is refused unread on every method, and a header that never ends is cut off", "[serving]") {
  Https https({});
  const int64_t rss_before = RssKib();
  const std::string chunk(1 << 20, 'x');
  for (const char* method : {"GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    TlsConnection c(https.server->port());
    REQUIRE(c.handshaken());
    REQUIRE(c.Send(std::string(method) + " /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 200000000\r\n\r\n"));
    for (int i = 0; i < 64 && c.Send(chunk); ++i) {
    }
    const std::string reply = c.Reply();
    INFO(method << ": " << reply);
    CHECK((reply.empty() || reply.rfind("HTTP/1.1 413", 0) == 0));
  }
  {
    TlsConnection c(https.server->port());
    REQUIRE(c.handshaken());
    REQUIRE(c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Endless: "));
    int sent_mib = 0;
    while (sent_mib < 256 && c.Send(chunk)) ++sent_mib;
    INFO("header MiB the server took: " << sent_mib);
    CHECK(sent_mib < 64);
    CHECK(c.Reply().rfind("HTTP/1.1 200", 0) != 0);
  }
  const int64_t growth_mib = (RssKib() - rss_before) / 1024;
  INFO("RSS grew " << growth_mib << " MiB");
  CHECK(growth_mib < 32);
}

TEST_CASE("a huge body on plain HTTP is refused unread", "[serving]") {
  server::MetricsRegistry registry;
  server::HttpServer http({.bind_address = "127.0.0.1", .port = 0}, &registry,
                          [] { return server::ReadyState{.ready = true}; });
  REQUIRE(http.Start().ok());
  const int64_t rss_before = RssKib();
  const int fd = Connect(http.port());
  REQUIRE(fd >= 0);
  const std::string head = "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1100000000\r\n\r\n";
  REQUIRE(::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size()));
  const std::string chunk(1 << 20, 'x');
  for (int i = 0; i < 256; ++i) {
    if (::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) <= 0) break;  // answered and closed
  }
  char reply[256] = {};
  const ssize_t got = ::recv(fd, reply, sizeof reply - 1, 0);
  ::close(fd);
  const int64_t growth_mib = (RssKib() - rss_before) / 1024;
  INFO("RSS grew " << growth_mib << " MiB; reply: " << reply);
  CHECK(growth_mib < 32);
  if (got > 0) CHECK_THAT(std::string(reply), Catch::StartsWith("HTTP/1.1 413"));
  http.Stop();
}

// The API server's view: "good-*" tokens are users allowed everything; others unknown.
struct ReviewApi {
  std::atomic<int> token_reviews{0};
  testing::FakeApiServer api{[this](const testing::FakeApiServer::Call& call, httplib::Response& res) {
    const json body = json::parse(call.body);
    if (call.line() == "POST /apis/authentication.k8s.io/v1/tokenreviews") {
      token_reviews += 1;
      const std::string token = body["spec"]["token"];
      json status = {{"authenticated", false}};
      if (token.rfind("good-", 0) == 0) status = {{"authenticated", true}, {"user", {{"username", token}}}};
      res.set_content(json{{"status", status}}.dump(), "application/json");
      return;
    }
    if (call.line() == "POST /apis/authorization.k8s.io/v1/subjectaccessreviews") {
      res.set_content(json{{"status", {{"allowed", true}}}}.dump(), "application/json");
      return;
    }
    res.status = 404;
  }};
  std::unique_ptr<KubeClient> client = api.Client({.qps = 0, .max_attempts = 1});
};

TEST_CASE("a flood of unknown tokens spends its source's budget, not a known token's", "[serving]") {
  ReviewApi fake;
  ManualClock clock(absl::FromUnixSeconds(1'700'000'000));
  DelegatedAuthorizer auth(fake.client.get(), &clock,
                           {.reviews_per_second_per_source = 2, .review_burst_per_source = 5,
                            .reviews_per_second = 5, .review_burst = 10});
  // Prometheus, before the flood: reviewed and cached.
  CHECK(auth.Authorize("good-prometheus", "get", "/metrics", "10.0.0.9").http_status == 200);

  std::map<int, int> answers;
  for (int i = 0; i < 100; ++i) {
    answers[auth.Authorize("random-" + std::to_string(i), "get", "/metrics", "10.6.6.6").http_status]++;
  }
  CHECK(answers[401] == 5);  // the source's burst: reviewed, not authenticated
  CHECK(answers[429] == 95);  // the rest at once, unreviewed
  CHECK(fake.token_reviews == 6);
  // Refused tokens are remembered briefly: asking again costs nothing.
  CHECK(auth.Authorize("random-0", "get", "/metrics", "10.6.6.6").http_status == 401);
  CHECK(fake.token_reviews == 6);

  // A flood from many addresses spends the budget shared by unknown tokens...
  for (int i = 0; i < 20; ++i) {
    (void)auth.Authorize("spread-" + std::to_string(i), "get", "/metrics", "10.7.0." + std::to_string(i));
  }
  CHECK(auth.Authorize("good-newcomer", "get", "/metrics", "10.0.0.10").http_status == 429);
  // ... but Prometheus's token, known valid, is reviewed again once its answer expires.
  clock.Advance(absl::Seconds(11));
  for (int i = 0; i < 200; ++i) {
    (void)auth.Authorize("late-" + std::to_string(i), "get", "/metrics", "10.8.0." + std::to_string(i % 50));
  }
  const int before = fake.token_reviews;
  CHECK(auth.Authorize("good-prometheus", "get", "/metrics", "10.0.0.9").http_status == 200);
  CHECK(fake.token_reviews == before + 1);
}

}  // namespace serving_limits_test
}  // namespace tessel::kube
