// One run of `tessel-bench e2e` (see e2e_run.h). The pods are written with Tessel's own
// Kubernetes client (scheduler/kube) from live::kWriters threads.
#include "bench/e2e/e2e_run.h"

#include <chrono>
#include <iostream>
#include <map>
#include <string_view>
#include <thread>

#include "bench/e2e/bind_watcher.h"
#include "bench/e2e/live_cluster.h"
#include "bench/e2e/workload.h"
#include "nlohmann/json.hpp"
#include "scheduler/util/strings.h"

namespace tessel::bench::e2e {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using kube::KubeClient;

using live::Check;
using live::Die;
using live::kWriters;
using live::NodeName;
using live::ParallelFor;

// Creates the pods, all pending.
void CreatePods(KubeClient& client, const Options& o, const std::vector<int64_t>& sizes,
                std::string_view scheduler_name) {
  ParallelFor(static_cast<int64_t>(sizes.size()), [&](int64_t i) {
    Check(client.Do({.method = "POST",
                     .path = live::PodsPath(o.ns),
                     .body = live::PodObject(o.ns, PodName(i), sizes[i], scheduler_name).dump()}),
          StrCat("create pod ", PodName(i)));
  });
}

std::vector<std::string> SchedulerCommand(const Options& o, std::string_view which) {
  const std::string qps = fmt::format("{}", o.qps);
  const std::string burst = std::to_string(o.burst);
  if (which == "tessel") {
    return {o.tessel_scheduler, "--kubeconfig", o.kubeconfig, "--leader-elect=false",
            "--bind-address", "127.0.0.1", "--port", "0", "--secure-port", "0", "--kube-api-qps", qps,
            "--kube-api-burst", burst};
  }
  // kube-scheduler: no serving port at all (nothing here reads it).
  return {o.kube_scheduler, "--kubeconfig", o.kubeconfig, "--leader-elect=false",
          "--secure-port=0", "--kube-api-qps", qps, "--kube-api-burst", burst, "-v=1"};
}

RunResult Measure(const std::string& scheduler, BindWatcher& watcher, const Options& o,
                  const std::vector<int64_t>& sizes, int64_t placeable, live::Process* process) {
  RunResult result{.scheduler = scheduler};
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const int64_t bound = watcher.bound();
    if (bound >= placeable) {
      result.all_placeable_s = watcher.last_bind_s();
      break;
    }
    if (process != nullptr && !process->Running()) {
      Die(StrCat(scheduler, " exited; its log: ", process->log()));
    }
    const double idle = bound == 0 ? elapsed() : elapsed() - watcher.last_bind_s();
    if ((bound > 0 && idle > static_cast<double>(o.idle_s)) ||
        elapsed() > static_cast<double>(o.timeout_s)) {
      break;
    }
  }
  if (process != nullptr) {
    result.peak_rss_kib = process->PeakRssKib();
    result.cpu_s = process->CpuSeconds();
  }
  result.seconds = watcher.last_bind_s();
  std::map<std::string, int64_t> gpus_on;
  for (const auto& [index, node] : watcher.bindings()) {
    ++result.bound;
    gpus_on[node] += sizes[static_cast<size_t>(index)];
  }
  int64_t used = 0;
  for (const auto& [node, gpus] : gpus_on) {
    used += gpus;
    if (gpus > kGpusPerNode) ++result.overcommitted_nodes;
  }
  result.pending = static_cast<int64_t>(sizes.size()) - result.bound;
  result.gpus_idle = o.nodes * kGpusPerNode - used;
  result.whole_nodes = o.nodes - static_cast<int64_t>(gpus_on.size());
  return result;
}

}  // namespace

RunResult RunScheduler(KubeClient& client, const Options& o, const std::vector<int64_t>& sizes,
                       int64_t placeable, const std::string& which) {
  const std::string scheduler_name = which == "tessel" ? "tessel" : "default-scheduler";
  live::DeletePods(client, o.ns);
  std::cerr << "tessel-bench e2e: " << which << ": creating " << sizes.size() << " pods\n";
  CreatePods(client, o, sizes, scheduler_name);
  BindWatcher watcher(client, o.ns);
  if (which == "ceiling") {
    const std::vector<int64_t> plan = PerfectPlan(sizes, o.nodes);
    std::cerr << "tessel-bench e2e: ceiling: binding the perfect plan from " << kWriters
              << " threads\n";
    watcher.Start();
    std::thread binder([&] {
      ParallelFor(static_cast<int64_t>(sizes.size()), [&](int64_t i) {
        if (plan[static_cast<size_t>(i)] < 0) return;
        const json binding = {
            {"apiVersion", "v1"},
            {"kind", "Binding"},
            {"metadata", {{"name", PodName(i)}}},
            {"target", {{"kind", "Node"}, {"name", NodeName(plan[static_cast<size_t>(i)])}}}};
        Check(client.Do({.method = "POST",
                         .path = StrCat(live::PodsPath(o.ns), "/", PodName(i), "/binding"),
                         .body = binding.dump()}),
              StrCat("bind pod ", PodName(i)));
      });
    });
    RunResult r = Measure(which, watcher, o, sizes, placeable, nullptr);
    binder.join();
    return r;
  }
  const std::string log = StrCat(o.log_dir, "/", which, ".log");
  std::cerr << "tessel-bench e2e: " << which << ": starting the scheduler (log: " << log << ")\n";
  watcher.Start();
  live::Process process(SchedulerCommand(o, which), log);
  RunResult r = Measure(which, watcher, o, sizes, placeable, &process);
  process.Stop();
  return r;
}

}  // namespace tessel::bench::e2e
