// A programmable fake API server for the live layer's unit tests (cpp-httplib on 127.0.0.1):
// every request is recorded ("METHOD path" and body) and answered by the test's handler.
//
//   FakeApiServer api([](const FakeApiServer::Call& call, httplib::Response& res) {
//     res.status = call.method == "POST" ? 201 : 404;
//   });
//   auto client = api.Client();
//   ... api.Count("POST /api/v1/namespaces/ns/events") ...
#pragma once

#include <httplib.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "scheduler/kube/client.h"

namespace tessel::kube::testing {

class FakeApiServer {
 public:
  struct Call {
    std::string method, path, body;
    std::map<std::string, std::string> params;  // the query
    std::string line() const { return method + " " + path; }
  };
  using Handler = std::function<void(const Call&, httplib::Response&)>;

  explicit FakeApiServer(Handler handler) : handler_(std::move(handler)) {
    auto serve = [this](const httplib::Request& req, httplib::Response& res) {
      Call call{req.method, req.path, req.body, {}};
      for (const auto& [k, v] : req.params) call.params[k] = v;
      {
        absl::MutexLock lock(&mu_);
        calls_.push_back(call);
      }
      handler_(call, res);
    };
    server_.Get(".*", serve);
    server_.Post(".*", serve);
    server_.Put(".*", serve);
    server_.Patch(".*", serve);
    server_.Delete(".*", serve);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the loop runs would be lost (cpp-httplib): wait until it serves.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApiServer() {
    server_.stop();
    thread_.join();
  }

  // A client with no rate limit and fast retries.
  std::unique_ptr<KubeClient> Client(ClientOptions options = {
                                         .qps = 0,
                                         .retry_backoff = {.initial = absl::Milliseconds(1),
                                                           .max = absl::Milliseconds(2)}}) const {
    auto c = KubeClient::New({.server = "http://127.0.0.1:" + std::to_string(port_)}, options);
    return c.ok() ? *std::move(c) : nullptr;
  }
  std::vector<Call> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  int Count(const std::string& line) const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(std::count_if(calls_.begin(), calls_.end(),
                                          [&](const Call& c) { return c.line() == line; }));
  }
  int CountMethod(const std::string& method) const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(std::count_if(calls_.begin(), calls_.end(),
                                          [&](const Call& c) { return c.method == method; }));
  }

 private:
  Handler handler_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable absl::Mutex mu_;
  std::vector<Call> calls_;
};

// Waits (without a time limit of its own: ctest's timeout catches a hang) until `done`.
template <typename F>
void WaitUntil(F done) {
  while (!done()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

}  // namespace tessel::kube::testing
