// The cluster report over hand-built snapshots: GPU totals in physical-GPU equivalents (whole
// GPUs, time-sliced replicas, fractions, MIG slices), FGD's fragmentation against the running
// pods' mix or a given workload, node totals, and two team queues' usage, borrowing and pending
// pods. Every expected number is worked out by hand in the comments.
#include <catch2/catch.hpp>

#include "scheduler/testing/builders.h"
#include "scheduler/report/cluster_report.h"
#include "scheduler/state/cache.h"

namespace tessel {
namespace cluster_report_test {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Res;

Pod Running(PodBuilder b, std::string node) {
  b.Node(std::move(node));
  b.mutable_pod().phase = PodPhase::kRunning;
  return b.Build();
}

Queue TeamQueue(std::string name) {
  Queue q;
  q.meta.name = name;
  q.namespaces = {name};
  q.cohort = "c";
  q.nominal = Res("nvidia.com/gpu:2");
  return q;
}

// Three nodes:
//   whole   4 unshared GPUs, 32 CPUs: pod a takes devices 0 and 1 (2 whole GPUs), pod c 400 milli
//           of device 2 (best fit, lowest index): free per device 0, 0, 600, 1000.
//   sliced  2 GPUs x 4 time-slicing replicas (8 nvidia.com/gpu), 16 CPUs: pod b's 2 replicas go
//           one to each device (least loaded first), each 1000/4 = 250: free 750, 750.
//   mig     7 nvidia.com/mig-1g.5gb slices (7/7 of a GPU), no devices, 8 CPUs: pod m holds 2.
// Pods a, b in namespace team-a; c, m in team-b; pa (team-a) and pb (team-b) wait.
struct World {
  RealClock clock;
  Cache cache{&clock};
  Snapshot snapshot;
  Pod pa = PodBuilder("pa", "team-a").Requests("cpu:1,nvidia.com/gpu:1").Created(200).Build();
  Pod pb = PodBuilder("pb", "team-b").Requests("cpu:1,nvidia.com/gpu:1").Created(100).Build();

  World() {
    cache.AddOrUpdateNode(NodeBuilder("whole")
                              .Allocatable("cpu:32,nvidia.com/gpu:4")
                              .Label("nvidia.com/gpu.count", "4")
                              .Build());
    cache.AddOrUpdateNode(NodeBuilder("sliced")
                              .Allocatable("cpu:16,nvidia.com/gpu:8")
                              .Label("nvidia.com/gpu.count", "2")
                              .Label("nvidia.com/gpu.replicas", "4")
                              .Label("nvidia.com/gpu.sharing-strategy", "time-slicing")
                              .Build());
    cache.AddOrUpdateNode(NodeBuilder("mig").Allocatable("cpu:8,nvidia.com/mig-1g.5gb:7").Build());
    cache.AddOrUpdatePod(Running(PodBuilder("a", "team-a").Requests("cpu:1,nvidia.com/gpu:2"), "whole"));
    PodBuilder c = PodBuilder("c", "team-b").Requests("cpu:1,nvidia.com/gpu:1");
    c.mutable_pod().meta.annotations[std::string(gpu::kGpuMilliAnnotation)] = "400";
    cache.AddOrUpdatePod(Running(c, "whole"));
    cache.AddOrUpdatePod(Running(PodBuilder("b", "team-a").Requests("cpu:1,nvidia.com/gpu:2"), "sliced"));
    cache.AddOrUpdatePod(Running(PodBuilder("m", "team-b").Requests("cpu:1,nvidia.com/mig-1g.5gb:2"), "mig"));
    cache.UpdateSnapshot(snapshot);
  }
};

TEST_CASE("cluster report: GPU totals over whole, time-sliced, fractional and MIG GPUs") {
  World w;
  const ClusterReport r = ReportCluster(w.snapshot, {});
  CHECK(r.nodes == 3);
  CHECK(r.allocatable.milli_cpu == 56000);                // 32 + 16 + 8 CPUs
  CHECK(r.allocatable.Get(kNvidiaGpu) == 12000);          // as advertised: 4 GPUs + 8 replicas
  CHECK(r.requested.milli_cpu == 4000);                   // four running pods, 1 CPU each
  CHECK(r.requested.Get(kNvidiaGpu) == 5000);             // a 2, c 1, b 2 (as requested)
  const GpuReport& g = r.gpus;
  CHECK(g.devices == 6);                                  // 4 + 2 + 0
  CHECK(g.capacity_milli == 7000);                        // 4000 + 2000 + 7/7 of a GPU
  CHECK(g.allocated_milli == 3185);                       // 2400 + 2 x 250 + floor(2000 / 7)
  CHECK(g.free_milli() == 3815);
  CHECK(g.whole_free_devices == 1);                       // device 3 of whole
  CHECK(g.partially_used_free_milli == 2100);             // 600 + 750 + 750
  CHECK(g.idle_milli == 3100);                            // whole 1600 + sliced 1500 (no MIG)
  // The running mix: class (1 CPU, 2 x 1000) twice (a, b), (1 CPU, 1 x 400) once (c) and the
  // GPU-less (1 CPU) once (m): W = 4. Per node, sum of w x what the class strands:
  //   whole:  2 x 1000 fits on one free device only: all 1600 idle, x 2       3200
  //           400 fits; no device below 400 has free milli                       0
  //           GPU-less: all idle                                              1600
  //   sliced: no fully free device for 2 x 1000: 1500, x 2                    3000
  //           400 fits on a 750; nothing stranded                                0
  //           GPU-less: all idle                                              1500
  //   mig:    no devices, nothing idle                                           0
  // 9300 / 4 = 2325.
  CHECK(g.fragmented_milli == 2325);
  CHECK(r.queues.empty());  // no queues given
}

TEST_CASE("cluster report: fragmentation against a given workload") {
  World w;
  // One class, a whole GPU: whole strands the 600 of device 2 (device 3 fits it); sliced has
  // no free device for it, so all its 1500 idle; mig nothing. W = 1: 2100.
  const gpu::FragModel workload({{.cpu_milli = 0, .gpu_milli = 1000, .num_gpu = 1}});
  CHECK(ReportGpus(w.snapshot, &workload).fragmented_milli == 2100);
  CHECK(ReportCluster(w.snapshot, {.workload = &workload}).gpus.fragmented_milli == 2100);
}

TEST_CASE("cluster report: two queues' usage in physical-GPU equivalents, borrowing, pending") {
  World w;
  QueueDirectory directory;
  REQUIRE(directory.Set({TeamQueue("team-a"), TeamQueue("team-b")}).ok());
  const ClusterReport r = ReportCluster(w.snapshot, {.queues = &directory, .pending = {&w.pa, &w.pb}});
  REQUIRE(r.queues.size() == 2);
  const QueueReport& a = r.queues[0];
  const QueueReport& b = r.queues[1];
  CHECK(a.name == "team-a");
  CHECK(b.name == "team-b");
  CHECK(a.cohort == "c");
  CHECK(a.nominal.Get(kNvidiaGpu) == 2000);
  // team-a: a holds 2 whole GPUs (2000), b 2 replicas of 1000/4 (500): 2500, 500 above its 2.
  CHECK(a.usage.Get(kNvidiaGpu) == 2500);
  CHECK(a.usage.milli_cpu == 2000);
  CHECK(a.borrowed.Get(kNvidiaGpu) == 500);
  CHECK(a.lent.Get(kNvidiaGpu) == 0);
  // team-b: c's 400-milli fraction; m's MIG slices are charged as their own resource.
  CHECK(b.usage.Get(kNvidiaGpu) == 400);
  CHECK(b.usage.Get("nvidia.com/mig-1g.5gb") == 2000);
  CHECK(b.borrowed.Get(kNvidiaGpu) == 0);
  CHECK(b.lent.Get(kNvidiaGpu) == 500);  // the only lender of what team-a borrows
  CHECK(a.admitted_pods == 2);
  CHECK(b.admitted_pods == 2);
  CHECK(a.pending_pods == 1);
  CHECK(b.pending_pods == 1);
  CHECK(a.oldest_pending == absl::FromUnixSeconds(200));
  CHECK(b.oldest_pending == absl::FromUnixSeconds(100));
  // The queue part alone is the same.
  const std::vector<QueueReport> alone = ReportQueueUsage(w.snapshot, directory, {&w.pa, &w.pb});
  REQUIRE(alone.size() == 2);
  CHECK(alone[0].usage == a.usage);
  CHECK(alone[1].lent == b.lent);
}

// Moved from the metrics tests: the gauges divide these by 1000.
TEST_CASE("cluster report: 8-GPU nodes, time-sliced x 4, fractions") {
  RealClock clock;
  Cache cache(&clock);
  for (const char* name : {"whole-0", "whole-1"}) {
    cache.AddOrUpdateNode(NodeBuilder(name).Allocatable("nvidia.com/gpu:8").Label("nvidia.com/gpu.count", "8").Build());
  }
  cache.AddOrUpdateNode(NodeBuilder("sliced")
                            .Allocatable("nvidia.com/gpu:32")
                            .Label("nvidia.com/gpu.count", "8")
                            .Label("nvidia.com/gpu.replicas", "4")
                            .Label("nvidia.com/gpu.sharing-strategy", "time-slicing")
                            .Build());
  cache.AddOrUpdatePod(Running(PodBuilder("a").Requests("nvidia.com/gpu:2"), "whole-0"));
  cache.AddOrUpdatePod(Running(PodBuilder("b").Requests("nvidia.com/gpu:4"), "sliced"));  // 1 GPU
  PodBuilder c = PodBuilder("c").Requests("nvidia.com/gpu:1");
  c.mutable_pod().meta.annotations[std::string(gpu::kGpuMilliAnnotation)] = "400";
  cache.AddOrUpdatePod(Running(c, "whole-1"));  // 0.4 GPU
  Snapshot snapshot;
  cache.UpdateSnapshot(snapshot);
  const GpuReport g = ReportCluster(snapshot, {}).gpus;
  CHECK(g.capacity_milli == 24000);
  CHECK(g.allocated_milli == 3400);
  // The running mix: classes (2 x 1000), (4 x 1000) and (1 x 400), weight 1 each. Free per
  // device: whole-0 six whole GPUs; whole-1 600 + seven whole; sliced: the 4 replicas went to
  // 4 devices (least-loaded first), so 4 x 750 + four whole.
  //   whole-0: every class fits, nothing stranded                          0
  //   whole-1: 2 x 1000 and 4 x 1000 strand the 600; 400 fits             1200
  //   sliced:  2 x 1000 and 4 x 1000 strand 4 x 750 each; 400 fits        6000
  // F = 7200 / 3 = 2400 milli-GPU.
  CHECK(g.fragmented_milli == 2400);
}

}  // namespace cluster_report_test
}  // namespace tessel
