// Replay: decode the snapshot, feed it to a SimulatedCluster, run until idle, report.
#include "bench/replay/replay.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "scheduler/util/strings.h"
#include "scheduler/cmd/flags.h"
#include "bench/sim/sim_world.h"
#include "plugins/fgd/target_workload.h"
#include "plugins/registry.h"
#include "scheduler/api/decode.h"
#include "scheduler/api/quantity.h"
#include "scheduler/report/cluster_report.h"
#include "scheduler/util/file.h"

namespace tessel::bench {

using nlohmann::json;

namespace {

json QuantityMap(const Resources& r) {
  json out = json::object();
  for (const auto& [name, amount] : r.Entries()) out[name] = FormatResourceQuantity(name, amount);
  return out;
}

// The cluster report after the run (scheduler/report/cluster_report.h). GPUs in physical-GPU
// equivalents; FGD's fragmentation measured against the mix of pods in the snapshot itself (the
// idle GPU milli that those pod shapes could not use where it sits); per team Queue its nominal
// quota, usage, what it borrows from its cohort and its pods left pending.
ClusterReport Report(Cache& cache, const Scheduler& scheduler, const SimulatedCluster& sim,
                     const ObjectList& objects) {
  Snapshot snapshot;
  cache.UpdateSnapshot(snapshot);
  std::vector<const Pod*> pods, pending;
  for (const Pod& pod : objects.pods) {
    pods.push_back(&pod);
    auto it = sim.placements().find(pod.Key());
    if (it != sim.placements().end() && it->second.empty()) pending.push_back(&pod);
  }
  const gpu::FragModel workload = gpu::WorkloadOfPods(pods);
  std::shared_ptr<const QueueDirectory> directory = scheduler.Queues();
  return ReportCluster(snapshot,
                       {.queues = directory.get(), .pending = pending, .workload = &workload});
}

json Metrics(const ClusterReport& report, const SimulatedCluster& sim) {
  int64_t placed = 0;
  for (const auto& [key, node] : sim.placements()) placed += !node.empty();
  const GpuReport& gpus = report.gpus;
  json out = json{
      {"nodes", report.nodes},
      {"pods_pending", sim.placements().size()},
      {"pods_scheduled", placed},
      {"pods_unschedulable", static_cast<int64_t>(sim.placements().size()) - placed},
      {"pods_evicted", sim.evicted().size()},
      {"evictions_refused", sim.evictions_refused()},
      {"scheduling_cycles", sim.cycles()},
      {"cpu_allocatable_milli", report.allocatable.milli_cpu},
      {"cpu_allocated_milli", report.requested.milli_cpu},
      {"gpu_allocatable_milli", report.allocatable.Get(kNvidiaGpu)},
      {"gpu_allocated_milli", report.requested.Get(kNvidiaGpu)},
      {"gpu_devices", gpus.devices},
      {"gpu_equivalent_capacity_milli", gpus.capacity_milli},
      {"gpu_equivalent_allocated_milli", gpus.allocated_milli},
      {"gpu_whole_free_devices", gpus.whole_free_devices},
      {"gpu_partially_used_free_milli", gpus.partially_used_free_milli},
      {"gpu_fragmented_milli", gpus.fragmented_milli},
      {"gpu_fragmentation_pct_of_idle",
       gpus.idle_milli > 0 ? static_cast<double>(gpus.fragmented_milli) * 100.0 / static_cast<double>(gpus.idle_milli) : 0.0},
  };
  if (!report.queues.empty()) {
    json queues = json::object();
    for (const QueueReport& r : report.queues) {
      queues[r.name] = json{{"cohort", r.cohort},
                            {"nominal", QuantityMap(r.nominal)},
                            {"usage", QuantityMap(r.usage)},
                            {"borrowed", QuantityMap(r.borrowed)},
                            {"pending", r.pending_pods}};
      if (!r.flavors.empty()) {
        json flavors = json::object();
        for (const FlavorReport& f : r.flavors) {
          flavors[f.name] = json{{"nominal", QuantityMap(f.nominal)},
                                 {"usage", QuantityMap(f.usage)},
                                 {"borrowed", QuantityMap(f.borrowed)}};
        }
        queues[r.name]["flavors"] = std::move(flavors);
      }
    }
    out["queues"] = std::move(queues);
  }
  // The cohort tree, when Cohort objects define one (flat cohorts are in each queue's entry).
  if (std::any_of(report.cohorts.begin(), report.cohorts.end(), [](const CohortReport& c) { return c.defined; })) {
    json cohorts = json::object();
    for (const CohortReport& c : report.cohorts) {
      cohorts[c.name] = json{{"parent", c.parent},
                             {"subtree_quota", QuantityMap(c.subtree)},
                             {"usage", QuantityMap(c.usage)},
                             {"borrowed", QuantityMap(c.borrowed)},
                             {"weighted_share_milli", c.weighted_share_milli}};
      if (!c.problem.empty()) cohorts[c.name]["problem"] = c.problem;
    }
    out["cohorts"] = std::move(cohorts);
  }
  return out;
}

}  // namespace

absl::StatusOr<json> RunReplayText(std::string_view snapshot, const ReplayOptions& options) {
  absl::StatusOr<ObjectList> objects = DecodeList(snapshot);
  if (!objects.ok()) return objects.status();
  SchedulerConfig config;
  if (!options.config_path.empty()) {
    auto loaded = LoadSchedulerConfig(options.config_path);
    if (!loaded.ok()) return loaded.status();
    config = *std::move(loaded);
  }
  std::vector<std::string> warnings = objects->warnings;

  // The snapshot was taken when its newest object had been made or started: the virtual clock
  // starts there, so run times (minimum run times before a move or a preemption) read as they
  // did in the cluster.
  absl::Time taken = absl::InfinitePast();
  for (const Pod& p : objects->pods) {
    taken = std::max({taken, p.meta.creation_timestamp, p.start_time.value_or(absl::InfinitePast())});
  }
  SimWorldOptions world_options{.config = &config, .seed = options.seed};
  if (taken != absl::InfinitePast() && taken > absl::UnixEpoch()) world_options.start = taken;
  auto world = SimWorld::New(world_options);
  if (!world.ok()) return world.status();
  SimulatedCluster& sim = (*world)->sim;
  Cache& cache = (*world)->cache;
  for (std::string& w : sim.Load(*objects)) warnings.push_back(std::move(w));
  sim.RunUntilIdle();

  json placements = json::object();
  for (const auto& [key, node] : sim.placements()) {
    placements[key] = node.empty() ? json(nullptr) : json(node);
  }
  json reasons = json::object();
  for (const auto& [key, why] : sim.reasons()) reasons[key] = why;
  // Each gang's outcome: its last reported status.
  json gangs = json::object();
  for (const auto& [name, g] : sim.gangs()) {
    json entry{{"phase", gang::PhaseName(g.phase)}, {"reason", gang::ReasonName(g.reason)}, {"message", g.message},
               {"scheduled", g.scheduled}, {"members", g.members}, {"min_member", g.min_member}};
    if (!g.domain.empty()) entry["domain"] = g.domain;
    gangs[name] = std::move(entry);
  }
  json result{{"placements", placements},
              {"reasons", reasons},
              {"evicted", sim.evicted()},
              {"warnings", warnings},
              {"metrics", Metrics(Report(cache, *(*world)->scheduler, sim, *objects), sim)}};
  if (!gangs.empty()) result["gangs"] = std::move(gangs);
  // Claims bound for the placed pods: the node written as volume.kubernetes.io/selected-node
  // (null for a static PV match) and the PV the claim was bound to.
  json claims = json::object();
  for (const auto& [key, c] : sim.claims()) {
    claims[key] = json{{"selected_node", c.selected_node.empty() ? json(nullptr) : json(c.selected_node)},
                       {"volume", c.volume}};
  }
  if (!claims.empty()) result["claims"] = std::move(claims);
  return result;
}

absl::StatusOr<json> RunReplay(const ReplayOptions& options) {
  auto text = ReadFileToString(options.snapshot_path);
  if (!text.ok()) return text.status();
  auto result = RunReplayText(*text, options);
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        StrCat(options.snapshot_path, ": ", result.status().message()));
  }
  return result;
}

std::string FormatPlacementTable(const json& result) {
  size_t width = 3;
  for (const auto& [key, node] : result["placements"].items()) width = std::max(width, key.size());
  std::string out = fmt::format("{:<{}}  {}\n", "POD", width, "NODE");
  for (const auto& [key, node] : result["placements"].items()) {
    if (node.is_null()) {
      std::string why = result["reasons"].value(key, "");
      fmt::format_to(std::back_inserter(out), "{:<{}}  -  ({})\n", key, width, why);
    } else {
      fmt::format_to(std::back_inserter(out), "{:<{}}  {}\n", key, width, node.get<std::string>());
    }
  }
  const json& m = result["metrics"];
  // GPUs in physical-GPU equivalents: time-sliced replicas and fractions are not whole GPUs.
  fmt::format_to(std::back_inserter(out),
                 "\n{} of {} pending pods placed on {} nodes; GPUs allocated {} of {} (physical-GPU equivalents)\n",
                 m["pods_scheduled"].get<int64_t>(), m["pods_pending"].get<int64_t>(),
                 m["nodes"].get<int64_t>(), FormatMilli(m["gpu_equivalent_allocated_milli"].get<int64_t>()),
                 FormatMilli(m["gpu_equivalent_capacity_milli"].get<int64_t>()));
  for (const auto& e : result["evicted"]) StrAppend(&out, "evicted: ", e.get<std::string>(), "\n");
  for (const auto& w : result["warnings"]) StrAppend(&out, "warning: ", w.get<std::string>(), "\n");
  return out;
}

int ReplayMain(int argc, char** argv) {
  ReplayOptions options;
  std::string out_path;
  bool table = false;
  cmd::FlagSet flags("tessel-bench replay", "usage: tessel-bench replay --snapshot FILE [--config FILE] [--out FILE] [--table]");
  flags.String("--snapshot", "FILE", &options.snapshot_path, "the cluster snapshot (a v1 List, kubectl get -o json)")
      .String("--config", "FILE", &options.config_path, "scheduler configuration (default: the default profile)")
      .String("--out", "FILE", &out_path, "write the result there (default: stdout)")
      .Bool("--table", &table, "print a placement table instead of JSON");
  cmd::ParseOrExit(flags, argc, argv);
  if (options.snapshot_path.empty()) {
    std::cerr << "tessel-bench replay: --snapshot FILE is required\n";
    return 2;
  }
  auto result = RunReplay(options);
  if (!result.ok()) {
    std::cerr << "tessel-bench replay: " << result.status().message() << "\n";
    return 1;
  }
  std::string text = table ? FormatPlacementTable(*result) : result->dump(2) + "\n";
  if (out_path.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(out_path);
  if (!(out << text)) {
    std::cerr << "tessel-bench replay: cannot write " << out_path << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tessel::bench
