// What the live benches (`tessel-bench e2e`, `tessel-bench backlog`) share: simulated GPU nodes
// and pods on a real apiserver, written from many client threads, and the scheduler process they
// start and measure. Every object carries the label tessel.io/e2e=true, so a run replaces the
// objects of an earlier one.
//
//   live::SetUpNodes(client, "tessel-e2e", 5000);
//   live::ParallelFor(n, [&](int64_t i) { live::Check(client.Do(...), "create pod"); });
//   live::Process scheduler(argv, log_path);   // stopped (SIGTERM, then SIGKILL) when destroyed
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "scheduler/kube/client.h"

namespace tessel::bench::live {

// Client threads that create objects (as many requests in flight as tessel-scheduler's
// --bind-workers).
inline constexpr int kWriters = 32;
inline constexpr std::string_view kLabel = "tessel.io/e2e";

std::string NodeName(int64_t i);  // e2e-node-00042

// Prints "tessel-bench: <message>" and exits with status 1.
[[noreturn]] void Die(std::string_view message);
// Dies unless the request succeeded (or, with allow_conflict, answered 409).
void Check(const absl::StatusOr<kube::Response>& r, std::string_view what, bool allow_conflict = false);
// Runs fn(i) for i in [0, n) on kWriters threads.
void ParallelFor(int64_t n, const std::function<void(int64_t)>& fn);

// A pod of the bench in `ns` asking `gpus` whole GPUs, for `scheduler_name`; bound already when
// `node` is given (spec.nodeName, as a pod that runs there).
nlohmann::json PodObject(std::string_view ns, std::string_view name, int64_t gpus,
                         std::string_view scheduler_name, std::string_view node = {});
std::string PodsPath(std::string_view ns);
// Deletes the bench's pods in `ns` (at once: no kubelet would finish a graceful delete) and
// waits until they are gone (the delete is sent again while pods are left: the apiserver stops a
// collection delete when the client's request times out).
void DeletePods(kube::KubeClient& client, std::string_view ns);
// Creates `ns`, deletes the bench's pods there and its nodes, and registers `nodes` Ready,
// untainted nodes of gpus_per_node GPUs (nvidia.com/gpu), 64 CPUs and 256 GiB each.
void SetUpNodes(kube::KubeClient& client, std::string_view ns, int64_t nodes, int64_t gpus_per_node);

// A process (a scheduler), its output in a log file.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::string& log_path);
  ~Process() { Stop(); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  bool Running();
  // The process's peak resident set (VmHWM) in KiB, -1 when it is gone.
  int64_t PeakRssKib() const;
  // The process's user + system CPU seconds so far (/proc/PID/stat), -1 when it is gone.
  double CpuSeconds() const;
  void Stop();
  const std::string& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string log_;
};

// The directory of the running binary (tessel-scheduler is looked for next to it).
std::string SelfDir();

}  // namespace tessel::bench::live
