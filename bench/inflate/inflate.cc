// The inflation experiment: trace loading, inflation, one scheduler per run, metrics, outputs.
#include "bench/inflate/inflate.h"

#include "scheduler/util/file.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "absl/strings/str_split.h"
#include "bench/inflate/report.h"
#include "bench/sim/simulated_cluster.h"
#include "plugins/registry.h"
#include "scheduler/api/quantity.h"
#include "scheduler/state/gpu_devices.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

using nlohmann::json;

std::optional<int64_t> ToInt(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
    if (v > (int64_t{1} << 50)) return std::nullopt;
  }
  return v;
}

// A CSV without quoting (the openb files have none), as rows of fields, with a header index.
struct Csv {
  std::map<std::string, size_t, std::less<>> column;
  std::vector<std::vector<std::string>> rows;
};

absl::StatusOr<Csv> ParseCsv(std::string_view text, std::initializer_list<std::string_view> required) {
  Csv csv;
  bool header = true;
  size_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::vector<std::string> fields = absl::StrSplit(line, ',');
    if (header) {
      for (size_t i = 0; i < fields.size(); ++i) csv.column[fields[i]] = i;
      for (std::string_view r : required) {
        if (!csv.column.contains(r)) return absl::InvalidArgumentError(StrCat("missing column \"", r, "\""));
      }
      header = false;
      continue;
    }
    if (fields.size() < csv.column.size()) {
      return absl::InvalidArgumentError(StrCat("line ", line_no, ": ", fields.size(), " fields, want ",
                                               csv.column.size()));
    }
    csv.rows.push_back(std::move(fields));
  }
  if (header) return absl::InvalidArgumentError("empty file");
  return csv;
}

int64_t CapacityMilli(const std::vector<TraceNode>& nodes) {
  int64_t total = 0;
  for (const TraceNode& n : nodes) total += int64_t{n.gpus} * kMilliPerGpu;
  return total;
}

Node MakeNode(const TraceNode& t, const std::string& name) {
  Node n;
  n.meta.name = name;
  n.ready = ConditionStatus::kTrue;
  n.allocatable.milli_cpu = t.cpu_milli;
  n.allocatable.memory = t.memory_mib * 1024 * 1024;
  n.allocatable.pods = 1001;
  if (t.gpus > 0) {
    n.allocatable.Set(kNvidiaGpu, int64_t{t.gpus} * kMilliPerGpu);
    n.meta.labels[std::string(kGpuCountLabel)] = StrCat(t.gpus);
    n.meta.labels[std::string(kGpuProductLabel)] = t.model;
  }
  n.capacity = n.allocatable;
  return n;
}

Pod MakePod(const TracePod& t, const std::string& name) {
  Pod p;
  p.meta.name = name;
  p.meta.namespace_ = "openb";
  p.scheduler_name = "tessel";
  Container c{.name = "main", .requests = {}, .restart_always = false};
  c.requests.milli_cpu = t.cpu_milli;
  c.requests.memory = t.memory_mib * 1024 * 1024;
  if (t.num_gpu > 0) {
    c.requests.Set(kNvidiaGpu, int64_t{t.num_gpu} * kMilliPerGpu);
    if (t.gpu_milli < kMilliPerGpu) p.meta.annotations[std::string(kGpuMilliAnnotation)] = StrCat(t.gpu_milli);
  }
  p.containers.push_back(std::move(c));
  if (!t.gpu_spec.empty()) {
    NodeSelectorTerm term;
    term.match_expressions.push_back({.key = std::string(kGpuProductLabel),
                                      .op = NodeSelectorRequirement::Operator::kIn,
                                      .values = t.gpu_spec});
    p.node_affinity.required = std::vector<NodeSelectorTerm>{std::move(term)};
  }
  p.requests = *ComputePodRequests(p);
  return p;
}

ProfileConfig InflateProfile(const std::string& plugin, const std::vector<fgd::TargetClass>& typical,
                             const std::string& policy_args) {
  ProfileConfig profile;
  profile.scheduler_name = "tessel";
  auto set = [&](const std::string& point, std::vector<std::string> names) {
    PluginSet s;
    for (auto& n : names) s.enabled.push_back(PluginRef{.name = n, .weight = 1});
    profile.plugins[point] = std::move(s);
  };
  const bool learns = plugin == "FGD" || plugin == "Tessel";
  set("queueSort", {"PrioritySort"});
  set("preFilter", learns ? std::vector<std::string>{"GpuShare", plugin} : std::vector<std::string>{"GpuShare"});
  // The paper's filters: CPU, memory, pod count, and the GPU filter (model, device fit).
  // (GPU first: most rejections late in a run are GPU ones, and GpuShare's are the cheapest.)
  set("filter", {"NodeAffinity", "GpuShare", "NodeResourcesFit"});
  set("preScore", {plugin});
  set("score", {plugin});
  set("preBind", {"GpuShare"});
  set("bind", {"DefaultBinder"});
  YAML::Node fit;
  fit["ignoredResources"].push_back(std::string(kNvidiaGpu));
  profile.plugin_args["NodeResourcesFit"] = fit;
  YAML::Node args(YAML::NodeType::Map);
  if (learns) args["targetWorkload"] = fgd::TargetWorkloadYaml(typical);
  if (!policy_args.empty()) {
    for (const auto& kv : YAML::Load(policy_args)) args[kv.first.as<std::string>()] = kv.second;
  }
  if (args.size() > 0) profile.plugin_args[plugin] = args;
  return profile;
}

std::string WorkloadName(const std::string& pods_path) {
  return std::filesystem::path(pods_path).stem().string();
}

// Published results: (workload, Policy, arrived %) -> (alloc mean, frag amount median).
struct Reference {
  std::map<std::tuple<std::string, std::string, int>, std::pair<double, double>> rows;
  bool empty() const { return rows.empty(); }
};

Reference LoadReference(const std::string& path) {
  Reference ref;
  auto text = ReadFileToString(path);
  if (!text.ok()) return ref;
  auto csv = ParseCsv(*text, {"workload", "policy", "arrived_pct", "alloc_pct_mean",
                              "frag_amount_pct_of_capacity_median"});
  if (!csv.ok()) return ref;
  for (const auto& row : csv->rows) {
    auto arrived = ToInt(row[csv->column["arrived_pct"]]);
    if (!arrived) continue;
    ref.rows[{row[csv->column["workload"]], row[csv->column["policy"]], static_cast<int>(*arrived)}] = {
        std::strtod(row[csv->column["alloc_pct_mean"]].c_str(), nullptr),
        std::strtod(row[csv->column["frag_amount_pct_of_capacity_median"]].c_str(), nullptr)};
  }
  return ref;
}

std::string PaperName(const std::string& policy) {
  static const std::map<std::string, std::string> kNames = {
      {"random", "Random"}, {"dotprod", "DotProd"}, {"gpuclustering", "GpuClustering"},
      {"gpupacking", "GpuPacking"}, {"bestfit", "BestFit"}, {"fgd", "FGD"}};
  auto it = kNames.find(policy);
  return it == kNames.end() ? "" : it->second;
}

// Half-to-even rounding of num * 100 / den to an integer percent.
int RoundPct(int64_t num, int64_t den) {
  const __int128 n = static_cast<__int128>(num) * 100;
  int64_t q = static_cast<int64_t>(n / den);
  const __int128 r2 = (n % den) * 2;
  if (r2 > den || (r2 == den && (q % 2) != 0)) ++q;
  return static_cast<int>(q);
}

absl::StatusOr<std::vector<uint64_t>> ParseSeeds(std::string_view text) {
  std::vector<uint64_t> out;
  for (absl::string_view part : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    std::vector<std::string> range = absl::StrSplit(part, '-');
    auto a = ToInt(range[0]);
    auto b = range.size() == 2 ? ToInt(range[1]) : a;
    if (!a || !b || range.size() > 2 || *b < *a || *b - *a > 10000) {
      return absl::InvalidArgumentError(StrCat("--seeds: \"", text, "\" is not a list of seeds or ranges (42-51)"));
    }
    for (int64_t s = *a; s <= *b; ++s) out.push_back(static_cast<uint64_t>(s));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<TraceNode>> ParseTraceNodes(std::string_view text) {
  auto csv = ParseCsv(text, {"sn", "cpu_milli", "memory_mib", "gpu", "model"});
  if (!csv.ok()) return csv.status();
  std::vector<TraceNode> out;
  for (const auto& row : csv->rows) {
    TraceNode n{.sn = row[csv->column["sn"]], .cpu_milli = 0, .memory_mib = 0, .gpus = 0,
                .model = row[csv->column["model"]]};
    auto cpu = ToInt(row[csv->column["cpu_milli"]]);
    auto mem = ToInt(row[csv->column["memory_mib"]]);
    auto gpu = ToInt(row[csv->column["gpu"]]);
    if (!cpu || !mem || !gpu || *gpu > 1024) {
      return absl::InvalidArgumentError(StrCat("node ", n.sn, ": cpu_milli, memory_mib and gpu must be integers"));
    }
    n.cpu_milli = *cpu;
    n.memory_mib = *mem;
    n.gpus = static_cast<int32_t>(*gpu);
    out.push_back(std::move(n));
  }
  return out;
}

absl::StatusOr<std::vector<TracePod>> ParseTracePods(std::string_view text) {
  auto csv = ParseCsv(text, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"});
  if (!csv.ok()) return csv.status();
  const bool has_spec = csv->column.contains("gpu_spec");
  std::vector<TracePod> out;
  for (const auto& row : csv->rows) {
    TracePod p;
    p.name = row[csv->column["name"]];
    auto cpu = ToInt(row[csv->column["cpu_milli"]]);
    auto mem = ToInt(row[csv->column["memory_mib"]]);
    auto num = ToInt(row[csv->column["num_gpu"]]);
    auto milli = ToInt(row[csv->column["gpu_milli"]]);
    if (!cpu || !mem || !num || !milli || *milli > kMilliPerGpu || *num > 1024 ||
        (*num > 1 && *milli != kMilliPerGpu) || ((*num == 0) != (*milli == 0))) {
      return absl::InvalidArgumentError(StrCat("pod ", p.name, ": bad cpu_milli, memory_mib, num_gpu or gpu_milli"));
    }
    p.cpu_milli = *cpu;
    p.memory_mib = *mem;
    p.num_gpu = static_cast<int32_t>(*num);
    p.gpu_milli = *milli;
    if (has_spec && !row[csv->column["gpu_spec"]].empty()) {
      p.gpu_spec = absl::StrSplit(row[csv->column["gpu_spec"]], '|');
    }
    out.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<std::vector<TraceNode>> LoadTraceNodes(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  auto nodes = ParseTraceNodes(*text);
  if (!nodes.ok()) return absl::InvalidArgumentError(StrCat(path, ": ", nodes.status().message()));
  return nodes;
}

absl::StatusOr<std::vector<TracePod>> LoadTracePods(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  auto pods = ParseTracePods(*text);
  if (!pods.ok()) return absl::InvalidArgumentError(StrCat(path, ": ", pods.status().message()));
  return pods;
}

std::vector<TracePod> InflatePods(const std::vector<TracePod>& pods, int64_t capacity_milli,
                                  int64_t tune_milli, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<TracePod> sorted = pods;
  std::sort(sorted.begin(), sorted.end(), [](const TracePod& a, const TracePod& b) { return a.name < b.name; });
  std::vector<TracePod> out = sorted;
  std::shuffle(out.begin(), out.end(), rng);
  if (tune_milli <= 0 || sorted.empty()) return out;
  int64_t total = 0;
  for (const TracePod& p : out) total += p.total_gpu_milli();
  // Compare total * 1000 with tune_milli * capacity: exact for any tune.
  const __int128 target = static_cast<__int128>(tune_milli) * capacity_milli;
  for (int64_t i = 0;; ++i) {
    const TracePod& pick = sorted[rng() % sorted.size()];
    if (static_cast<__int128>(total + pick.gpu_milli) * 1000 > target) break;
    TracePod clone = pick;
    clone.name = StrCat(pick.name, "-tuned-", i);
    total += pick.total_gpu_milli();
    out.push_back(std::move(clone));
  }
  return out;
}

std::vector<fgd::TargetClass> TypicalPods(const std::vector<TracePod>& pods) {
  std::vector<fgd::TargetClass> all;
  all.reserve(pods.size());
  for (const TracePod& p : pods) {
    all.push_back({.cpu_milli = p.cpu_milli, .gpu_milli = p.gpu_milli, .num_gpu = p.num_gpu,
                   .models = p.gpu_spec, .weight = 1});
  }
  return fgd::TypicalClasses(all, 95);
}

std::vector<std::string> KnownPolicies() {
  return {"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", "tessel", "gpubinpack"};
}

std::string PluginForPolicy(const std::string& policy) {
  static const std::map<std::string, std::string> kPlugins = {
      {"random", "Random"},         {"dotprod", "DotProd"},       {"gpuclustering", "GpuClustering"},
      {"gpupacking", "GpuPacking"}, {"bestfit", "BestFit"},       {"fgd", "FGD"},
      {"tessel", "Tessel"},         {"gpubinpack", "GpuBinPack"}};
  auto it = kPlugins.find(policy);
  return it == kPlugins.end() ? "" : it->second;
}

absl::StatusOr<RunResult> RunOne(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                 const std::string& policy, uint64_t seed, int64_t tune_milli,
                                 std::atomic<int64_t>* progress, const std::string& policy_args) {
  const auto start = std::chrono::steady_clock::now();
  const std::string plugin = PluginForPolicy(policy);
  if (plugin.empty()) return absl::InvalidArgumentError(StrCat("unknown policy \"", policy, "\""));
  const int64_t capacity = CapacityMilli(nodes);
  const std::vector<fgd::TargetClass> typical = TypicalPods(pods);
  const fgd::FragModel frag(typical);

  ManualClock clock(absl::FromUnixSeconds(1'700'000'000));
  Cache cache(&clock);
  SimulatedCluster sim(&clock);
  Registry registry = InTreeRegistry();
  SchedulerConfig config;
  config.parallelism = 1;  // runs go in parallel instead
  ProfileConfig profile;
  try {
    profile = InflateProfile(plugin, typical, policy_args);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(StrCat("--policy-args: ", e.what()));
  }
  auto scheduler = Scheduler::New(SchedulerParams{.registry = &registry,
                                                  .config = &config,
                                                  .defaults = &profile,
                                                  .cache = &cache,
                                                  .clock = &clock,
                                                  .api = &sim,
                                                  .observer = &sim,
                                                  .seed = seed});
  if (!scheduler.ok()) return scheduler.status();
  Scheduler& s = **scheduler;
  sim.Attach(&s);

  // Node names carry a seeded random "%04d-" prefix: ties fall to a random node order per seed.
  std::vector<size_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 name_rng(seed * 0x9E3779B97F4A7C15ull + 1);
  std::shuffle(order.begin(), order.end(), name_rng);
  std::map<std::string, size_t> node_index;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string name = fmt::format("{:04d}-{}", order[i], nodes[i].sn);
    node_index[name] = i;
    s.OnNodeAdd(MakeNode(nodes[i], name));
  }
  // Per-node fragmentation, kept up to date as pods land.
  std::vector<int64_t> node_frag(nodes.size());
  int64_t frag_total = 0;
  for (const auto& [name, i] : node_index) {
    auto info = cache.GetNodeInfo(name);
    node_frag[i] = frag.NodeFrag(fgd::NodeShape::Of(*info, frag.ModelId(info->gpus().inventory().product)));
    frag_total += node_frag[i];
  }

  RunResult result{.policy = policy, .seed = seed, .pods = 0, .placed = 0, .seconds = 0, .events = {}};
  const std::vector<TracePod> sequence = InflatePods(pods, capacity, tune_milli, seed);
  result.events.reserve(sequence.size());
  int64_t arrived = 0, allocated = 0;
  const std::atomic<bool> never{false};
  for (const TracePod& t : sequence) {
    Pod pod = MakePod(t, t.name);
    const std::string key = pod.Key();
    s.OnPodAdd(std::move(pod));
    s.Run(never, {.max_cycles = 1});
    arrived += t.total_gpu_milli();
    if (std::optional<std::string> node = cache.NodeOf(key)) {
      ++result.placed;
      auto info = cache.GetNodeInfo(*node);
      const size_t i = node_index.at(*node);
      frag_total -= node_frag[i];
      node_frag[i] = frag.NodeFrag(fgd::NodeShape::Of(*info, frag.ModelId(info->gpus().inventory().product)));
      frag_total += node_frag[i];
      allocated += t.total_gpu_milli();
    } else {
      s.OnPodDelete(key);  // no retries: a pod that fails is dropped
    }
    result.events.push_back({arrived, allocated, frag_total});
    ++result.pods;
    if (progress != nullptr) progress->fetch_add(1, std::memory_order_relaxed);
  }
  // Cross-check the running total against the cache's per-device accounting.
  int64_t accounted = 0;
  for (const auto& [name, i] : node_index) accounted += cache.GetNodeInfo(name)->gpus().total_allocated_milli();
  if (accounted != allocated) {
    return absl::InternalError(StrCat("GPU accounting drifted: devices hold ", accounted, " milli, pods ", allocated));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

Curve Aggregate(const std::vector<const RunResult*>& runs, int64_t capacity, int64_t total_weight) {
  constexpr int kMax = 130;
  Curve c;
  c.runs = static_cast<int>(runs.size());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  c.alloc_pct.assign(kMax + 1, nan);
  c.alloc_pct_sd.assign(kMax + 1, nan);
  c.frag_amount_pct.assign(kMax + 1, nan);
  c.frag_rate_pct.assign(kMax + 1, nan);
  // Per run: mean at each integer arrived %, then the mean (and SD) over runs.
  std::vector<std::vector<double>> alloc(kMax + 1), amount(kMax + 1), rate(kMax + 1);
  const double w = static_cast<double>(std::max<int64_t>(total_weight, 1));
  for (const RunResult* run : runs) {
    std::vector<double> sa(kMax + 1, 0), sf(kMax + 1, 0), sr(kMax + 1, 0);
    std::vector<int> n(kMax + 1, 0), nr(kMax + 1, 0);
    std::vector<double> exact;
    exact.reserve(run->events.size());
    for (const Event& e : run->events) {
      exact.push_back(static_cast<double>(e.arrived_milli) * 100.0 / static_cast<double>(capacity));
    }
    auto add = [&](int b, const Event& e) {
      const double a = std::round(static_cast<double>(e.allocated_milli) * 10000.0 / static_cast<double>(capacity)) / 100.0;
      const double frag = static_cast<double>(e.frag_scaled) / w;
      const double idle = static_cast<double>(capacity - e.allocated_milli);
      sa[b] += a;
      sf[b] += frag * 100.0 / static_cast<double>(capacity);
      if (idle > 0) {
        sr[b] += frag * 100.0 / idle;
        ++nr[b];
      }
      ++n[b];
    };
    for (const Event& e : run->events) {
      const int b = RoundPct(e.arrived_milli, capacity);
      if (b >= 0 && b <= kMax) add(b, e);
    }
    for (int b = 0; b <= kMax; ++b) {
      if (n[b] > 0) continue;
      for (size_t k = 0; k < run->events.size(); ++k) {
        if (std::abs(exact[k] - b) <= 1.0) add(b, run->events[k]);
      }
    }
    for (int b = 0; b <= kMax; ++b) {
      if (n[b] == 0) continue;
      alloc[b].push_back(sa[b] / n[b]);
      amount[b].push_back(sf[b] / n[b]);
      if (nr[b] > 0) rate[b].push_back(sr[b] / nr[b]);
    }
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  for (int b = 0; b <= kMax; ++b) {
    if (alloc[b].empty()) continue;
    c.alloc_pct[b] = mean(alloc[b]);
    double var = 0;
    for (double x : alloc[b]) var += (x - c.alloc_pct[b]) * (x - c.alloc_pct[b]);
    c.alloc_pct_sd[b] = std::sqrt(var / static_cast<double>(alloc[b].size()));
    c.frag_amount_pct[b] = mean(amount[b]);
    if (!rate[b].empty()) c.frag_rate_pct[b] = mean(rate[b]);
  }
  return c;
}

int InflateMain(int argc, char** argv) {
  InflateOptions o;
  o.threads = std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
  std::string policies = "random,dotprod,gpuclustering,gpupacking,bestfit,fgd,tessel";
  std::string seeds = "42-51";
  std::string tune = "1.3";
  auto usage = [] {
    std::cerr << "usage: tessel-bench inflate --nodes NODES.csv --pods PODS.csv [--policy NAME[,NAME...]]\n"
                 "         [--seeds 42-51] [--tune 1.3] --out DIR [--threads N] [--reference CSV] [--no-progress]\n"
                 "         [--policy-args '{sigmoidScaleMilli: 1000}']   # merged into the policy plugin's args\n"
                 "policies: random, dotprod, gpuclustering, gpupacking, bestfit, fgd, tessel, gpubinpack\n";
  };
  for (int i = 0; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "tessel-bench inflate: " << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--nodes") o.nodes_path = value();
    else if (arg == "--pods") o.pods_path = value();
    else if (arg == "--policy" || arg == "--policies") policies = value();
    else if (arg == "--seeds") seeds = value();
    else if (arg == "--tune") tune = value();
    else if (arg == "--out") o.out_dir = value();
    else if (arg == "--reference") o.reference_path = value();
    else if (arg == "--threads") o.threads = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--no-progress") o.progress = false;
    else if (arg == "--policy-args") o.policy_args = value();
    else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else {
      std::cerr << "tessel-bench inflate: unknown argument \"" << arg << "\"\n";
      usage();
      return 2;
    }
  }
  if (o.nodes_path.empty() || o.pods_path.empty() || o.out_dir.empty()) {
    std::cerr << "tessel-bench inflate: --nodes, --pods and --out are required\n";
    usage();
    return 2;
  }
  for (absl::string_view p : absl::StrSplit(policies, ',')) {
    std::string name(p);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (PluginForPolicy(name).empty()) {
      std::cerr << "tessel-bench inflate: unknown policy \"" << name << "\"\n";
      usage();
      return 2;
    }
    o.policies.push_back(name);
  }
  auto parsed_seeds = ParseSeeds(seeds);
  auto tune_milli = ParseMilli(tune);
  if (!parsed_seeds.ok() || !tune_milli.ok() || *tune_milli < 0) {
    std::cerr << "tessel-bench inflate: "
              << (!parsed_seeds.ok() ? std::string(parsed_seeds.status().message()) : "--tune: want a number like 1.3")
              << "\n";
    return 2;
  }
  o.seeds = *parsed_seeds;
  o.tune_milli = *tune_milli;

  auto nodes = LoadTraceNodes(o.nodes_path);
  auto pods = nodes.ok() ? LoadTracePods(o.pods_path) : absl::StatusOr<std::vector<TracePod>>(nodes.status());
  if (!pods.ok()) {
    std::cerr << "tessel-bench inflate: " << pods.status().message() << "\n";
    return 1;
  }
  if (o.reference_path.empty()) {
    const std::filesystem::path dir = std::filesystem::path(o.pods_path).parent_path();
    for (const auto& candidate : {dir / "fgd_reference_summary.csv",
                                  dir / ".." / "fgd_reference_results" / "summary_by_policy.csv"}) {
      if (std::filesystem::exists(candidate)) {
        o.reference_path = candidate.string();
        break;
      }
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) {
    std::cerr << "tessel-bench inflate: cannot create " << o.out_dir << ": " << ec.message() << "\n";
    return 1;
  }

  // Jobs: every (policy, seed), run on `threads` workers, each with its own scheduler.
  struct Job {
    std::string policy;
    uint64_t seed;
  };
  std::vector<Job> jobs;
  for (const std::string& p : o.policies) {
    for (uint64_t s : o.seeds) jobs.push_back({p, s});
  }
  const int64_t per_run = static_cast<int64_t>(
      InflatePods(*pods, CapacityMilli(*nodes), o.tune_milli, o.seeds.front()).size());
  const int64_t total_pods = per_run * static_cast<int64_t>(jobs.size());
  std::vector<absl::StatusOr<RunResult>> results(jobs.size(), absl::UnknownError("not run"));
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done_pods{0};
  std::atomic<int> done_runs{0};
  const auto start = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (size_t j = next.fetch_add(1); j < jobs.size(); j = next.fetch_add(1)) {
      results[j] = RunOne(*nodes, *pods, jobs[j].policy, jobs[j].seed, o.tune_milli, &done_pods, o.policy_args);
      done_runs.fetch_add(1);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min<int>(o.threads, static_cast<int>(jobs.size())); ++t) threads.emplace_back(worker);
  const bool tty = isatty(STDERR_FILENO) != 0;
  int last_decile = -1;
  while (o.progress && done_runs.load() < static_cast<int>(jobs.size())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(tty ? 200 : 1000));
    const double frac = std::min(1.0, static_cast<double>(done_pods.load()) / std::max<int64_t>(total_pods, 1));
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int width = 30, filled = static_cast<int>(frac * width);
    std::string bar = StrCat("[", std::string(filled, '#'), std::string(width - filled, '.'), "] ",
                             static_cast<int>(frac * 100), "%  runs ", done_runs.load(), "/", jobs.size(),
                             "  ", static_cast<int>(elapsed), "s");
    if (frac > 0.02) StrAppend(&bar, "  eta ", static_cast<int>(elapsed / frac - elapsed), "s");
    if (tty) {
      std::cerr << "\r" << bar << "   " << std::flush;
    } else if (static_cast<int>(frac * 10) != last_decile) {
      last_decile = static_cast<int>(frac * 10);
      std::cerr << bar << "\n";
    }
  }
  for (std::thread& t : threads) t.join();
  if (o.progress && tty) std::cerr << "\n";
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!results[j].ok()) {
      std::cerr << "tessel-bench inflate: " << jobs[j].policy << " seed " << jobs[j].seed << ": "
                << results[j].status().message() << "\n";
      return 1;
    }
  }

  // Aggregate per policy and write the outputs.
  const int64_t capacity = CapacityMilli(*nodes);
  const int64_t weight = fgd::FragModel(TypicalPods(*pods)).total_weight();
  const std::string workload = WorkloadName(o.pods_path);
  const Reference ref = LoadReference(o.reference_path);
  ReportInput report{.workload = workload, .seeds = o.seeds, .tune_milli = o.tune_milli,
                     .seconds = elapsed, .nodes = static_cast<int64_t>(nodes->size()),
                     .capacity_milli = capacity, .pods = static_cast<int64_t>(pods->size()),
                     .pods_per_run = per_run, .series = {}};
  json summary = json::object();
  std::string csv = "policy,arrived_pct,alloc_pct_mean,alloc_pct_sd,unalloc_pct_mean,frag_amount_pct_mean,frag_rate_pct_mean,n_seeds\n";
  for (const std::string& policy : o.policies) {
    std::vector<const RunResult*> runs;
    double seconds = 0;
    int64_t placed = 0, pods_total = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (jobs[j].policy != policy) continue;
      runs.push_back(&*results[j]);
      seconds += results[j]->seconds;
      placed += results[j]->placed;
      pods_total += results[j]->pods;
    }
    Curve curve = Aggregate(runs, capacity, weight);
    for (int b = 0; b < static_cast<int>(curve.alloc_pct.size()); ++b) {
      if (std::isnan(curve.alloc_pct[b])) continue;
      StrAppend(&csv, fmt::format("{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{}\n", policy, b, curve.alloc_pct[b],
                                  curve.alloc_pct_sd[b], 100.0 - curve.alloc_pct[b], curve.frag_amount_pct[b],
                                  curve.frag_rate_pct[b], curve.runs));
    }
    json entry = {{"plugin", PluginForPolicy(policy)},
                  {"seeds", runs.size()},
                  {"unallocated_pct_at_100", 100.0 - curve.alloc_pct[100]},
                  {"alloc_pct_at_100", curve.alloc_pct[100]},
                  {"alloc_pct_sd_at_100", curve.alloc_pct_sd[100]},
                  {"frag_amount_pct_at_100", curve.frag_amount_pct[100]},
                  {"frag_rate_pct_at_100", curve.frag_rate_pct[100]},
                  {"pods_placed_pct", pods_total > 0 ? 100.0 * static_cast<double>(placed) / static_cast<double>(pods_total) : 0.0},
                  {"cpu_seconds", seconds}};
    Series series{.policy = policy, .curve = curve, .ref_alloc = {}, .ref_frag = {}};
    const std::string paper = PaperName(policy);
    if (auto it = ref.rows.find({workload, paper, 100}); !paper.empty() && it != ref.rows.end()) {
      entry["published_unallocated_pct_at_100"] = 100.0 - it->second.first;
      entry["delta_pp"] = (100.0 - curve.alloc_pct[100]) - (100.0 - it->second.first);
    }
    if (!paper.empty()) {
      for (const auto& [k, v] : ref.rows) {
        if (std::get<0>(k) == workload && std::get<1>(k) == paper) {
          series.ref_alloc.push_back({std::get<2>(k), v.first});
          series.ref_frag.push_back({std::get<2>(k), v.second});
        }
      }
    }
    summary[policy] = entry;
    report.series.push_back(std::move(series));
  }
  const std::filesystem::path out(o.out_dir);
  std::ofstream(out / "summary.json") << summary.dump(2) << "\n";
  std::ofstream(out / "curves.csv") << csv;
  std::ofstream(out / "report.html") << RenderReport(report);

  // The table people read first.
  std::cout << fmt::format("workload {}: {} nodes, {} GPUs, {} pods (+{} clones per run), {} seed(s), tune {}\n",
                           workload, nodes->size(), capacity / kMilliPerGpu, pods->size(),
                           per_run - static_cast<int64_t>(pods->size()), o.seeds.size(), tune);
  std::cout << fmt::format("{:<14} {:>18} {:>11} {:>8} {:>16}\n", "policy", "unallocated%@100", "published", "delta",
                           "frag% of cap@100");
  for (const std::string& policy : o.policies) {
    const json& e = summary[policy];
    std::string pub = e.contains("published_unallocated_pct_at_100")
                          ? fmt::format("{:.2f}", e["published_unallocated_pct_at_100"].get<double>())
                          : "-";
    std::string delta = e.contains("delta_pp") ? fmt::format("{:+.2f}", e["delta_pp"].get<double>()) : "";
    std::cout << fmt::format("{:<14} {:>18.2f} {:>11} {:>8} {:>16.2f}\n", policy,
                             e["unallocated_pct_at_100"].get<double>(), pub, delta,
                             e["frag_amount_pct_at_100"].get<double>());
  }
  std::cout << fmt::format("{} runs in {:.1f}s; report: {}\n", jobs.size(), elapsed,
                           (std::filesystem::absolute(out) / "report.html").string());
  return 0;
}

}  // namespace tessel::bench
