// One run of `tessel-bench e2e` (see e2e.h): the workload's pods created pending, one scheduler
// started (tessel-scheduler or kube-scheduler; or, for the ceiling, a client binding the perfect
// plan), its binds followed (bind_watcher.h) until every placeable pod is bound or binding stops,
// and what it left measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/kube/client.h"

namespace tessel::bench::e2e {

// What `tessel-bench e2e` was asked (its flags: e2e.cc).
struct Options {
  int64_t nodes = 0;
  int64_t pods = 0;
  double qps = 50;     // kube-scheduler's default client QPS, given to both schedulers
  int64_t burst = 100;  // kube-scheduler's default burst
  std::vector<std::string> compare;
  uint64_t seed = 42;
  bool json_out = false;
  std::string kubeconfig;
  std::string ns = "tessel-e2e";
  std::string tessel_scheduler;  // default: next to this binary
  std::string kube_scheduler = "kube-scheduler";
  std::string log_dir;
  int64_t timeout_s = 900;  // a run ends at the latest after this
  int64_t idle_s = 20;      // ... or when no pod was bound for this long
};

// One run's measurements.
struct RunResult {
  std::string scheduler;
  double seconds = 0;            // start until the last bind
  std::optional<double> all_placeable_s;  // start until the placeable count was reached
  int64_t bound = 0;
  int64_t pending = 0;
  int64_t gpus_idle = 0;
  int64_t whole_nodes = 0;
  int64_t overcommitted_nodes = 0;  // nodes with more GPUs bound than they have
  int64_t peak_rss_kib = -1;        // -1: no scheduler process (the ceiling)
  double cpu_s = -1;                // the scheduler's user + system CPU time; -1: no process
  double binds_per_s() const { return seconds > 0 ? static_cast<double>(bound) / seconds : 0; }
};

// Deletes the pods of an earlier run, creates the workload's pods (`sizes`: GPUs per pod) for
// `which` ("tessel", "kube-scheduler" or "ceiling") and measures how it binds them.
RunResult RunScheduler(kube::KubeClient& client, const Options& o, const std::vector<int64_t>& sizes,
                       int64_t placeable, const std::string& which);

}  // namespace tessel::bench::e2e
