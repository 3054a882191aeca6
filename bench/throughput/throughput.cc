// The throughput bench (see throughput.h).
#include "bench/throughput/throughput.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>

#include "absl/synchronization/mutex.h"
#include "bench/sim/sim_world.h"
#include "nlohmann/json.hpp"
#include "plugins/default_preemption/default_preemption.h"
#include "plugins/registry.h"
#include "scheduler/cmd/flags.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// --flavors: the two flavors, by node label, reserved first.
constexpr std::array<std::string_view, 2> kFlavors = {"reserved", "on-demand"};
constexpr std::string_view kFlavorLabel = "tessel.io/flavor";

Node SyntheticNode(int i, int gpus, bool flavors) {
  const std::string name = fmt::format("node-{:05d}", i);
  testing::NodeBuilder n(name);
  n.Uid(StrCat("uid-", name))
      .Label("kubernetes.io/hostname", name)
      .Label("topology.kubernetes.io/zone", StrCat("zone-", i % 4))
      .Cpu(96000)
      .Memory(int64_t{384} << 30)
      .MaxPods(110)
      .Gpus(gpus)
      .GpuCount(gpus)
      .GpuProduct("NVIDIA-A100-SXM4-80GB")
      .CapacityIsAllocatable();
  if (i % 5 == 0) n.Label("tessel.io/pool", "train");
  if (flavors) n.Label(std::string(kFlavorLabel), std::string(kFlavors[i % 2]));
  if (i % 10 == 0) n.Taint("tessel.io/dedicated", "infer");
  return n.Build();
}

// --priorities: the classes pods choose from.
constexpr int kPriorityClasses = 4;
std::string PriorityClassName(int k) { return StrCat("bench-p", (k + 1) * 1000); }

PriorityClass BenchPriorityClass(int k) {
  PriorityClass pc;
  pc.meta.name = PriorityClassName(k);
  pc.value = (k + 1) * 1000;
  return pc;
}

nlohmann::json BenchFlavor(std::string_view name) {
  return {{"apiVersion", "tessel.io/v1alpha1"},
          {"kind", "ResourceFlavor"},
          {"metadata", {{"name", name}}},
          {"spec", {{"nodeLabels", {{kFlavorLabel, name}}}}}};
}

// --queues: namespace `name`'s Queue, in the cohort all share; with --flavors its GPUs are split
// between the flavors.
nlohmann::json BenchQueue(const std::string& name, int64_t gpus, bool flavors) {
  nlohmann::json spec{{"namespaces", {name}}, {"cohort", "bench"}};
  if (!flavors) {
    spec["nominalQuota"] = {{"nvidia.com/gpu", std::to_string(gpus)}};
  } else {
    nlohmann::json list = nlohmann::json::array();
    for (std::string_view flavor : kFlavors) {
      list.push_back({{"name", flavor},
                      {"resources", {{{"name", "nvidia.com/gpu"}, {"nominalQuota", std::to_string(gpus / 2)}}}}});
    }
    spec["resourceGroups"] = {{{"coveredResources", {"nvidia.com/gpu"}}, {"flavors", list}}};
  }
  return {{"apiVersion", "tessel.io/v1alpha1"}, {"kind", "Queue"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

std::string BenchNamespace(int i, int namespaces) {
  return namespaces > 1 ? StrCat("bench-", i % namespaces) : "bench";
}

// FNV-1a over the outcome: every pod's node in key order, then the evictions in order.
uint64_t Digest(const SimulatedCluster& sim) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::string_view text) {
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  for (const auto& [key, node] : sim.placements()) {
    mix(key);
    mix(node);
  }
  for (const std::string& key : sim.evicted()) mix(key);
  return h;
}

Pod SyntheticPod(int i, int gpus, int namespaces, std::mt19937_64& rng) {
  Pod p;
  p.meta.name = fmt::format("pod-{:06d}", i);
  p.meta.namespace_ = BenchNamespace(i, namespaces);
  p.meta.uid = StrCat("uid-", p.meta.name);
  p.meta.creation_timestamp = absl::FromUnixSeconds(1'700'000'000 + i);
  p.scheduler_name = "tessel";
  const uint64_t r = rng() % 10;
  if (r == 0) {
    p.tolerations.push_back({.key = "tessel.io/dedicated", .op = Toleration::Operator::kEqual,
                             .value = "infer", .effect = TaintEffect::kNoSchedule});
  } else if (r == 1) {
    p.node_selector["tessel.io/pool"] = "train";
  }
  p.requests.milli_cpu = int64_t{4000} * gpus;
  p.requests.memory = (int64_t{16} << 30) * gpus;
  p.requests.pods = 1;
  p.requests.Set(kNvidiaGpu, int64_t{gpus} * 1000);
  return p;
}

double Quantile(std::vector<double> sorted, double q) {
  if (sorted.empty()) return 0;
  std::sort(sorted.begin(), sorted.end());
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())));
  return sorted[i];
}

absl::StatusOr<std::vector<int>> ParseMix(std::string_view text) {
  std::vector<int> out;
  for (std::string_view rest = text; !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0 || v > 64) {
      return absl::InvalidArgumentError(StrCat("--mix: \"", item, "\" is not a GPU count 0..64"));
    }
    out.push_back(static_cast<int>(v));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (out.empty()) return absl::InvalidArgumentError("--mix: want a list such as 1,1,2,4,8");
  return out;
}

}  // namespace

double PeakRssMib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return 0;
}

absl::StatusOr<ThroughputResult> RunThroughput(const ThroughputOptions& options) {
  SchedulerConfig config;
  if (!options.config_path.empty()) {
    auto loaded = LoadSchedulerConfig(options.config_path);
    if (!loaded.ok()) return loaded.status();
    config = *std::move(loaded);
  }
  config.parallelism = options.threads;

  auto world = SimWorld::New({.config = &config,
                              .seed = options.seed,
                              .reference_evaluation = options.reference,
                              .gang_status = false});
  if (!world.ok()) return world.status();
  Scheduler& s = *(*world)->scheduler;
  SimulatedCluster& sim = (*world)->sim;

  const Clock::time_point load_start = Clock::now();
  // Fed in batches, as an informer's pages arrive: the bench never holds every object at once.
  constexpr size_t kBatch = 4096;
  ObjectList objects;
  auto feed = [&](bool last) {
    if (!last && objects.nodes.size() + objects.pods.size() < kBatch) return;
    sim.Load(std::move(objects));
    objects = ObjectList();
  };
  for (int i = 0; i < options.nodes; ++i) {
    objects.nodes.push_back(SyntheticNode(i, options.gpus_per_node, options.queues && options.flavors));
    feed(false);
  }
  if (options.priorities) {
    for (int k = 0; k < kPriorityClasses; ++k) objects.priority_classes.push_back(BenchPriorityClass(k));
  }
  if (options.queues) {
    const int64_t gpus = int64_t{options.nodes} * options.gpus_per_node;
    for (int k = 0; k < options.namespaces; ++k) {
      objects.others.push_back(
          BenchQueue(BenchNamespace(k, options.namespaces), gpus / options.namespaces, options.flavors));
    }
    if (options.flavors) {
      for (std::string_view flavor : kFlavors) objects.others.push_back(BenchFlavor(flavor));
    }
  }
  feed(true);
  std::mt19937_64 rng(options.seed);
  std::mt19937_64 class_rng(options.seed + 1);
  for (int i = 0; i < options.bound; ++i) {
    Pod p;
    p.meta.name = fmt::format("running-{:07d}", i);
    p.meta.namespace_ = "bench";
    p.meta.uid = StrCat("uid-", p.meta.name);
    p.scheduler_name = "tessel";
    p.node_name = fmt::format("node-{:05d}", i % options.nodes);
    p.phase = PodPhase::kRunning;
    p.requests.milli_cpu = 100;
    p.requests.memory = int64_t{256} << 20;
    p.requests.pods = 1;
    objects.pods.push_back(std::move(p));
    feed(false);
  }
  feed(true);

  ThroughputResult result;
  std::vector<double> cycle_us;
  cycle_us.reserve(options.pods);
  const int waves = options.waves > 0 ? options.waves : options.priorities ? 4 : 1;
  for (int wave = 0, next = 0; wave < waves; ++wave) {
    const int end = static_cast<int>(int64_t{options.pods} * (wave + 1) / waves);
    for (; next < end; ++next) {
      const int gpus = options.mix[rng() % options.mix.size()];
      Pod p = SyntheticPod(next, gpus, options.namespaces, rng);
      if (options.priorities) p.priority_class_name = PriorityClassName(class_rng() % kPriorityClasses);
      objects.pods.push_back(std::move(p));
      feed(false);
    }
    feed(true);
    for (;;) {
      const Clock::time_point start = Clock::now();
      if (!s.ScheduleOne()) break;
      const double us = SecondsSince(start) * 1e6;
      if (cycle_us.empty()) result.load_seconds = SecondsSince(load_start);
      if (cycle_us.empty()) result.first_decision_us = us;
      cycle_us.push_back(us);
    }
  }
  result.evicted = static_cast<int64_t>(sim.evicted().size());
  result.digest = Digest(sim);
  if (const Framework* fw = s.FrameworkFor("tessel"); fw != nullptr) {
    result.cache = fw->DecisionCacheStats();
    if (const auto* pf = dynamic_cast<const default_preemption::DefaultPreemption*>(
            fw->FindPlugin(default_preemption::DefaultPreemption::kName))) {
      result.dry_runs = pf->memo_stats();
    }
  }
  result.decisions = static_cast<int64_t>(cycle_us.size());
  for (const auto& [key, node] : sim.placements()) result.scheduled += !node.empty();
  for (double us : cycle_us) result.seconds += us / 1e6;
  result.decisions_per_s = result.seconds > 0 ? static_cast<double>(result.decisions) / result.seconds : 0;
  result.p50_us = Quantile(cycle_us, 0.50);
  result.p99_us = Quantile(cycle_us, 0.99);
  result.peak_rss_mib = PeakRssMib();
  return result;
}

int ThroughputMain(int argc, char** argv) {
  ThroughputOptions options;
  bool json = false, deadlock_detection = false;
  std::string mix;
  cmd::FlagSet flags("tessel-bench throughput",
                     "usage: tessel-bench throughput --nodes N --pods M [--bound R] [--gpus-per-node 8] "
                     "[--mix 1,1,1,1,2,2,4,8] [--priorities] [--waves W] [--namespaces K] [--queues [--flavors]] [--config FILE] [--threads T] [--seed S] "
                     "[--reference] [--json]");
  flags.Int("--nodes", "N", &options.nodes, {1, 1'000'000}, "nodes of the synthetic cluster (default 5000)")
      .Int("--pods", "M", &options.pods, {1, 10'000'000}, "pending pods to decide (default 10000)")
      .Int("--bound", "R", &options.bound, {0, 10'000'000}, "pods already running when the bench starts (default 0)")
      .Int("--gpus-per-node", "G", &options.gpus_per_node, {0, 32}, "GPUs of each node (default 8)")
      .String("--mix", "1,1,1,1,2,2,4,8", &mix, "the GPUs each pod asks, drawn from this list")
      .String("--config", "FILE", &options.config_path, "scheduler configuration")
      .Int("--threads", "T", &options.threads, {1, 256}, "Filter/Score workers (the profile's parallelism; default 1)")
      .Int("--seed", "S", &options.seed, {0, 1 << 30}, "random seed (default 42)")
      .Bool("--mutex-deadlock-detection", &deadlock_detection,
            "check every mutex acquisition for lock-order cycles (Debian Abseil's default)")
      .Bool("--priorities", &options.priorities, "pods name PriorityClasses of four values")
      .Int("--waves", "W", &options.waves, {1, 1000}, "the pods arrive in W groups (default 4 with --priorities, else 1)")
      .Int("--namespaces", "K", &options.namespaces, {1, 100'000},
           "pending pods are spread over K namespaces, round robin (default 1)")
      .Bool("--queues", &options.queues, "each namespace has a Queue, all in one cohort, with an even share of the GPUs")
      .Bool("--flavors", &options.flavors,
            "with --queues: nodes are flavor reserved or on-demand by turns, and each Queue's GPUs are split between them")
      .Bool("--reference", &options.reference, "evaluate every node, without the decision cache")
      .Bool("--json", &json, "print JSON");
  cmd::ParseOrExit(flags, argc, argv);
  if (deadlock_detection) absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
  if (flags.Given("--mix")) {
    auto parsed = ParseMix(mix);
    if (!parsed.ok()) {
      std::cerr << "tessel-bench throughput: " << parsed.status().message() << "\n";
      return 2;
    }
    options.mix = *std::move(parsed);
  }
  auto result = RunThroughput(options);
  if (!result.ok()) {
    std::cerr << "tessel-bench throughput: " << result.status().message() << "\n";
    return 1;
  }
  if (json) {
    nlohmann::json out{{"decisions_per_s", result->decisions_per_s},
                       {"p50_us", result->p50_us},
                       {"p99_us", result->p99_us},
                       {"peak_rss_mib", result->peak_rss_mib},
                       {"decisions", result->decisions},
                       {"placed", result->scheduled},
                       {"evicted", result->evicted},
                       {"digest", fmt::format("{:016x}", result->digest)}};
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << fmt::format(
      "{} nodes x {} GPUs, {} running pods, {} pods decided ({} placed), {} thread(s){}\n"
      "decisions/s     {:.0f}\n"
      "p50 decision    {:.1f} us\n"
      "p99 decision    {:.1f} us\n"
      "load            {:.2f} s (nodes and pods fed to the scheduler, to the end of the first decision of {:.1f} us)\n"
      "peak RSS        {:.1f} MiB\n"
      "evicted         {}\n"
      "digest          {:016x} (placements and evictions; a --reference run must print the same)\n"
      "decision cache  {} chosen, {} fit nowhere, {} every node evaluated; {} with pods nominated ({} with a held node sat "
      "out; {} held verdicts reused)\n"
      "preemption      {} dry runs kept from earlier attempts, {} made\n",
      options.nodes, options.gpus_per_node, options.bound, result->decisions, result->scheduled, options.threads,
      options.reference ? ", reference evaluation" : "", result->decisions_per_s, result->p50_us,
      result->p99_us, result->load_seconds, result->first_decision_us, result->peak_rss_mib,
      result->evicted, result->digest, result->cache.answered, result->cache.no_fit, result->cache.fallbacks,
      result->cache.with_held, result->cache.held_out, result->cache.held_reused, result->dry_runs.kept,
      result->dry_runs.missed);
  return 0;
}

}  // namespace tessel::bench
