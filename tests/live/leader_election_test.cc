// Leader election against a fake API server that stores one Lease (create, get, and update
// with resourceVersion preconditions), with ManualClocks for the elector's monotonic and wall
// clocks: a step of the wall clock neither extends nor ends a term, nor lets a follower take a
// live lease early; only monotonic time decides. The elector's own loop runs (real sleeps of a
// short retry period); what it decides is read from the manual clocks, so the outcome is exact.
#include <catch2/catch.hpp>

#include <thread>

#include "absl/synchronization/mutex.h"
#include "fake_api_server.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/leader_election.h"

namespace tessel::kube {
namespace leader_election_test {

using nlohmann::json;

// One Lease, as the API server keeps it; `down` answers 503 to everything.
struct LeaseApi {
  absl::Mutex mu;
  std::optional<json> lease;
  int64_t version = 0;
  bool down = false;
  testing::FakeApiServer api{[this](const testing::FakeApiServer::Call& call, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    if (down) {
      res.status = 503;
      return;
    }
    if (call.method == "GET") {
      if (!lease) {
        res.status = 404;
        return;
      }
      res.set_content(lease->dump(), "application/json");
      return;
    }
    json body = json::parse(call.body);
    if (call.method == "POST") {
      if (lease) {
        res.status = 409;
        return;
      }
    } else if (call.method == "PUT") {
      if (!lease || body["metadata"].value("resourceVersion", "") != (*lease)["metadata"]["resourceVersion"]) {
        res.status = 409;
        return;
      }
    }
    body["metadata"]["resourceVersion"] = std::to_string(++version);
    lease = body;
    res.status = call.method == "POST" ? 201 : 200;
    res.set_content(body.dump(), "application/json");
  }};
  std::string holder() {
    absl::MutexLock lock(&mu);
    return lease ? (*lease)["spec"].value("holderIdentity", "") : "";
  }
  void SetDown(bool d) {
    absl::MutexLock lock(&mu);
    down = d;
  }
};

LeaderElectionConfig Config(std::string identity) {
  return {.namespace_ = "kube-system", .name = "tessel-scheduler", .identity = std::move(identity),
          .lease_duration = absl::Seconds(15), .renew_deadline = absl::Seconds(10),
          .retry_period = absl::Milliseconds(200)};
}

// Polls `pred` for up to 5 s of real time.
template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

// Lets the elector loops run a number of retry periods.
void LetRun() { std::this_thread::sleep_for(std::chrono::milliseconds(800)); }

TEST_CASE("a wall-clock step neither extends nor ends a term, nor hands the lease over early", "[leader]") {
  LeaseApi store;
  auto client_a = store.api.Client();
  auto client_b = store.api.Client();
  const absl::Time start = absl::FromUnixSeconds(1'700'000'000);
  ManualClock mono_a(start), wall_a(start), mono_b(start), wall_b(start);
  LeaderElector a(client_a.get(), Config("a"), {}, {.monotonic = &mono_a, .wall = &wall_a});
  a.Start();
  REQUIRE(Eventually([&] { return a.IsLeader(); }));
  CHECK(store.holder() == "a");
  REQUIRE(a.WriteBudget().has_value());
  CHECK(*a.WriteBudget() == absl::Seconds(10));  // renewed at mono_a's now, which stands still

  // The leader's wall clock jumps an hour either way: its term is what it was.
  wall_a.Advance(absl::Hours(1));
  LetRun();
  CHECK(a.IsLeader());
  CHECK(*a.WriteBudget() == absl::Seconds(10));
  wall_a.Advance(-absl::Hours(2));
  LetRun();
  CHECK(a.IsLeader());
  CHECK(*a.WriteBudget() == absl::Seconds(10));

  // A follower whose wall clock runs an hour ahead does not take the live lease.
  LeaderElector b(client_b.get(), Config("b"), {}, {.monotonic = &mono_b, .wall = &wall_b});
  b.Start();
  REQUIRE(Eventually([&] { return b.leader() == "a"; }));
  wall_b.Advance(absl::Hours(1));
  LetRun();
  CHECK_FALSE(b.IsLeader());
  CHECK(store.holder() == "a");

  // The API server goes away: the leader cannot renew. Its term ends when its monotonic clock
  // passes the renew deadline, not before (a wall step back does not shorten it)...
  store.SetDown(true);
  wall_a.Advance(-absl::Hours(5));
  mono_a.Advance(absl::Seconds(9));
  LetRun();
  CHECK(a.IsLeader());
  REQUIRE(a.WriteBudget().has_value());
  CHECK(*a.WriteBudget() == absl::Seconds(1));
  mono_a.Advance(absl::Seconds(2));
  CHECK_FALSE(a.IsLeader());  // at once, whatever its loop is doing
  CHECK_FALSE(a.WriteBudget().has_value());
  LetRun();  // its loop sees the deadline passed and gives up

  // ...and the follower takes over once its monotonic clock has seen the lease unchanged for the
  // lease duration.
  store.SetDown(false);
  LetRun();
  CHECK_FALSE(b.IsLeader());
  mono_b.Advance(absl::Seconds(16));
  REQUIRE(Eventually([&] { return b.IsLeader(); }));
  CHECK(store.holder() == "b");
  a.Stop(false);
  b.Stop(false);
}

}  // namespace leader_election_test
}  // namespace tessel::kube
