// `tessel-bench e2e`: see e2e.h. The objects are written with Tessel's own Kubernetes client
// (scheduler/kube) from 32 threads; the pods are watched with one watch stream.
#include "bench/e2e/e2e.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "bench/e2e/live_cluster.h"
#include "bench/e2e/workload.h"
#include "nlohmann/json.hpp"
#include "scheduler/cmd/flags.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/kubeconfig.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using kube::KubeClient;
using kube::Request;
using kube::Response;

using live::Check;
using live::Die;
using live::kWriters;
using live::NodeName;
using live::ParallelFor;

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

std::string PodName(int64_t i) { return fmt::format("e2e-pod-{:05d}", i); }

// Creates the pods (all pending) and returns the resourceVersion to watch from.
std::string CreatePods(KubeClient& client, const Options& o, const std::vector<int64_t>& sizes,
                       std::string_view scheduler_name) {
  ParallelFor(static_cast<int64_t>(sizes.size()), [&](int64_t i) {
    Check(client.Do({.method = "POST",
                     .path = live::PodsPath(o.ns),
                     .body = live::PodObject(o.ns, PodName(i), sizes[i], scheduler_name).dump()}),
          StrCat("create pod ", PodName(i)));
  });
  auto r = client.Do({.path = StrCat(live::PodsPath(o.ns), "?limit=1")});
  Check(r, "list pods");
  json list = json::parse(r->body, nullptr, false);
  if (!list.is_object()) Die("list pods: the answer is not JSON");
  return kube::JsonString(list.value("metadata", json::object()), "resourceVersion");
}

// Follows the bench's pods through one watch (re-opened when the server ends it) and records
// the first node each pod is bound to and when.
class BindWatcher {
 public:
  BindWatcher(KubeClient& client, const Options& o, std::string resource_version)
      : client_(client), o_(o), rv_(std::move(resource_version)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~BindWatcher() {
    stop_ = true;
    thread_.join();
  }

  void Start() {
    absl::MutexLock lock(&mu_);
    start_ = Clock::now();
  }
  int64_t bound() {
    absl::MutexLock lock(&mu_);
    return static_cast<int64_t>(node_of_.size());
  }
  // Seconds from Start() to the last bind so far (0 with none).
  double last_bind_s() {
    absl::MutexLock lock(&mu_);
    return node_of_.empty() ? 0 : std::chrono::duration<double>(last_bind_ - start_).count();
  }
  std::map<int64_t, std::string> bindings() {
    absl::MutexLock lock(&mu_);
    return node_of_;
  }
  std::optional<std::string> error() {
    absl::MutexLock lock(&mu_);
    return error_;
  }

 private:
  void Loop() {
    while (!stop_) {
      Request req{.path = StrCat(live::PodsPath(o_.ns), "?watch=1&allowWatchBookmarks=true&timeoutSeconds=300",
                                 "&resourceVersion=", rv_),
                  .timeout = absl::Seconds(330),
                  .retry = false};
      auto r = client_.Stream(req, [this](std::string_view line) { return OnEvent(line); }, &stop_);
      if (stop_ || error().has_value()) return;
      if (!r.ok() || r->code != 200) {
        absl::MutexLock lock(&mu_);
        error_ = r.ok() ? StrCat("watch pods: HTTP ", r->code, ": ", r->ErrorMessage())
                        : StrCat("watch pods: ", r.status().ToString());
        return;
      }
    }
  }

  bool OnEvent(std::string_view line) {
    const auto now = Clock::now();
    json event = json::parse(line, nullptr, false);
    if (!event.is_object() || !event.contains("object") || !event["object"].is_object()) return true;
    const json& pod = event["object"];
    const json meta = pod.value("metadata", json::object());
    const std::string rv = kube::JsonString(meta, "resourceVersion");
    if (!rv.empty()) rv_ = rv;
    if (kube::JsonString(event, "type") == "ERROR") {  // e.g. 410: events may have been missed
      absl::MutexLock lock(&mu_);
      error_ = StrCat("watch pods: ", kube::JsonString(pod, "message"));
      return false;
    }
    const std::string node = kube::JsonString(pod.value("spec", json::object()), "nodeName");
    const std::string name = kube::JsonString(meta, "name");
    if (node.empty() || name.rfind("e2e-pod-", 0) != 0) return true;
    const int64_t index = std::strtoll(name.c_str() + 8, nullptr, 10);
    absl::MutexLock lock(&mu_);
    if (node_of_.emplace(index, node).second) last_bind_ = now;
    return true;
  }

  KubeClient& client_;
  const Options& o_;
  std::string rv_;  // only the watch thread touches it
  std::atomic<bool> stop_{false};
  std::thread thread_;
  absl::Mutex mu_;
  Clock::time_point start_ ABSL_GUARDED_BY(mu_) = Clock::now();
  Clock::time_point last_bind_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::string> node_of_ ABSL_GUARDED_BY(mu_);
  std::optional<std::string> error_ ABSL_GUARDED_BY(mu_);
};

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
    if (auto err = watcher.error()) Die(*err);
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
    if (gpus > e2e::kGpusPerNode) ++result.overcommitted_nodes;
  }
  result.pending = static_cast<int64_t>(sizes.size()) - result.bound;
  result.gpus_idle = o.nodes * e2e::kGpusPerNode - used;
  result.whole_nodes = o.nodes - static_cast<int64_t>(gpus_on.size());
  return result;
}

RunResult RunScheduler(KubeClient& client, const Options& o, const std::vector<int64_t>& sizes,
                       int64_t placeable, const std::string& which) {
  const std::string scheduler_name = which == "tessel" ? "tessel" : "default-scheduler";
  live::DeletePods(client, o.ns);
  std::cerr << "tessel-bench e2e: " << which << ": creating " << sizes.size() << " pods\n";
  BindWatcher watcher(client, o, CreatePods(client, o, sizes, scheduler_name));
  if (which == "ceiling") {
    const std::vector<int64_t> plan = e2e::PerfectPlan(sizes, o.nodes);
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

json ToJson(const RunResult& r) {
  json j = {{"scheduler", r.scheduler},
            {"seconds", r.seconds},
            {"binds_per_s", r.binds_per_s()},
            {"bound", r.bound},
            {"pending", r.pending},
            {"gpus_idle", r.gpus_idle},
            {"whole_nodes", r.whole_nodes},
            {"overcommitted_nodes", r.overcommitted_nodes}};
  j["all_placeable_bound_s"] = r.all_placeable_s ? json(*r.all_placeable_s) : json(nullptr);
  j["peak_rss_mib"] = r.peak_rss_kib >= 0 ? json(r.peak_rss_kib / 1024) : json(nullptr);
  j["scheduler_cpu_s"] = r.cpu_s >= 0 ? json(r.cpu_s) : json(nullptr);
  return j;
}

void PrintTable(const Options& o, int64_t gpus_asked, int64_t placeable,
                const std::vector<RunResult>& runs) {
  std::cout << fmt::format(
      "{} nodes x {} GPUs, {} pods asking {} GPUs ({}%), {} placeable; client QPS {}, burst {}, "
      "seed {}\n",
      o.nodes, e2e::kGpusPerNode, o.pods, gpus_asked,
      gpus_asked * 100 / std::max<int64_t>(1, o.nodes * e2e::kGpusPerNode), placeable, o.qps,
      o.burst, o.seed);
  auto row = [&](std::string_view label, auto cell) {
    std::cout << fmt::format("{:<28}", label);
    for (const RunResult& r : runs) std::cout << fmt::format("{:>18}", cell(r));
    std::cout << "\n";
  };
  row("", [](const RunResult& r) { return r.scheduler; });
  row("binds/s", [](const RunResult& r) { return fmt::format("{:.1f}", r.binds_per_s()); });
  row("all placeable bound after", [](const RunResult& r) {
    return r.all_placeable_s ? fmt::format("{:.1f} s", *r.all_placeable_s) : std::string("never");
  });
  row("last bind after", [](const RunResult& r) { return fmt::format("{:.1f} s", r.seconds); });
  row("bound", [](const RunResult& r) { return std::to_string(r.bound); });
  row("pending", [](const RunResult& r) { return std::to_string(r.pending); });
  row("GPUs idle", [](const RunResult& r) { return std::to_string(r.gpus_idle); });
  row("whole nodes left", [](const RunResult& r) { return std::to_string(r.whole_nodes); });
  row("overcommitted nodes", [](const RunResult& r) { return std::to_string(r.overcommitted_nodes); });
  row("scheduler peak RSS", [](const RunResult& r) {
    return r.peak_rss_kib >= 0 ? fmt::format("{} MiB", r.peak_rss_kib / 1024) : std::string("-");
  });
  row("scheduler CPU", [](const RunResult& r) {
    return r.cpu_s >= 0 ? fmt::format("{:.1f} s", r.cpu_s) : std::string("-");
  });
  if (runs.size() > 1) {
    row("binds/s, tessel / this", [&](const RunResult& r) {
      return r.binds_per_s() > 0 ? fmt::format("{:.2f}x", runs[0].binds_per_s() / r.binds_per_s())
                                 : std::string("-");
    });
  }
}

constexpr std::string_view kUsage =
    "usage: tessel-bench e2e --nodes N --pods M [--qps Q] [--burst B]\n"
    "                        [--compare kube-scheduler|ceiling[,...]] [--seed S] [--json]\n"
    "                        [--kubeconfig FILE] [--namespace NS] [--tessel-scheduler PATH]\n"
    "                        [--kube-scheduler PATH] [--log-dir DIR] [--timeout S] [--idle S]\n"
    "Runs on the cluster of --kubeconfig (default $KUBECONFIG; admin rights), e.g. the one of\n"
    "tools/cluster/cluster.sh up. Creates N nodes labelled tessel.io/e2e=true and M pods in NS\n"
    "(default tessel-e2e), replacing those of earlier runs. See docs/bench.md.\n";

Options ParseFlags(int argc, char** argv) {
  Options o;
  if (const char* k = std::getenv("KUBECONFIG")) o.kubeconfig = k;
  cmd::FlagSet flags("tessel-bench e2e", std::string(kUsage));
  flags.Int("--nodes", "N", &o.nodes, {.min = 1}, "nodes to register")
      .Int("--pods", "M", &o.pods, {.min = 1}, "pods to create")
      .Double("--qps", "Q", &o.qps, cmd::Sign::kPositive, "client QPS of both schedulers (default 50)")
      .Int("--burst", "B", &o.burst, {.min = 1}, "client burst of both schedulers (default 100)")
      .List("--compare", "WHAT[,WHAT]", &o.compare, "also run kube-scheduler, or the ceiling: the perfect plan bound\nfrom many clients, no scheduler",
            {"kube-scheduler", "ceiling"})
      .Int("--seed", "S", &o.seed, {.min = 0}, "random seed of the workload (default 42)")
      .Bool("--json", &o.json_out, "print JSON")
      .String("--kubeconfig", "FILE", &o.kubeconfig, "the cluster (default $KUBECONFIG)")
      .String("--namespace", "NS", &o.ns, "namespace of the pods (default tessel-e2e)")
      .String("--tessel-scheduler", "PATH", &o.tessel_scheduler, "the binary (default: next to this one)")
      .String("--kube-scheduler", "PATH", &o.kube_scheduler, "kube-scheduler's binary (default: on PATH)")
      .String("--log-dir", "DIR", &o.log_dir, "the schedulers' logs (default: a new temporary dir)")
      .Int("--timeout", "S", &o.timeout_s, {.min = 1}, "a run ends at the latest after S seconds (default 900)")
      .Int("--idle", "S", &o.idle_s, {.min = 1}, "... or when no pod was bound for S seconds (default 20)");
  cmd::ParseOrExit(flags, argc, argv);
  if (o.nodes == 0 || o.pods == 0) Die(StrCat("--nodes and --pods are required\n", kUsage));
  if (o.kubeconfig.empty()) Die("no --kubeconfig and no $KUBECONFIG (see tools/cluster/cluster.sh up)");
  if (o.tessel_scheduler.empty()) o.tessel_scheduler = live::SelfDir() + "/tessel-scheduler";
  if (access(o.tessel_scheduler.c_str(), X_OK) != 0) {
    Die(StrCat(o.tessel_scheduler, " is not an executable (build tessel-scheduler, or pass --tessel-scheduler)"));
  }
  if (std::find(o.compare.begin(), o.compare.end(), "kube-scheduler") != o.compare.end() &&
      o.kube_scheduler.find('/') == std::string::npos) {
    // execv does not search PATH.
    const char* path = std::getenv("PATH");
    for (std::string_view rest = path ? path : ""; !rest.empty();) {
      const size_t colon = rest.find(':');
      const std::string candidate = StrCat(rest.substr(0, colon), "/", o.kube_scheduler);
      if (access(candidate.c_str(), X_OK) == 0) {
        o.kube_scheduler = candidate;
        break;
      }
      rest = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
    }
    if (o.kube_scheduler.find('/') == std::string::npos) {
      Die("kube-scheduler is not on PATH: pass --kube-scheduler \"$(TESSEL_BUILD_KUBE_SCHEDULER=1 "
          "tools/cluster/build-k8s.sh)/kube-scheduler\"");
    }
  }
  if (o.log_dir.empty()) o.log_dir = StrCat(std::filesystem::temp_directory_path().string(), "/tessel-e2e-", getpid());
  std::filesystem::create_directories(o.log_dir);
  return o;
}

}  // namespace

int E2eMain(int argc, char** argv) {
  const Options o = ParseFlags(argc, argv);
  auto config = kube::LoadKubeconfig(o.kubeconfig);
  if (!config.ok()) Die(config.status().ToString());
  // The bench's own client is not throttled: object creation is not what is measured.
  auto client = KubeClient::New(*config, {.qps = 1e6, .burst = 1000000,
                                          .user_agent = "tessel-bench-e2e"});
  if (!client.ok()) Die(client.status().ToString());

  const std::vector<int64_t> sizes = e2e::GeneratePodSizes(o.seed, o.pods);
  int64_t gpus_asked = 0;
  for (int64_t s : sizes) gpus_asked += s;
  const int64_t placeable = e2e::PlaceableCount(sizes, o.nodes);

  std::cerr << "tessel-bench e2e: registering " << o.nodes << " nodes\n";
  live::SetUpNodes(**client, o.ns, o.nodes, e2e::kGpusPerNode);
  std::vector<RunResult> runs;
  runs.push_back(RunScheduler(**client, o, sizes, placeable, "tessel"));
  for (const std::string& what : o.compare) {
    runs.push_back(RunScheduler(**client, o, sizes, placeable, what));
  }
  live::DeletePods(**client, o.ns);

  if (o.json_out) {
    json out = {{"nodes", o.nodes},         {"gpus_per_node", e2e::kGpusPerNode},
                {"pods", o.pods},           {"gpus_asked", gpus_asked},
                {"placeable", placeable},   {"qps", o.qps},
                {"burst", o.burst},         {"seed", o.seed},
                {"runs", json::array()}};
    for (const RunResult& r : runs) out["runs"].push_back(ToJson(r));
    std::cout << out.dump(2) << "\n";
  } else {
    PrintTable(o, gpus_asked, placeable, runs);
  }
  for (const RunResult& r : runs) {
    if (r.overcommitted_nodes > 0) return 3;  // a correctness failure, whatever the speed
  }
  return 0;
}

}  // namespace tessel::bench
