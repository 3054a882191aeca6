// `tessel-bench e2e`: see e2e.h. Its flags and its course: the nodes registered once, one run per
// scheduler (e2e_run.h), the report (e2e_report.h).
#include "bench/e2e/e2e.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "bench/e2e/e2e_report.h"
#include "bench/e2e/e2e_run.h"
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
using e2e::Options;
using e2e::RunResult;
using kube::KubeClient;
using live::Die;

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
  runs.push_back(e2e::RunScheduler(**client, o, sizes, placeable, "tessel"));
  for (const std::string& what : o.compare) {
    runs.push_back(e2e::RunScheduler(**client, o, sizes, placeable, what));
  }
  live::DeletePods(**client, o.ns);

  if (o.json_out) {
    json out = {{"nodes", o.nodes},         {"gpus_per_node", e2e::kGpusPerNode},
                {"pods", o.pods},           {"gpus_asked", gpus_asked},
                {"placeable", placeable},   {"qps", o.qps},
                {"burst", o.burst},         {"seed", o.seed},
                {"runs", json::array()}};
    for (const RunResult& r : runs) out["runs"].push_back(e2e::ToJson(r));
    std::cout << out.dump(2) << "\n";
  } else {
    e2e::PrintTable(o, gpus_asked, placeable, runs);
  }
  for (const RunResult& r : runs) {
    if (r.overcommitted_nodes > 0) return 3;  // a correctness failure, whatever the speed
  }
  return 0;
}

}  // namespace tessel::bench
