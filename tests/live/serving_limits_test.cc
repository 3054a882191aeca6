// The endpoints against hostile and unlucky callers (ServingLimits, DelegatedAuthOptions): the
// probes answer while stalled TLS handshakes and /metrics requests waiting on the API server
// hold other connections; a huge body is refused without being buffered; an oversized header is
// refused; a flood of unknown tokens is answered 429 beyond the review budget.
#include <catch2/catch.hpp>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/synchronization/notification.h"
#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/delegated_auth.h"
#include "scheduler/server/http_server.h"
#include "scheduler/server/serving_cert.h"

namespace tessel::kube {
namespace {

using nlohmann::json;

// A TCP connection to 127.0.0.1:port (-1 on failure).
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int64_t RssKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// /metrics waits here (as it waits on a TokenReview) until released.
class BlockingAuthorizer final : public server::RequestAuthorizer {
 public:
  server::AuthDecision Authorize(std::string_view, std::string_view, std::string_view) override {
    release.WaitForNotification();
    return {200, ""};
  }
  absl::Notification release;
};

// The kubelet's probe: a new connection, the probe's timeout (1 s, the Deployment allows 5).
bool ProbeAnswers(httplib::SSLClient& client, const std::string& path) {
  auto res = client.Get(path.c_str());
  return res && res->status == 200;
}

TEST_CASE("probes answer while stalled handshakes and slow /metrics calls hold connections", "[serving]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tessel-limits-test-" + std::to_string(getpid()));
  absl::StatusOr<server::ServingCert> cert = server::ServingCertFor({.cert_dir = dir.string()});
  REQUIRE(cert.ok());
  server::MetricsRegistry registry;
  BlockingAuthorizer authorizer;
  server::HttpServer https({.bind_address = "127.0.0.1", .port = 0, .tls = *cert,
                            .metrics_authorizer = &authorizer},
                           &registry, [] { return server::ReadyState{.ready = true}; });
  REQUIRE(https.Start().ok());

  // Four connections that never start their TLS handshake, and four /metrics calls that wait on
  // the authorizer: eight connections held, as many as the reported attack needed twice over.
  std::vector<int> stalled;
  for (int i = 0; i < 4; ++i) {
    const int fd = Connect(https.port());
    REQUIRE(fd >= 0);
    stalled.push_back(fd);
  }
  std::vector<std::thread> scrapers;
  for (int i = 0; i < 4; ++i) {
    scrapers.emplace_back([&] {
      httplib::SSLClient c("127.0.0.1", https.port());
      c.enable_server_certificate_verification(false);
      c.set_read_timeout(30);
      (void)c.Get("/metrics", {{"Authorization", "Bearer slow"}});
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let them take their workers

  int answered = 0;
  for (int i = 0; i < 8; ++i) {
    httplib::SSLClient probe("127.0.0.1", https.port());
    probe.enable_server_certificate_verification(false);
    probe.set_connection_timeout(1);
    probe.set_read_timeout(1);
    probe.set_write_timeout(1);
    answered += ProbeAnswers(probe, i % 2 == 0 ? "/healthz" : "/readyz");
  }
  CHECK(answered == 8);

  authorizer.release.Notify();
  for (std::thread& t : scrapers) t.join();
  for (int fd : stalled) ::close(fd);
  https.Stop();
  std::filesystem::remove_all(dir);
}

TEST_CASE("a huge body is refused unread and an oversized header is refused", "[serving]") {
  server::MetricsRegistry registry;
  server::HttpServer http({.bind_address = "127.0.0.1", .port = 0}, &registry,
                          [] { return server::ReadyState{.ready = true}; });
  REQUIRE(http.Start().ok());

  const int64_t rss_before = RssKib();
  const int fd = Connect(http.port());
  REQUIRE(fd >= 0);
  const std::string head =
      "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
      "Content-Length: 1100000000\r\n\r\n";
  REQUIRE(::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size()));
  // Up to 256 MiB of the announced 1.1 GB, for as long as the server takes it.
  const std::string chunk(1 << 20, 'x');
  int64_t sent = 0;
  for (int i = 0; i < 256; ++i) {
    const ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n <= 0) break;  // the server answered and closed
    sent += n;
  }
  char reply[256] = {};
  const ssize_t got = ::recv(fd, reply, sizeof reply - 1, 0);
  ::close(fd);
  const int64_t growth_mib = (RssKib() - rss_before) / 1024;
  INFO("sent " << sent / (1 << 20) << " MiB; RSS grew " << growth_mib << " MiB; reply: " << reply);
  CHECK(growth_mib < 32);
  if (got > 0) CHECK_THAT(std::string(reply), Catch::StartsWith("HTTP/1.1 413"));

  // A header line of 100 KB: refused, and the server still serves.
  const int big = Connect(http.port());
  REQUIRE(big >= 0);
  const std::string huge_header =
      "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(100 * 1024, 'a') + "\r\n\r\n";
  (void)::send(big, huge_header.data(), huge_header.size(), MSG_NOSIGNAL);
  char big_reply[64] = {};
  const ssize_t big_got = ::recv(big, big_reply, sizeof big_reply - 1, 0);
  ::close(big);
  CHECK_FALSE((big_got > 0 && std::string(big_reply).rfind("HTTP/1.1 200", 0) == 0));

  httplib::Client probe("127.0.0.1", http.port());
  probe.set_read_timeout(1);
  auto res = probe.Get("/healthz");
  REQUIRE(res);
  CHECK(res->status == 200);
  http.Stop();
}

TEST_CASE("a flood of unknown tokens gets 429 beyond the review budget, without reviews", "[serving]") {
  std::atomic<int> reviews{0};
  testing::FakeApiServer api{[&](const testing::FakeApiServer::Call& call, httplib::Response& res) {
    if (call.line() == "POST /apis/authentication.k8s.io/v1/tokenreviews") {
      reviews += 1;
      res.set_content(json{{"status", {{"authenticated", false}}}}.dump(), "application/json");
      return;
    }
    res.status = 404;
  }};
  auto client = api.Client({.qps = 0, .max_attempts = 1});
  ManualClock clock(absl::FromUnixSeconds(1'700'000'000));
  DelegatedAuthorizer auth(client.get(), &clock, {.reviews_per_second = 5, .review_burst = 10});

  std::map<int, int> answers;
  for (int i = 0; i < 100; ++i) answers[auth.Authorize("random-" + std::to_string(i), "get", "/metrics").http_status]++;
  CHECK(answers[401] == 10);  // the burst: reviewed, not authenticated
  CHECK(answers[429] == 90);  // the rest at once, unreviewed
  CHECK(reviews == 10);
  // A refused token is remembered: asking again costs nothing, even with the budget spent.
  CHECK(auth.Authorize("random-0", "get", "/metrics").http_status == 401);
  CHECK(reviews == 10);
  clock.Advance(absl::Seconds(1));  // 5 more reviews
  int reviewed = 0;
  for (int i = 100; i < 120; ++i) reviewed += auth.Authorize("random-" + std::to_string(i), "get", "/metrics").http_status == 401;
  CHECK(reviewed == 5);
  CHECK(reviews == 15);
}

}  // namespace
}  // namespace tessel::kube
