// ObserverFanout (scheduler/server/observer_fanout.h): every outcome reaches every observer, in
// the order they were added, with its arguments.
#include <catch2/catch.hpp>

#include "scheduler/server/observer_fanout.h"

namespace tessel::server {
namespace observer_fanout_test {

// Appends "<name>:<call>:<detail>" for every call to a shared log.
class Recorder final : public SchedulingObserver {
 public:
  Recorder(std::string name, std::vector<std::string>* log) : name_(std::move(name)), log_(log) {}
  void PodScheduled(const Pod& pod, const std::string& node) override { Log("scheduled", pod.Key() + "@" + node); }
  void PodUnschedulable(const Pod& pod, FailureKind kind, const std::string& message) override {
    Log("unschedulable", pod.Key() + (kind == FailureKind::kError ? " error " : " ") + message);
  }
  void PodSchedulingGated(const Pod& pod) override { Log("gated", pod.Key()); }
  void PodsPreempted(const Pod& preemptor, const std::string& node,
                     const std::vector<PreemptionVictim>& victims) override {
    Log("preempted", preemptor.Key() + "@" + node + " x" + std::to_string(victims.size()));
  }
  void NominationCleared(const Pod& pod) override { Log("nomination-cleared", pod.Key()); }
  void PodRejected(const Pod& pod, const std::vector<std::string>& plugins) override {
    Log("rejected", pod.Key() + " by " + plugins.at(0));
  }
  void GangMemberEvicted(const Pod& pod) override { Log("gang-evicted", pod.Key()); }
  void AttemptFinished(const Pod& pod, AttemptResult result, absl::Duration latency) override {
    Log("attempt", pod.Key() + " " + std::string(AttemptResultName(result)) + " " + absl::FormatDuration(latency));
  }

 private:
  void Log(std::string_view call, const std::string& detail) {
    log_->push_back(name_ + ":" + std::string(call) + ":" + detail);
  }
  std::string name_;
  std::vector<std::string>* log_;
};

TEST_CASE("ObserverFanout hands every call to every observer in the order they were added") {
  std::vector<std::string> log;
  Recorder a("a", &log), b("b", &log);
  ObserverFanout fanout;
  fanout.Add(&a);
  fanout.Add(&b);
  Pod pod;
  pod.meta.namespace_ = "ns";
  pod.meta.name = "p";
  auto twice = [&log](const std::string& call) {
    std::vector<std::string> want = {"a:" + call, "b:" + call};
    CHECK(log == want);
    log.clear();
  };
  fanout.PodScheduled(pod, "n1");
  twice("scheduled:ns/p@n1");
  fanout.PodUnschedulable(pod, FailureKind::kError, "boom");
  twice("unschedulable:ns/p error boom");
  fanout.PodSchedulingGated(pod);
  twice("gated:ns/p");
  fanout.PodsPreempted(pod, "n2", {PreemptionVictim{}, PreemptionVictim{}});
  twice("preempted:ns/p@n2 x2");
  fanout.NominationCleared(pod);
  twice("nomination-cleared:ns/p");
  fanout.PodRejected(pod, {"NodeResourcesFit"});
  twice("rejected:ns/p by NodeResourcesFit");
  fanout.GangMemberEvicted(pod);
  twice("gang-evicted:ns/p");
  fanout.AttemptFinished(pod, AttemptResult::kScheduled, absl::Milliseconds(3));
  twice("attempt:ns/p scheduled 3ms");
}

}  // namespace observer_fanout_test
}  // namespace tessel::server
