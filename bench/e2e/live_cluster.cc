// The live benches' shared parts (see live_cluster.h).
#include "bench/e2e/live_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

#include "scheduler/util/strings.h"

namespace tessel::bench::live {

using json = nlohmann::json;
using kube::KubeClient;
using kube::Response;

namespace {

json NodeObject(int64_t i, int64_t gpus_per_node) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", NodeName(i)},
            {"labels",
             {{std::string(kLabel), "true"},
              {"kubernetes.io/hostname", NodeName(i)},
              {"nvidia.com/gpu.count", std::to_string(gpus_per_node)},
              {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
              {"nvidia.com/gpu.memory", "81920"},
              {"nvidia.com/gpu.replicas", "1"},
              {"nvidia.com/gpu.sharing-strategy", "none"}}}}}};
}

json NodeStatus(int64_t gpus_per_node) {
  const json resources = {{"cpu", "64"},
                          {"memory", "256Gi"},
                          {"pods", "110"},
                          {"nvidia.com/gpu", std::to_string(gpus_per_node)}};
  return {{"status",
           {{"capacity", resources},
            {"allocatable", resources},
            {"conditions",
             {{{"type", "Ready"},
               {"status", "True"},
               {"reason", "KubeletReady"},
               {"message", "simulated by tessel-bench e2e"}}}}}}};
}

}  // namespace

std::string NodeName(int64_t i) { return fmt::format("e2e-node-{:05d}", i); }

[[noreturn]] void Die(std::string_view message) {
  std::cerr << "tessel-bench: " << message << "\n";
  std::exit(1);
}

void Check(const absl::StatusOr<Response>& r, std::string_view what, bool allow_conflict) {
  if (!r.ok()) Die(StrCat(what, ": ", r.status().ToString()));
  if (r->ok() || (allow_conflict && r->code == 409)) return;
  Die(StrCat(what, ": HTTP ", r->code, ": ", r->ErrorMessage()));
}

// Runs fn(i) for i in [0, n) on kWriters threads.
void ParallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  std::atomic<int64_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&] {
      for (int64_t i; (i = next.fetch_add(1)) < n;) fn(i);
    });
  }
  for (auto& t : threads) t.join();
}

json PodObject(std::string_view ns, std::string_view name, int64_t gpus, std::string_view scheduler_name,
               std::string_view node) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{std::string(kLabel), "true"}}}}},
              {"spec",
               {{"schedulerName", scheduler_name},
                {"nodeSelector", {{std::string(kLabel), "true"}}},
                {"containers",
                 {{{"name", "work"},
                   {"image", "registry.example/e2e:1"},
                   {"resources",
                    {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}},
                     {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

std::string PodsPath(std::string_view ns) { return StrCat("/api/v1/namespaces/", ns, "/pods"); }

// Deletes the bench's pods (at once: no kubelet would finish a graceful delete) and waits
// until they are gone.
void DeletePods(KubeClient& client, std::string_view ns) {
  auto none_left = [&] {
    auto r = client.Do({.path = StrCat(PodsPath(ns), "?limit=1")});
    Check(r, "list pods");
    json list = json::parse(r->body, nullptr, false);
    return list.is_object() && list.contains("items") && list["items"].empty();
  };
  // Tens of thousands of pods outlast the client's timeout, and the apiserver stops deleting
  // with it: the collection delete is sent again until none is left.
  for (int round = 0; round < 20; ++round) {
    auto deleted = client.Do({.method = "DELETE",
                              .path = StrCat(PodsPath(ns), "?labelSelector=", kLabel, "%3Dtrue"),
                              .body = R"({"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0})"});
    if (deleted.ok() || !absl::IsDeadlineExceeded(deleted.status())) Check(deleted, "delete the previous pods");
    for (int i = 0; i < 150; ++i) {
      if (none_left()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  Die("pods of an earlier run are still there after 20 rounds of deletion");
}

void SetUpNodes(KubeClient& client, std::string_view ns, int64_t nodes, int64_t gpus_per_node) {
  Check(client.Do({.method = "POST",
                   .path = "/api/v1/namespaces",
                   .body = json{{"apiVersion", "v1"},
                                {"kind", "Namespace"},
                                {"metadata", {{"name", ns}}}}
                               .dump()}),
        StrCat("create namespace ", ns), /*allow_conflict=*/true);
  DeletePods(client, ns);
  Check(client.Do({.method = "DELETE",
                   .path = StrCat("/api/v1/nodes?labelSelector=", kLabel, "%3Dtrue")}),
        "delete the previous nodes");
  const std::string status = NodeStatus(gpus_per_node).dump();
  ParallelFor(nodes, [&](int64_t i) {
    const std::string name = NodeName(i);
    Check(client.Do({.method = "POST", .path = "/api/v1/nodes", .body = NodeObject(i, gpus_per_node).dump()}),
          StrCat("create node ", name), /*allow_conflict=*/true);
    Check(client.Do({.method = "PATCH",
                     .path = StrCat("/api/v1/nodes/", name, "/status"),
                     .body = status,
                     .content_type = std::string(kube::kMergePatch)}),
          StrCat("set the status of node ", name));
    // The apiserver taints new nodes not-ready; only a node controller would lift it.
    Check(client.Do({.method = "PATCH",
                     .path = StrCat("/api/v1/nodes/", name),
                     .body = R"({"spec":{"taints":null}})",
                     .content_type = std::string(kube::kMergePatch)}),
          StrCat("untaint node ", name));
  });
}

Process::Process(const std::vector<std::string>& argv, const std::string& log_path) : log_(log_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) Die("fork failed");
  if (pid_ == 0) {
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(args[0], args.data());
    std::perror(args[0]);
    _exit(127);
  }
}

bool Process::Running() {
  if (exited_) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) exited_ = true;
  return !exited_;
}

int64_t Process::PeakRssKib() const {
  std::ifstream in(StrCat("/proc/", pid_, "/status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtoll(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

double Process::CpuSeconds() const {
  std::ifstream in(StrCat("/proc/", pid_, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t comm_end = stat.rfind(')');  // the command name may hold spaces
  if (comm_end == std::string::npos) return -1;
  std::istringstream fields(stat.substr(comm_end + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {  // field 3 is the state; 14, 15 the times
    if (i == 14) utime = std::strtoll(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoll(field.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void Process::Stop() {
  if (exited_ || pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 100 && Running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (Running()) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    exited_ = true;
  }
}

std::string SelfDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "." : exe.parent_path().string();
}

}  // namespace tessel::bench::live
