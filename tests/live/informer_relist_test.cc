// Informer relists over seeded families of cluster histories: the server's list (served in
// pages of 2) changes between relists by deletes, adds, updates and re-creations under the same
// name with a new UID, and every watch ends in 410 Gone so the informer relists each state.
// Whatever the history, the handler sees a consistent stream (an add only for an absent key, an
// update only for the same UID, a delete only for a present key), a re-created name is a delete
// and an add, never an update, updates happen exactly for changed resourceVersions, and after
// the last relist the handler's view equals the server's. Objects arrive without managedFields,
// and the resource's field selector is on every list and watch.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "absl/synchronization/mutex.h"
#include "fake_api_server.h"
#include "scheduler/api/decode.h"
#include "scheduler/api/storage.h"
#include "scheduler/kube/informer.h"
#include "scheduler/kube/list_head.h"
#include "scheduler/kube/scheduler_feed.h"

namespace tessel::kube {
namespace informer_relist_test {

using nlohmann::json;
using testing::FakeApiServer;
using testing::WaitUntil;

struct Obj {
  std::string uid;
  int64_t rv = 0;
};
using State = std::map<std::string, Obj>;  // name -> object

class ModelHandler final : public InformerHandler {
 public:
  void OnAdd(const json& o) override {
    absl::MutexLock lock(&mu_);
    CheckPruned(o);
    const std::string key = ObjectKey(o);
    if (view_.contains(key)) ++violations_;
    view_[key] = {o["metadata"]["uid"], std::stoll(o["metadata"]["resourceVersion"].get<std::string>())};
    ++adds_;
  }
  void OnUpdate(const json& o) override {
    absl::MutexLock lock(&mu_);
    CheckPruned(o);
    const std::string key = ObjectKey(o);
    auto it = view_.find(key);
    if (it == view_.end() || it->second.uid != o["metadata"]["uid"]) ++violations_;
    view_[key] = {o["metadata"]["uid"], std::stoll(o["metadata"]["resourceVersion"].get<std::string>())};
    ++updates_;
  }
  void OnDelete(const std::string& key, const json*) override {
    absl::MutexLock lock(&mu_);
    if (view_.erase(key) == 0) ++violations_;
    ++deletes_;
  }
  void CheckPruned(const json& o) {
    if (o["metadata"].contains("managedFields")) ++violations_;
  }
  absl::Mutex mu_;
  std::map<std::string, Obj> view_;  // "ns/name" -> object
  int violations_ = 0, adds_ = 0, updates_ = 0, deletes_ = 0;
};

TEST_CASE("informer relists diff by UID and stream pages, over seeded histories") {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    // A history of states; each step deletes, adds, updates and re-creates some objects.
    std::vector<State> history(1 + rng() % 5);
    int64_t next_rv = 1, next_uid = 1;
    int want_updates = 0, want_adds = 0, want_deletes = 0;
    for (size_t i = 0; i < history.size(); ++i) {
      State s = i == 0 ? State{} : history[i - 1];
      const int ops = static_cast<int>(rng() % 8);
      for (int op = 0; op < ops; ++op) {
        const std::string name = "p" + std::to_string(rng() % 6);
        auto it = s.find(name);
        switch (rng() % 4) {
          case 0: if (it != s.end()) s.erase(it); break;                        // delete
          case 1: s[name] = {"u" + std::to_string(next_uid++), next_rv++}; break;  // (re)create
          default: if (it != s.end()) it->second.rv = next_rv++; break;          // update
        }
      }
      history[i] = s;
      // What the informer must deliver going from the previous state to this one.
      const State prev = i == 0 ? State{} : history[i - 1];
      for (const auto& [name, o] : s) {
        auto p = prev.find(name);
        if (p == prev.end()) {
          ++want_adds;
        } else if (p->second.uid != o.uid) {
          ++want_deletes;
          ++want_adds;
        } else if (p->second.rv != o.rv) {
          ++want_updates;
        }
      }
      for (const auto& [name, o] : prev) want_deletes += s.contains(name) ? 0 : 1;
    }

    // Half the seeds serve lists as the API server writes them, metadata ahead of the items (the
    // informer then asks for the next page before it decodes this one); the others items first.
    const bool metadata_first = seed % 2 == 1;
    absl::Mutex mu;
    std::map<std::pair<size_t, size_t>, int> page_requests;  // (state, first item) -> requests
    size_t current = 0;  // the state the server lists
    int final_watches = 0;  // watches after the last state was listed
    bool selector_ok = true;
    FakeApiServer api([&](const FakeApiServer::Call& call, httplib::Response& res) {
      absl::MutexLock lock(&mu);
      auto sel = call.params.find("fieldSelector");
      if (sel == call.params.end() || sel->second != kActivePodsSelector) selector_ok = false;
      if (call.params.contains("watch")) {
        if (current + 1 < history.size()) {
          ++current;  // the world moves on while the watch is down
          json gone = {{"type", "ERROR"}, {"object", {{"kind", "Status"}, {"code", 410}}}};
          res.set_content(gone.dump() + "\n", "application/json");
        } else {
          ++final_watches;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          res.set_content("", "application/json");
        }
        return;
      }
      const State& s = history[current];
      const size_t start = call.params.contains("continue") ? std::stoul(call.params.at("continue")) : 0;
      ++page_requests[{current, start}];
      json items = json::array();
      size_t i = 0;
      for (const auto& [name, o] : s) {
        if (i >= start && i < start + 2) {
          items.push_back({{"metadata",
                            {{"name", name},
                             {"namespace", "ns"},
                             {"uid", o.uid},
                             {"resourceVersion", std::to_string(o.rv)},
                             {"managedFields", json::array({{{"manager", "kubectl"}}})}}}});
        }
        ++i;
      }
      json meta = {{"resourceVersion", std::to_string(1000 + current)}};
      if (start + 2 < s.size()) meta["continue"] = std::to_string(start + 2);
      res.set_content(metadata_first ? StrCat(R"({"kind":"PodList","metadata":)", meta.dump(),
                                              R"(,"items":)", items.dump(), "}")
                                     : json{{"kind", "PodList"}, {"metadata", meta}, {"items", items}}.dump(),
                      "application/json");
    });
    auto client = api.Client();
    ModelHandler handler;
    Informer informer(client.get(),
                      {.name = "pods", .path = "/api/v1/pods",
                       .field_selector = std::string(kActivePodsSelector)},
                      &handler,
                      {.page_size = 2,
                       .backoff = {.initial = absl::Milliseconds(1), .max = absl::Milliseconds(2)}});
    informer.Start();
    WaitUntil([&] {
      absl::MutexLock lock(&mu);
      return final_watches > 0;
    });
    informer.Stop();
    absl::MutexLock lock(&handler.mu_);
    CHECK(handler.violations_ == 0);
    CHECK(handler.adds_ == want_adds);
    CHECK(handler.updates_ == want_updates);
    CHECK(handler.deletes_ == want_deletes);
    std::map<std::string, Obj> want;
    for (const auto& [name, o] : history.back()) want["ns/" + name] = o;
    CHECK(handler.view_.size() == want.size());
    for (const auto& [key, o] : want) {
      CAPTURE(key);
      REQUIRE(handler.view_.contains(key));
      CHECK(handler.view_[key].uid == o.uid);
      CHECK(handler.view_[key].rv == o.rv);
    }
    absl::MutexLock l2(&mu);
    CHECK(selector_ok);
    for (const auto& [page, n] : page_requests) CHECK(n == 1);  // no page asked for twice
  }
}

TEST_CASE("a list reply's continue token is read from its head") {
  CHECK(ListContinueToken(R"({"kind":"PodList","metadata":{"resourceVersion":"7","continue":"abc"},"items":[{"metadata":{"continue":"no"}}]})") == "abc");
  CHECK(ListContinueToken(R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]})") == "");
  // A top-level "continue", or one nested deeper in metadata, is not the list's.
  CHECK(ListContinueToken(R"({"continue":"x","metadata":{"labels":{"continue":"y"}},"items":[]})") == "");
  // Items ahead of the metadata (or no metadata at all): unknown from the head.
  CHECK(ListContinueToken(R"({"items":[],"metadata":{"continue":"abc"}})") == std::nullopt);
  CHECK(ListContinueToken(R"({"kind":"PodList","items":[]})") == std::nullopt);
  // Not JSON, or cut before the metadata ended.
  CHECK(ListContinueToken("<html>") == std::nullopt);
  CHECK(ListContinueToken(R"({"metadata":{"continue":"abc")") == std::nullopt);
  CHECK(ListContinueToken("") == std::nullopt);
}

TEST_CASE("pruning drops what no decoder reads and keeps what they do") {
  json pod = json::parse(R"({
    "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"a": "b"},
                 "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}",
                                 "tessel.io/gpu-devices": "0"}},
    "spec": {"schedulerName": "tessel", "nodeName": "n", "volumes": [{"name": "v"}],
             "containers": [{"name": "c", "image": "i", "env": [{"name": "E"}],
                             "resources": {"requests": {"cpu": "1"}}}]},
    "status": {"phase": "Running", "containerStatuses": [{"name": "c"}], "nominatedNodeName": "x"}})");
  PrunePod(pod);
  CHECK_FALSE(pod["metadata"]["annotations"].contains("kubectl.kubernetes.io/last-applied-configuration"));
  CHECK(pod["metadata"]["annotations"]["tessel.io/gpu-devices"] == "0");
  CHECK(pod["metadata"]["labels"]["a"] == "b");
  CHECK_FALSE(pod["spec"].contains("volumes"));
  CHECK_FALSE(pod["spec"]["containers"][0].contains("env"));
  CHECK(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1");
  CHECK(pod["spec"]["schedulerName"] == "tessel");
  CHECK(pod["status"]["phase"] == "Running");
  CHECK(pod["status"]["nominatedNodeName"] == "x");
  CHECK_FALSE(pod["status"].contains("containerStatuses"));

  // Volume scheduling reads the claims: their volumes stay, reduced to name and claim; the
  // decoded pod sees the same claims as the unpruned one.
  json with_claims = json::parse(R"({
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"containers": [{"name": "c"}], "volumes": [
      {"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": true}},
      {"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "a"}]}},
      {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}}]}})");
  const absl::StatusOr<Pod> before = DecodePod(with_claims);
  PrunePod(with_claims);
  CHECK(with_claims["spec"]["volumes"] == json::parse(R"([
      {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
      {"name": "scratch", "ephemeral": {}}])"));
  const absl::StatusOr<Pod> after = DecodePod(with_claims);
  REQUIRE(before.ok());
  REQUIRE(after.ok());
  REQUIRE(after->volumes.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(ClaimNameOf(*after, after->volumes[i]) == ClaimNameOf(*before, before->volumes[i]));
  }

  json node = json::parse(R"({"metadata": {"name": "n", "labels": {"k": "v"}},
    "spec": {"taints": [{"key": "t", "effect": "NoSchedule"}]},
    "status": {"images": [{"names": ["x"]}], "allocatable": {"cpu": "4"},
               "conditions": [{"type": "Ready", "status": "True"}]}})");
  PruneNode(node);
  CHECK_FALSE(node["status"].contains("images"));
  CHECK(node["status"]["allocatable"]["cpu"] == "4");
  CHECK(node["status"]["conditions"][0]["type"] == "Ready");
  CHECK(node["spec"]["taints"][0]["key"] == "t");
}

}  // namespace informer_relist_test
}  // namespace tessel::kube
