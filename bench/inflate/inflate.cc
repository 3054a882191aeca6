// `tessel-bench inflate`, the command: flags, runs in parallel, summary.json, curves.csv and the
// report (trace.h loads, run.h runs, aggregate.h averages).
#include "bench/inflate/inflate.h"

#include "scheduler/util/file.h"
#include "scheduler/cmd/flags.h"

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
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

using nlohmann::json;

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

// Each policy's leftover at 100 % (summary.json's leftover_pct_at_100) as a table.
std::string LeftoverTable(const json& summary, const std::vector<std::string>& policies) {
  std::string out = fmt::format("where the unallocated GPU is at 100 % (% of capacity, mean over seeds):\n"
                                "{:<14} {:>11} {:>9} {:>26} | {:>12} {:>12}\n",
                                "policy", "no CPU left", "idle GPU", "remainders 1-99/-199/-499/-999",
                                "failed whole", "failed frac");
  for (const std::string& policy : policies) {
    const json& l = summary[policy]["leftover_pct_at_100"];
    std::string bands;
    for (const auto& [band, pct] : l["remainders"].items()) {
      StrAppend(&bands, bands.empty() ? "" : " ", fmt::format("{:.2f}", pct.get<double>()));
    }
    double whole = 0, frac = 0;
    for (const auto& [shape, pct] : l["failed_pods"].items()) {
      (shape.find("GPU") != std::string::npos ? whole : frac) += pct.get<double>();
    }
    StrAppend(&out, fmt::format("{:<14} {:>11.2f} {:>9.2f} {:>26} | {:>12.2f} {:>12.2f}\n", policy,
                                l.value("cpu_exhausted", 0.0), l.value("idle_devices", 0.0), bands, whole, frac));
  }
  return out;
}

}  // namespace

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

int InflateMain(int argc, char** argv) { return InflateMainWithBound(argc, argv, nullptr); }

int InflateMainWithBound(int argc, char** argv, PlacedBoundFn bound) {
  InflateOptions o;
  o.threads = std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
  std::vector<std::string> policies = {"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", "tessel"};
  std::string seeds = "42-51";
  std::string tune = "1.3";
  bool no_progress = false;
  cmd::FlagSet flags("tessel-bench inflate",
                     "usage: tessel-bench inflate --nodes NODES.csv --pods PODS.csv [--policy NAME[,NAME...]]\n"
                     "         [--seeds 42-51] [--tune 1.3] --out DIR [--threads N] [--reference CSV] [--no-progress]\n"
                     "         [--policy-args '{sigmoidScaleMilli: 1000}']",
                     "policies: random, dotprod, gpuclustering, gpupacking, bestfit, fgd, tessel, gpubinpack");
  flags.String("--nodes", "NODES.csv", &o.nodes_path, "the trace's nodes")
      .String("--pods", "PODS.csv", &o.pods_path, "the trace's pods")
      .List({"--policy", "--policies"}, "NAME[,NAME...]", &policies, "the policies to run (default: all but gpubinpack)")
      .String("--seeds", "42-51", &seeds, "seeds: a list of seeds or ranges (default 42-51)")
      .String("--tune", "1.3", &tune, "inflate the workload to this multiple of the cluster's GPUs (default 1.3)")
      .String("--out", "DIR", &o.out_dir, "where the results are written")
      .Int("--threads", "N", &o.threads, {.min = 1}, "runs at once (default: up to 2)")
      .String("--reference", "CSV", &o.reference_path,
              "the paper's results to compare with (default: found next to --pods)")
      .Bool("--no-progress", &no_progress, "print no progress")
      .String("--policy-args", "YAML", &o.policy_args, "merged into the policy plugin's args");
  auto usage = [&flags] { std::cerr << flags.Usage(); };
  cmd::ParseOrExit(flags, argc, argv);
  if (no_progress) o.progress = false;
  if (o.nodes_path.empty() || o.pods_path.empty() || o.out_dir.empty()) {
    std::cerr << "tessel-bench inflate: --nodes, --pods and --out are required\n";
    usage();
    return 2;
  }
  for (std::string name : policies) {
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
  const int64_t weight = gpu::FragModel(TypicalPods(*pods)).total_weight();
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
    std::vector<const Leftover*> leftovers;
    for (const RunResult* r : runs) leftovers.push_back(&r->leftover);
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
                  {"cpu_seconds", seconds},
                  {"leftover_pct_at_100", MeanLeftoverPct(leftovers, capacity)}};
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

  // The offline reference: per seed, the pods arrived at 100 % (the inflated order's prefix whose
  // GPU request fits the capacity), and the least unallocated % the bound allows.
  std::string bound_line;
  if (bound != nullptr) {
    std::vector<double> floors;
    std::string why;
    for (uint64_t seed : o.seeds) {
      std::vector<TracePod> arrived;
      int64_t sum = 0;
      for (const TracePod& p : InflatePods(*pods, capacity, o.tune_milli, seed)) {
        if (sum + p.total_gpu_milli() > capacity) break;
        sum += p.total_gpu_milli();
        arrived.push_back(p);
      }
      absl::StatusOr<double> most = bound(*nodes, arrived);
      if (!most.ok()) {
        why = std::string(most.status().message());
        break;
      }
      floors.push_back(100.0 * (static_cast<double>(capacity) - *most) / static_cast<double>(capacity));
    }
    if (floors.size() == o.seeds.size() && !floors.empty()) {
      double mean = 0;
      for (double f : floors) mean += f / static_cast<double>(floors.size());
      const auto [lo, hi] = std::minmax_element(floors.begin(), floors.end());
      summary["lp_bound"] = {{"unallocated_pct_at_100_mean", mean}, {"min", *lo}, {"max", *hi}, {"per_seed", floors}};
      for (const std::string& policy : o.policies) {
        summary[policy]["distance_to_lp_bound_pp"] = summary[policy]["unallocated_pct_at_100"].get<double>() - mean;
      }
      bound_line = fmt::format("{:<14} {:>18.2f} (seeds {:.2f}-{:.2f}): no packing of the pods arrived at 100 % leaves less "
                               "(LP bound, bench/inflate/bound.h)\n", "lp-bound", mean, *lo, *hi);
    } else {
      summary["lp_bound"] = {{"unavailable", why}};
      bound_line = fmt::format("lp-bound: unavailable: {}\n", why);
    }
    std::ofstream(out / "summary.json") << summary.dump(2) << "\n";
  }

  // The table people read first.
  std::cout << fmt::format("workload {}: {} nodes, {} GPUs, {} pods (+{} clones per run), {} seed(s), tune {}\n",
                           workload, nodes->size(), capacity / gpu::kMilliPerGpu, pods->size(),
                           per_run - static_cast<int64_t>(pods->size()), o.seeds.size(), tune);
  std::cout << fmt::format("{:<14} {:>18} {:>11} {:>8} {:>16}\n", "policy", "unallocated%@100", "published", "delta",
                           "frag% of cap@100");
  for (const std::string& policy : o.policies) {
    const json& e = summary[policy];
    std::string pub = e.contains("published_unallocated_pct_at_100")
                          ? fmt::format("{:.2f}", e["published_unallocated_pct_at_100"].get<double>())
                          : "-";
    std::string delta = e.contains("delta_pp") ? fmt::format("{:+.2f}", e["delta_pp"].get<double>()) : "";
    std::string to_bound = e.contains("distance_to_lp_bound_pp")
                               ? fmt::format("  {:+.2f} pp to the bound", e["distance_to_lp_bound_pp"].get<double>())
                               : "";
    std::cout << fmt::format("{:<14} {:>18.2f} {:>11} {:>8} {:>16.2f}{}\n", policy,
                             e["unallocated_pct_at_100"].get<double>(), pub, delta,
                             e["frag_amount_pct_at_100"].get<double>(), to_bound);
  }
  std::cout << bound_line;
  std::cout << LeftoverTable(summary, o.policies);
  std::cout << fmt::format("{} runs in {:.1f}s; report: {}\n", jobs.size(), elapsed,
                           (std::filesystem::absolute(out) / "report.html").string());
  return 0;
}

}  // namespace tessel::bench
