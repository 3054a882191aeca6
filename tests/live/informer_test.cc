// The informer against a fake API server (cpp-httplib): list, watch from the list's
// resourceVersion, bookmarks move the resourceVersion, 410 Gone relists and the relist turns
// into exact adds/updates/deletes; an absent CRD counts as synced. Also the client's retries.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <atomic>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "scheduler/kube/informer.h"

namespace tessel::kube {
namespace informer_test {

using nlohmann::json;

json PodJson(const std::string& name, const std::string& rv) {
  return {{"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}}};
}

class Recorder final : public InformerHandler {
 public:
  void OnAdd(const json& o) override { Push("add " + ObjectKey(o)); }
  void OnUpdate(const json& o) override { Push("update " + ObjectKey(o)); }
  void OnDelete(const std::string& key, const json*) override { Push("delete " + key); }
  std::vector<std::string> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  void Push(std::string e) {
    absl::MutexLock lock(&mu_);
    events_.push_back(std::move(e));
  }
  absl::Mutex mu_;
  std::vector<std::string> events_;
};

struct FakeServer {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::atomic<bool> closing{false};
  absl::Mutex mu;
  std::vector<std::string> watch_rvs;
  int lists = 0;
  int flaky = 0;  // answers 503 this many times first

  FakeServer() {
    server.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      if (!req.has_param("watch")) {
        absl::MutexLock lock(&mu);
        ++lists;
        json list = {{"kind", "PodList"}, {"metadata", {{"resourceVersion", lists == 1 ? "10" : "20"}}}};
        list["items"] = lists == 1 ? json::array({PodJson("a", "1"), PodJson("b", "2")})
                                   : json::array({PodJson("a", "11"), PodJson("c", "12"), PodJson("d", "14")});
        res.set_content(list.dump(), "application/json");
        return;
      }
      std::string rv = req.get_param_value("resourceVersion");
      size_t n;
      {
        absl::MutexLock lock(&mu);
        watch_rvs.push_back(rv);
        n = watch_rvs.size();
      }
      CHECK(req.get_param_value("allowWatchBookmarks") == "true");
      std::vector<json> events;
      if (n == 1) {
        events = {{{"type", "MODIFIED"}, {"object", PodJson("a", "11")}},
                  {{"type", "ADDED"}, {"object", PodJson("c", "12")}},
                  {{"type", "MODIFIED"}, {"object", PodJson("c", "12")}},  // a duplicate
                  {{"type", "BOOKMARK"}, {"object", {{"metadata", {{"resourceVersion", "13"}}}}}}};
      } else if (n == 2) {
        events = {{{"type", "ERROR"},
                   {"object", {{"kind", "Status"}, {"code", 410}, {"message", "too old resource version"}}}}};
      }
      const bool hold = n >= 3;
      res.set_chunked_content_provider(
          "application/json", [this, events, hold, sent = false](size_t, httplib::DataSink& sink) mutable {
            if (!sent) {
              for (const json& e : events) {
                std::string line = e.dump() + "\n";
                sink.write(line.data(), line.size());
              }
              sent = true;
            }
            if (hold && !closing.load()) {
              std::this_thread::sleep_for(std::chrono::milliseconds(20));
              return true;
            }
            sink.done();
            return true;
          });
    });
    server.Get("/apis/example.io/v1/things", [](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content(R"({"kind":"Status","code":404,"message":"the server could not find the requested resource"})",
                      "application/json");
    });
    server.Get("/flaky", [this](const httplib::Request&, httplib::Response& res) {
      absl::MutexLock lock(&mu);
      if (flaky > 0) {
        --flaky;
        res.status = 503;
        return;
      }
      res.set_content("{}", "application/json");
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    // stop() before the loop runs would be lost (cpp-httplib): wait until it serves.
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    closing.store(true);
    server.stop();
    thread.join();
  }
};

std::unique_ptr<KubeClient> ClientFor(const FakeServer& s) {
  auto c = KubeClient::New({.server = "http://127.0.0.1:" + std::to_string(s.port)},
                           {.qps = 0, .retry_backoff = {.initial = absl::Milliseconds(5),
                                                        .max = absl::Milliseconds(20)}});
  REQUIRE(c.ok());
  return *std::move(c);
}

template <typename F>
bool WaitFor(F f) {
  for (int i = 0; i < 500; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_CASE("informer: list, watch, bookmark, 410 relist with exact deletes") {
  FakeServer server;
  auto client = ClientFor(server);
  Recorder rec;
  Informer informer(client.get(), {.name = "pods", .path = "/api/v1/pods"}, &rec,
                    {.backoff = {.initial = absl::Milliseconds(5), .max = absl::Milliseconds(20)}});
  informer.Start();
  REQUIRE(WaitFor([&] { return rec.events().size() >= 6; }));
  REQUIRE(WaitFor([&] {
    absl::MutexLock lock(&server.mu);
    return server.watch_rvs.size() >= 3;
  }));
  informer.Stop();
  CHECK(informer.HasSynced());
  // a and b listed; a modified and c added by the watch (the duplicate MODIFIED is dropped);
  // the relist after 410 adds d and deletes b, and does not re-deliver a or c.
  CHECK(rec.events() == std::vector<std::string>{"add ns/a", "add ns/b", "update ns/a", "add ns/c",
                                                 "add ns/d", "delete ns/b"});
  absl::MutexLock lock(&server.mu);
  // Watches resume from the list (10), from the bookmark (13), then from the relist (20).
  CHECK(server.watch_rvs == std::vector<std::string>{"10", "13", "20"});
  CHECK(server.lists == 2);
  // Every watch the server received was counted when it left (the metric tests wait on).
  CHECK(informer.watches_sent() == static_cast<int64_t>(server.watch_rvs.size()));
}

TEST_CASE("informer: an absent optional resource counts as synced") {
  FakeServer server;
  auto client = ClientFor(server);
  Recorder rec;
  Informer informer(client.get(), {.name = "things", .path = "/apis/example.io/v1/things", .optional = true},
                    &rec);
  informer.Start();
  REQUIRE(WaitFor([&] { return informer.HasSynced(); }));
  CHECK(informer.absent());
  informer.Stop();
  CHECK(informer.watches_sent() == 0);  // no list, no watch
  CHECK(rec.events().empty());
}

TEST_CASE("client: retries 5xx with backoff and gives up after max attempts") {
  FakeServer server;
  auto client = ClientFor(server);
  {
    absl::MutexLock lock(&server.mu);
    server.flaky = 2;
  }
  auto ok = client->Do({.path = "/flaky"});
  REQUIRE(ok.ok());
  CHECK(ok->code == 200);
  {
    absl::MutexLock lock(&server.mu);
    server.flaky = 100;
  }
  auto failed = client->Do({.path = "/flaky"});
  REQUIRE(failed.ok());
  CHECK(failed->code == 503);
  {
    absl::MutexLock lock(&server.mu);
    CHECK(server.flaky == 100 - 5);  // 5 attempts by default
  }
  // No server at all: a connection error after retries.
  auto dead = KubeClient::New({.server = "http://127.0.0.1:1"},
                              {.qps = 0, .max_attempts = 2,
                               .retry_backoff = {.initial = absl::Milliseconds(1), .max = absl::Milliseconds(2)}});
  REQUIRE(dead.ok());
  auto none = (*dead)->Do({.path = "/"});
  CHECK(absl::IsUnavailable(none.status()));
}

}  // namespace informer_test
}  // namespace tessel::kube
