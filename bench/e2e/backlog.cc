// `tessel-bench backlog`: see backlog.h.
#include "bench/e2e/backlog.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/e2e/live_cluster.h"
#include "nlohmann/json.hpp"
#include "scheduler/cmd/flags.h"
#include "scheduler/kube/kubeconfig.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using live::Check;
using live::Die;

constexpr int64_t kGpusPerNode = 8;
constexpr int64_t kPendingGpus = 2;  // more than a departure frees: a running pod asks 1

struct BacklogOptions {
  int64_t nodes = 0;
  int64_t pending = 0;
  double churn = 10;    // departures (each replaced on its node) per second
  int64_t seconds = 60;  // each measured window
  bool json_out = false;
  std::string kubeconfig;
  std::string ns = "tessel-e2e";
  std::string tessel_scheduler;
  std::string log_dir;
};

constexpr std::string_view kBacklogUsage =
    "usage: tessel-bench backlog --nodes N --pending P [--churn R] [--seconds S] [--json]\n"
    "                            [--kubeconfig FILE] [--namespace NS] [--tessel-scheduler PATH]\n"
    "                            [--log-dir DIR]\n"
    "Runs on the cluster of --kubeconfig (default $KUBECONFIG; admin rights), e.g. the one of\n"
    "tools/cluster/cluster.sh up. Registers N nodes of 8 GPUs, fills each with 8 running 1-GPU\n"
    "pods, creates P pending 2-GPU pods that fit nowhere, starts tessel-scheduler and measures its\n"
    "attempts and CPU: while it tries the backlog once, then S seconds with nothing changing, then\n"
    "S seconds with R running pods a second ending and replaced on their node (default R 10,\n"
    "S 60). See docs/bench.md.\n";

BacklogOptions ParseBacklogFlags(int argc, char** argv) {
  BacklogOptions o;
  if (const char* k = std::getenv("KUBECONFIG")) o.kubeconfig = k;
  cmd::FlagSet flags("tessel-bench backlog", std::string(kBacklogUsage));
  flags.Int("--nodes", "N", &o.nodes, {.min = 1}, "nodes of 8 GPUs to register")
      .Int("--pending", "P", &o.pending, {.min = 1}, "pending 2-GPU pods that fit nowhere")
      .Double("--churn", "R", &o.churn, cmd::Sign::kPositive, "running pods ending (and replaced) a second (default 10)")
      .Int("--seconds", "S", &o.seconds, {.min = 1}, "each measured window (default 60)")
      .Bool("--json", &o.json_out, "print JSON")
      .String("--kubeconfig", "FILE", &o.kubeconfig, "the cluster (default $KUBECONFIG)")
      .String("--namespace", "NS", &o.ns, "namespace of the pods (default tessel-e2e)")
      .String("--tessel-scheduler", "PATH", &o.tessel_scheduler, "the binary (default: next to this one)")
      .String("--log-dir", "DIR", &o.log_dir, "the scheduler's log (default: a new temporary dir)");
  cmd::ParseOrExit(flags, argc, argv);
  if (o.nodes == 0 || o.pending == 0) Die(StrCat("--nodes and --pending are required\n", kBacklogUsage));
  if (o.kubeconfig.empty()) Die("no --kubeconfig and no $KUBECONFIG (see tools/cluster/cluster.sh up)");
  if (o.tessel_scheduler.empty()) o.tessel_scheduler = live::SelfDir() + "/tessel-scheduler";
  if (access(o.tessel_scheduler.c_str(), X_OK) != 0) {
    Die(StrCat(o.tessel_scheduler, " is not an executable (build tessel-scheduler, or pass --tessel-scheduler)"));
  }
  if (o.log_dir.empty()) {
    o.log_dir = StrCat(std::filesystem::temp_directory_path().string(), "/tessel-backlog-", getpid());
  }
  std::filesystem::create_directories(o.log_dir);
  return o;
}

// A loopback port nothing listens on now (the scheduler's plain /metrics port).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) Die("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    Die("no free loopback port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// The sum of a metric's samples in the scheduler's /metrics (every label set), or -1 when the
// endpoint does not answer yet.
double Scrape(int port, std::string_view metric, std::string_view label_filter = {}) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  auto r = client.Get("/metrics");
  if (!r || r->status != 200) return -1;
  std::istringstream lines(r->body);
  double sum = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#' || !line.starts_with(metric)) continue;
    const char next = line.size() > metric.size() ? line[metric.size()] : '\0';
    if (next != '{' && next != ' ') continue;  // another metric with this prefix
    if (!label_filter.empty() && line.find(label_filter) == std::string::npos) continue;
    sum += std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr);
  }
  return sum;
}

struct Window {
  std::string what;
  double seconds = 0;
  int64_t events = 0;  // departures (each replaced)
  double attempts = 0;
  double cpu_s = 0;
};

json ToJson(const Window& w) {
  return {{"window", w.what},          {"seconds", w.seconds}, {"departures", w.events},
          {"attempts", w.attempts},    {"attempts_per_s", w.attempts / w.seconds},
          {"scheduler_cpu_s", w.cpu_s}, {"scheduler_cpu_percent", 100 * w.cpu_s / w.seconds}};
}

void Report(const BacklogOptions& o, const std::vector<Window>& windows, double still_parked, int64_t rss_kib) {
  if (o.json_out) {
    json out = {{"nodes", o.nodes}, {"gpus_per_node", kGpusPerNode}, {"pending", o.pending},
                {"still_parked", still_parked}, {"scheduler_peak_rss_mib", rss_kib / 1024},
                {"windows", json::array()}};
    for (const Window& w : windows) out["windows"].push_back(ToJson(w));
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} nodes x {} GPUs full of 1-GPU pods, {} pending 2-GPU pods; scheduler peak RSS {} MiB\n",
                           o.nodes, kGpusPerNode, o.pending, rss_kib / 1024);
  std::cout << fmt::format("{:<16}{:>10}{:>12}{:>12}{:>12}{:>14}{:>8}\n", "window", "seconds", "departures",
                           "attempts", "attempts/s", "scheduler CPU", "CPU %");
  for (const Window& w : windows) {
    std::cout << fmt::format("{:<16}{:>10.1f}{:>12}{:>12.0f}{:>12.1f}{:>12.2f} s{:>7.1f}%\n", w.what, w.seconds,
                             w.events, w.attempts, w.attempts / w.seconds, w.cpu_s, 100 * w.cpu_s / w.seconds);
  }
  std::cout << fmt::format("pods still parked at the end: {:.0f} of {}\n", still_parked, o.pending);
}

}  // namespace

int BacklogMain(int argc, char** argv) {
  const BacklogOptions o = ParseBacklogFlags(argc, argv);
  auto config = kube::LoadKubeconfig(o.kubeconfig);
  if (!config.ok()) Die(config.status().ToString());
  auto made = kube::KubeClient::New(*config, {.qps = 1e6, .burst = 1000000, .user_agent = "tessel-bench-backlog"});
  if (!made.ok()) Die(made.status().ToString());
  kube::KubeClient& client = **made;
  auto create = [&](const json& pod) {
    Check(client.Do({.method = "POST", .path = live::PodsPath(o.ns), .body = pod.dump()}),
          StrCat("create pod ", pod["metadata"]["name"].get<std::string>()));
  };
  auto running = [](int64_t i) { return fmt::format("e2e-run-{:06d}", i); };

  std::cerr << "tessel-bench backlog: registering " << o.nodes << " nodes\n";
  live::SetUpNodes(client, o.ns, o.nodes, kGpusPerNode);
  const int64_t fillers = o.nodes * kGpusPerNode;
  std::cerr << "tessel-bench backlog: " << fillers << " running 1-GPU pods, " << o.pending
            << " pending 2-GPU pods\n";
  live::ParallelFor(fillers, [&](int64_t i) {
    create(live::PodObject(o.ns, running(i), 1, "tessel", live::NodeName(i / kGpusPerNode)));
  });
  live::ParallelFor(o.pending, [&](int64_t i) {
    create(live::PodObject(o.ns, fmt::format("e2e-pod-{:06d}", i), kPendingGpus, "tessel"));
  });

  const int port = FreePort();
  const std::string log = StrCat(o.log_dir, "/tessel.log");
  std::cerr << "tessel-bench backlog: starting tessel-scheduler (log: " << log << ", metrics on 127.0.0.1:"
            << port << ")\n";
  live::Process scheduler({o.tessel_scheduler, "--kubeconfig", o.kubeconfig, "--leader-elect=false",
                           "--bind-address", "127.0.0.1", "--port", std::to_string(port), "--secure-port", "0"},
                          log);
  auto attempts = [&] { return Scrape(port, "scheduler_schedule_attempts_total"); };
  auto parked = [&] { return Scrape(port, "scheduler_pending_pods", "queue=\"unschedulable\""); };
  std::vector<Window> windows;

  // 1. The first pass: until every pending pod was tried and parked.
  const auto start = Clock::now();
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  while (parked() < static_cast<double>(o.pending)) {
    if (!scheduler.Running()) Die(StrCat("tessel-scheduler exited; its log: ", log));
    if (since(start) > 1800) Die(StrCat("the backlog was not parked after 30 minutes; log: ", log));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  windows.push_back({.what = "first pass", .seconds = since(start), .attempts = attempts(),
                     .cpu_s = scheduler.CpuSeconds()});

  // 2. Nothing changes; 3. pods end and are replaced on their node.
  std::mt19937_64 rng(7);
  int64_t next_filler = fillers;
  std::vector<std::string> filler_names(static_cast<size_t>(fillers));
  for (int64_t i = 0; i < fillers; ++i) filler_names[static_cast<size_t>(i)] = running(i);
  for (const bool churn : {false, true}) {
    Window w{.what = churn ? StrCat("churn ", o.churn, "/s") : "quiet"};
    const double attempts_before = attempts(), cpu_before = scheduler.CpuSeconds();
    const auto window_start = Clock::now();
    while (since(window_start) < static_cast<double>(o.seconds)) {
      if (!churn) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      const size_t k = static_cast<size_t>(rng() % static_cast<uint64_t>(fillers));
      Check(client.Do({.method = "DELETE",
                       .path = StrCat(live::PodsPath(o.ns), "/", filler_names[k]),
                       .body = R"({"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0})"}),
            StrCat("delete pod ", filler_names[k]));
      filler_names[k] = running(next_filler++);
      create(live::PodObject(o.ns, filler_names[k], 1, "tessel", live::NodeName(static_cast<int64_t>(k) / kGpusPerNode)));
      ++w.events;
      const auto due = window_start + std::chrono::duration<double>(static_cast<double>(w.events) / o.churn);
      std::this_thread::sleep_until(std::chrono::time_point_cast<Clock::duration>(due));
    }
    w.seconds = since(window_start);
    w.attempts = attempts() - attempts_before;
    w.cpu_s = scheduler.CpuSeconds() - cpu_before;
    windows.push_back(w);
  }
  const double still_parked = parked();
  const int64_t rss_kib = scheduler.PeakRssKib();
  scheduler.Stop();
  Report(o, windows, still_parked, rss_kib);
  std::cout.flush();
  std::cerr << "tessel-bench backlog: deleting the pods\n";
  live::DeletePods(client, o.ns);
  return 0;
}

}  // namespace tessel::bench
