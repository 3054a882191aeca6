// `tessel-bench trace`, the command: flags, the runs of every (policy, seed) in parallel, and the
// outputs (input.h loads, timeline.h simulates, report.h reports).
#include "bench/trace/trace.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/inflate/inflate.h"
#include "bench/inflate/run.h"
#include "bench/trace/input.h"
#include "bench/trace/report.h"
#include "bench/trace/shares.h"
#include "fmt/format.h"
#include "plugins/fgd/target_workload.h"
#include "plugins/queue_quota/queue_quota.h"
#include "plugins/registry.h"
#include "scheduler/cmd/flags.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/util/file.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

// The trace row a pod would be, for FGD's typical pods of an event list.
TracePod TracePodOf(const Pod& p) {
  const gpu::GpuRequest r = gpu::ReadGpuRequest(p);
  TracePod t;
  t.name = p.Key();
  t.cpu_milli = p.requests.milli_cpu;
  t.memory_mib = p.requests.memory / (1024 * 1024);
  if (r.kind == gpu::GpuRequest::Kind::kFraction) {
    t.num_gpu = 1;
    t.gpu_milli = r.milli;
  } else if (r.needs_devices()) {
    t.num_gpu = r.count;
    t.gpu_milli = gpu::kMilliPerGpu;
  }
  return t;
}

struct Options {
  std::string nodes_path, pods_path, events_path, out_dir;
  // One entry per run variant: the policy, QueueQuota's half-life, the name it is reported by.
  std::vector<std::string> policies;
  std::vector<int64_t> half_lives;
  std::vector<std::string> labels;
  std::vector<uint64_t> seeds;
  OpenbOptions openb;
  bool steady = false;
  SteadyOptions steady_options;
  OnEvict on_evict = OnEvict::kRestart;
  std::vector<std::string> movable;  // size classes whose pods are annotated movable
  int threads = 2;
  int32_t samples = 200;
  int64_t max_jobs = 0;  // 0: all
  bool progress = true;
};

}  // namespace

namespace {

// The defragmentation a policy's suffix asks for (none without one).
DefragVariant VariantOf(const std::string& policy) {
  for (const DefragVariant& v : kDefragVariants) {
    if (policy.ends_with(v.suffix)) return v;
  }
  return {};
}

}  // namespace

std::string BasePolicy(const std::string& policy) {
  return policy.substr(0, policy.size() - VariantOf(policy).suffix.size());
}

absl::StatusOr<std::vector<std::string>> ParseMovable(const std::string& flag) {
  static constexpr std::string_view kClasses[] = {"cpu", "fractional", "1", "2-4", "whole-node"};
  if (flag == "none") return std::vector<std::string>();
  if (flag == "all") return std::vector<std::string>(std::begin(kClasses), std::end(kClasses));
  std::vector<std::string> classes;
  for (const std::string& c : std::vector<std::string>(absl::StrSplit(flag, ','))) {
    if (c == "gang") return absl::InvalidArgumentError("--movable: gangs are never movable (a move restarts the whole gang)");
    if (std::find(std::begin(kClasses), std::end(kClasses), c) == std::end(kClasses)) {
      return absl::InvalidArgumentError(StrCat("--movable: unknown size class \"", c,
                                               "\" (want all, none, or some of cpu, fractional, 1, 2-4, whole-node)"));
    }
    classes.emplace_back(c);
  }
  return classes;
}

absl::StatusOr<std::vector<int64_t>> ParseHalfLives(const std::vector<std::string>& flag) {
  std::vector<int64_t> out;
  for (const std::string& text : flag) {
    int64_t seconds = -1;
    if (!absl::SimpleAtoi(text, &seconds) || seconds < 0 || seconds > queue_quota::kMaxUsageHalfLifeSeconds) {
      return absl::InvalidArgumentError(StrCat("--usage-half-life: want whole seconds in 0..", queue_quota::kMaxUsageHalfLifeSeconds,
                                               ", got \"", text, "\""));
    }
    out.push_back(seconds);
  }
  if (out.empty()) out.push_back(0);
  return out;
}

std::string RunLabel(const std::string& policy, int64_t half_life_seconds, bool decay_compared) {
  if (!decay_compared) return policy;
  return half_life_seconds == 0 ? StrCat(policy, "/instant") : StrCat(policy, "/hl=", half_life_seconds, "s");
}

absl::StatusOr<ProfileConfig> TraceProfile(const std::string& policy, int64_t usage_half_life_seconds) {
  const std::string plugin = PluginForPolicy(BasePolicy(policy));
  if (plugin.empty()) return absl::InvalidArgumentError(StrCat("unknown policy \"", policy, "\""));
  ProfileConfig profile = DefaultProfile();
  // Consolidation and reservation only where the policy asks for them.
  auto enabled = [&profile](std::string_view name) {
    for (const auto& [point, set] : profile.plugins) {
      for (const PluginRef& ref : set.enabled) {
        if (ref.name == name) return true;
      }
    }
    return false;
  };
  const DefragVariant variant = VariantOf(policy);
  for (std::string_view name : kDefragPlugins) {
    if (name == "Consolidation" ? variant.consolidation : variant.reservation) continue;
    for (auto& [point, set] : profile.plugins) {
      std::erase_if(set.enabled, [&](const PluginRef& ref) { return ref.name == name; });
    }
    profile.plugin_args.erase(std::string(name));
  }
  if (variant.consolidation && !enabled("Consolidation")) {
    std::vector<PluginRef>& post = profile.plugins["postFilter"].enabled;
    auto preemption = std::find_if(post.begin(), post.end(), [](const PluginRef& r) { return r.name == "DefaultPreemption"; });
    post.insert(preemption == post.end() ? post.end() : std::next(preemption), PluginRef{.name = "Consolidation"});
  }
  // Reservation at every extension point it implements, reserving after 600 s of waiting (its
  // default is off).
  if (variant.reservation && !enabled("Reservation")) {
    profile.plugins["multiPoint"].enabled.push_back(PluginRef{.name = "Reservation"});
  }
  if (variant.reservation && !profile.plugin_args.contains("Reservation")) {
    profile.plugin_args["Reservation"] = YAML::Load("{waitSeconds: 600}");
  }
  const bool learns = plugin == "FGD" || plugin == "Tessel";
  for (const char* point : {"preFilter", "preScore", "score"}) {
    auto it = profile.plugins.find(point);
    if (it == profile.plugins.end()) continue;
    std::vector<PluginRef>& enabled = it->second.enabled;
    for (auto ref = enabled.begin(); ref != enabled.end();) {
      if (ref->name != "Tessel") {
        ++ref;
        continue;
      }
      if (std::string_view(point) == "preFilter" && !learns) {
        ref = enabled.erase(ref);
        continue;
      }
      ref->name = plugin;
      ++ref;
    }
  }
  if (usage_half_life_seconds > 0) {
    YAML::Node args = profile.plugin_args["QueueQuota"];
    args["usageHalfLifeSeconds"] = usage_half_life_seconds;
    profile.plugin_args["QueueQuota"] = args;
  }
  return profile;
}

int TraceMain(int argc, char** argv) {
  Options o;
  o.threads = std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
  std::vector<std::string> policies = {"bestfit", "fgd", "tessel"};
  std::string seeds = "1-3", on_evict = "restart", movable = "none";
  std::vector<std::string> half_lives = {"0"};
  std::vector<std::string> learned;
  bool no_progress = false;
  cmd::FlagSet flags(
      "tessel-bench trace",
      "usage: tessel-bench trace (--nodes NODES.csv --pods PODS.csv [--time-scale S | --load L] [--repeat K] |\n"
      "                          --nodes NODES.csv --pods PODS.csv --steady [--load L] [--horizon S] [--warmup S]\n"
      "                              [--duration-cap S] |\n"
      "                          --events SCENARIO.json)\n"
      "         [--policy bestfit,fgd,tessel] [--seeds 1-3] [--on-evict restart|resume] --out DIR\n"
      "         [--movable all|none|CLASS[,CLASS...]] [--usage-half-life S[,S...]] [--threads N] [--samples 200]\n"
      "         [--learn P[,P...]] [--max-jobs N] [--no-progress]",
      "policies: random, dotprod, gpuclustering, gpupacking, bestfit, fgd, tessel, gpubinpack;\n"
      "P-defrag (e.g. tessel-defrag): P with the Consolidation and Reservation plugins (docs/defrag.md);\n"
      "P-moves: P with Consolidation only; P-reserve: P with Reservation only");
  flags.String("--nodes", "NODES.csv", &o.nodes_path, "an openb node list")
      .String("--pods", "PODS.csv", &o.pods_path, "an openb pod list")
      .String("--events", "SCENARIO.json", &o.events_path, "an event list instead (bench/trace/input.h)")
      .String("--out", "DIR", &o.out_dir, "where the reports are written")
      .List({"--policy", "--policies"}, "P[,P...]", &policies, "the policies to run (default bestfit,fgd,tessel)")
      .String("--seeds", "1-3", &seeds, "seeds: a list of seeds or ranges (default 1-3)")
      .Double("--time-scale", "S", &o.openb.time_scale, cmd::Sign::kPositive, "divide the inter-arrival times by S")
      .Double("--load", "L", &o.openb.load, cmd::Sign::kPositive, "or find the S that offers load L")
      .Int("--repeat", "K", &o.openb.repeat, {.min = 1}, "replay the pod list K times back to back")
      .Bool("--steady", &o.steady,
            "a steady state instead: Poisson arrivals at --load (default 0.9) drawn from the pod list's mix")
      .Int("--horizon", "SECONDS", &o.steady_options.horizon, {.min = 1},
           "with --steady: seconds of arrivals (default 21600)")
      .Int("--warmup", "SECONDS", &o.steady_options.warmup, {.min = 0},
           "with --steady: seconds left out of the report (default 7200)")
      .Int("--duration-cap", "SECONDS", &o.steady_options.duration_cap, {.min = 1},
           "with --steady: longer trace durations are cut to this (default 3600)")
      .Choice("--on-evict", {"restart", "resume"}, &on_evict,
              "a preempted job starts its duration again, or keeps its progress (default restart)")
      .String("--movable", "CLASSES", &movable,
              "annotate the pods of these size classes tessel.io/movable: \"true\" (all: every class but gangs; "
              "classes: cpu, fractional, 1, 2-4, whole-node; default none)")
      .List({"--usage-half-life"}, "S[,S...]", &half_lives,
            "QueueQuota's usageHalfLifeSeconds: each policy runs with each (default 0: shares on the instant)")
      .List({"--learn"}, "P[,P...]", &learned,
            "these of the policies (FGD or Tessel based) learn their target workload from the pods they see, as "
            "Tessel ships (default: none; each is given the trace's typical pods, as in the FGD paper)")
      .Int("--threads", "N", &o.threads, {.min = 1}, "runs at once (default: up to 2)")
      .Int("--samples", "N", &o.samples, {.min = 1}, "points per curve (default 200, at least 2)")
      .Int("--max-jobs", "N", &o.max_jobs, {.min = 1}, "only the first N jobs (default: all)")
      .Bool("--no-progress", &no_progress, "print no progress to stderr");
  cmd::ParseOrExit(flags, argc, argv);
  auto usage = [&flags] { std::cerr << flags.Usage(); };
  o.samples = std::max<int32_t>(2, o.samples);
  o.on_evict = on_evict == "resume" ? OnEvict::kResume : OnEvict::kRestart;
  if (no_progress) o.progress = false;
  const bool openb = !o.nodes_path.empty() || !o.pods_path.empty();
  if (o.out_dir.empty() || openb == !o.events_path.empty() || (openb && (o.nodes_path.empty() || o.pods_path.empty()))) {
    std::cerr << "tessel-bench trace: --out and either --nodes with --pods, or --events, are required\n";
    usage();
    return 2;
  }
  // Flags of another mode are refused, not ignored: a steady state draws Poisson arrivals at
  // --load (no time scale, no repeats), and an event list brings its own times.
  if (o.steady && (!openb || o.openb.repeat != 1 || o.openb.time_scale != 1)) {
    std::cerr << "tessel-bench trace: --steady takes --nodes with --pods, and neither --repeat nor --time-scale "
                 "(its arrivals are Poisson at --load)\n";
    return 2;
  }
  const SteadyOptions steady_defaults;
  if (!o.steady && (o.steady_options.horizon != steady_defaults.horizon ||
                    o.steady_options.warmup != steady_defaults.warmup ||
                    o.steady_options.duration_cap != steady_defaults.duration_cap)) {
    std::cerr << "tessel-bench trace: --horizon, --warmup and --duration-cap apply only with --steady\n";
    return 2;
  }
  if (!openb && (o.openb.repeat != 1 || o.openb.time_scale != 1 || o.openb.load != 0)) {
    std::cerr << "tessel-bench trace: --repeat, --time-scale and --load apply to --nodes with --pods, not to --events\n";
    return 2;
  }
  absl::StatusOr<std::vector<std::string>> movable_classes = ParseMovable(movable);
  if (!movable_classes.ok()) {
    std::cerr << "tessel-bench trace: " << movable_classes.status().message() << "\n";
    return 2;
  }
  o.movable = *std::move(movable_classes);
  absl::StatusOr<std::vector<int64_t>> parsed_half_lives = ParseHalfLives(half_lives);
  if (!parsed_half_lives.ok()) {
    std::cerr << "tessel-bench trace: " << parsed_half_lives.status().message() << "\n";
    return 2;
  }
  const bool decay_compared = *parsed_half_lives != std::vector<int64_t>{0};
  for (const std::string& p : learned) {
    const std::string plugin = PluginForPolicy(BasePolicy(p));
    if (std::find(policies.begin(), policies.end(), p) == policies.end() || (plugin != "FGD" && plugin != "Tessel")) {
      std::cerr << "tessel-bench trace: --learn " << p << ": not one of the FGD or Tessel policies run (--policy)\n";
      return 2;
    }
  }
  for (const std::string& p : policies) {
    if (PluginForPolicy(BasePolicy(p)).empty()) {
      std::cerr << "tessel-bench trace: unknown policy \"" << p << "\"\n";
      return 2;
    }
    for (int64_t half_life : *parsed_half_lives) {
      o.policies.emplace_back(p);
      o.half_lives.push_back(half_life);
      o.labels.push_back(RunLabel(p, half_life, decay_compared));
    }
  }
  absl::StatusOr<std::vector<uint64_t>> parsed_seeds = ParseSeeds(seeds);
  if (!parsed_seeds.ok()) {
    std::cerr << "tessel-bench trace: " << parsed_seeds.status().message() << "\n";
    return 2;
  }
  o.seeds = *parsed_seeds;

  // The input of each seed (openb: node names carry a seeded prefix), and FGD's typical pods.
  std::vector<TracePod> trace_pods;
  std::vector<TraceNode> trace_nodes;
  std::vector<TimelineInput> inputs;
  std::string title, note;
  if (openb) {
    auto nodes = LoadTraceNodes(o.nodes_path);
    auto pods = nodes.ok() ? LoadTracePods(o.pods_path) : absl::StatusOr<std::vector<TracePod>>(nodes.status());
    if (!pods.ok()) {
      std::cerr << "tessel-bench trace: " << pods.status().message() << "\n";
      return 1;
    }
    trace_nodes = *nodes;
    trace_pods = *pods;
    // Each seed's timeline, at most --max-jobs of its jobs.
    auto keep = [&](TimelineInput input) {
      if (o.max_jobs > 0 && static_cast<int64_t>(input.jobs.size()) > o.max_jobs) input.jobs.resize(o.max_jobs);
      inputs.push_back(std::move(input));
    };
    auto failed = [](const absl::Status& st) {
      std::cerr << "tessel-bench trace: " << st.message() << "\n";
      return 1;
    };
    if (o.steady) {
      if (o.openb.load > 0) o.steady_options.load = o.openb.load;
      SteadyTrace last;
      for (uint64_t seed : o.seeds) {
        SteadyOptions so = o.steady_options;
        so.seed = seed;
        absl::StatusOr<SteadyTrace> t = SteadyTimeline(trace_nodes, trace_pods, so);
        if (!t.ok()) return failed(t.status());
        keep(std::move(t->input));
        last = *std::move(t);
      }
      const SteadyOptions& so = o.steady_options;
      title = std::filesystem::path(o.pods_path).stem().string() + "-steady";
      note = fmt::format(
          "Steady state: {} nodes, {} GPUs; Poisson arrivals at offered load {:.2f} ({:.3f} jobs/s) drawn from the "
          "trace's mix, durations capped at {} s ({} pods capped; mean duration {:.0f} s); arrivals for {} s, the "
          "first {} s left out as warm-up; about {} jobs per run; evicted jobs {}; seeds {}.",
          trace_nodes.size(), CapacityMilli(trace_nodes) / gpu::kMilliPerGpu, so.load, last.rate_per_s,
          so.duration_cap, last.capped, last.mean_duration_s, so.horizon, so.warmup, inputs.front().jobs.size(),
          o.on_evict == OnEvict::kRestart ? "restart" : "resume", StrJoin(o.seeds, ","));
    } else {
      double scale = 1, offered = 0;
      int64_t skipped = 0;
      for (uint64_t seed : o.seeds) {
        OpenbOptions oo = o.openb;
        oo.seed = seed;
        absl::StatusOr<OpenbTrace> t = OpenbTimeline(trace_nodes, trace_pods, oo);
        if (!t.ok()) return failed(t.status());
        scale = t->time_scale;
        offered = t->offered_load;
        skipped = t->skipped;
        keep(std::move(t->input));
      }
      title = std::filesystem::path(o.pods_path).stem().string();
      note = fmt::format("{} nodes, {} GPUs; {} jobs per run ({} pods that never ran in the trace left out); "
                         "{} pass(es) of the trace, inter-arrival times divided by {:.2f} (offered load {:.2f}); evicted jobs {}; seeds {}.",
                         trace_nodes.size(), CapacityMilli(trace_nodes) / gpu::kMilliPerGpu, inputs.front().jobs.size(),
                         skipped, o.openb.repeat, scale, offered,
                         o.on_evict == OnEvict::kRestart ? "restart" : "resume", StrJoin(o.seeds, ","));
    }
  } else {
    absl::StatusOr<std::string> text = ReadFileToString(o.events_path);
    if (!text.ok()) {
      std::cerr << "tessel-bench trace: " << text.status().message() << "\n";
      return 1;
    }
    nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
    if (doc.is_discarded()) {
      std::cerr << "tessel-bench trace: " << o.events_path << ": not JSON\n";
      return 1;
    }
    absl::StatusOr<TimelineInput> in = ParseEventList(doc);
    if (!in.ok()) {
      std::cerr << "tessel-bench trace: " << o.events_path << ": " << in.status().message() << "\n";
      return 1;
    }
    for (const TraceJob& j : in->jobs) {
      for (const Pod& p : j.pods) trace_pods.push_back(TracePodOf(p));
    }
    for (size_t s = 0; s < o.seeds.size(); ++s) inputs.push_back(*in);
    title = std::filesystem::path(o.events_path).stem().string();
    note = fmt::format("{} nodes at the start; {} jobs; evicted jobs {}; seeds {}.", in->nodes.size(), in->jobs.size(),
                       o.on_evict == OnEvict::kRestart ? "restart" : "resume", StrJoin(o.seeds, ","));
  }
  int64_t movable_jobs = 0;
  for (TimelineInput& in : inputs) movable_jobs = MarkMovable(in, o.movable);
  if (!o.movable.empty()) StrAppend(&note, fmt::format(" Movable: {} ({} jobs per run).", StrJoin(o.movable, ","), movable_jobs));
  if (!learned.empty()) StrAppend(&note, fmt::format(" Learning their target workload: {}.", StrJoin(learned, ",")));
  const std::vector<gpu::TargetClass> typical = TypicalPods(trace_pods);
  const gpu::FragModel frag(typical);
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) {
    std::cerr << "tessel-bench trace: cannot create " << o.out_dir << ": " << ec.message() << "\n";
    return 1;
  }

  struct Run {
    size_t policy, seed;
  };
  std::vector<Run> runs;
  std::vector<ProfileConfig> profiles;
  std::vector<Registry> registries;
  for (size_t p = 0; p < o.policies.size(); ++p) {
    absl::StatusOr<ProfileConfig> profile = TraceProfile(o.policies[p], o.half_lives[p]);
    const bool learns = std::find(learned.begin(), learned.end(), o.policies[p]) != learned.end();
    absl::StatusOr<Registry> registry = PolicyRegistry(BasePolicy(o.policies[p]), learns ? std::vector<gpu::TargetClass>{} : typical);
    for (const absl::Status& st : {profile.status(), registry.status()}) {
      if (!st.ok()) {
        std::cerr << "tessel-bench trace: " << st.message() << "\n";
        return 2;
      }
    }
    std::set<std::string> missing;  // e.g. P-defrag on a build without the defrag plugins
    for (const auto& [point, set] : profile->plugins) {
      for (const PluginRef& ref : set.enabled) {
        if (registry->Find(ref.name) == nullptr) missing.insert(ref.name);
      }
    }
    if (!missing.empty()) {
      std::cerr << "tessel-bench trace: policy \"" << o.policies[p] << "\": "
                << (missing.size() == 1 ? "plugin " : "plugins ") << StrJoin(missing, ", ")
                << (missing.size() == 1 ? " is" : " are") << " not registered\n";
      return 2;
    }
    profiles.push_back(*std::move(profile));
    registries.push_back(*std::move(registry));
    for (size_t s = 0; s < o.seeds.size(); ++s) runs.push_back({p, s});
  }
  std::vector<absl::StatusOr<TimelineResult>> results(runs.size(), absl::UnknownError("not run"));
  std::atomic<size_t> next{0};
  std::atomic<int64_t> events{0};
  std::atomic<size_t> finished{0};
  int64_t total_events = 0;
  for (const Run& r : runs) total_events += static_cast<int64_t>(2 * inputs[r.seed].jobs.size() + inputs[r.seed].changes.size());
  const auto start = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (size_t k = next.fetch_add(1); k < runs.size(); k = next.fetch_add(1)) {
      results[k] = SimulateTimeline(inputs[runs[k].seed], {.profile = &profiles[runs[k].policy],
                                                           .registry = &registries[runs[k].policy],
                                                           .seed = o.seeds[runs[k].seed],
                                                           .on_evict = o.on_evict,
                                                           .samples = o.samples,
                                                           .frag = &frag,
                                                           .progress = &events});
      finished.fetch_add(1);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min<int>(o.threads, static_cast<int>(runs.size())); ++t) threads.emplace_back(worker);
  int last_decile = -1;
  while (o.progress && finished.load() < runs.size()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const int decile = static_cast<int>(10 * std::min<int64_t>(events.load(), total_events) / std::max<int64_t>(1, total_events));
    if (decile == last_decile) continue;
    last_decile = decile;
    std::cerr << fmt::format("trace: {}0% of events, runs {}/{}, {:.0f}s\n", decile, finished.load(), runs.size(),
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  for (std::thread& t : threads) t.join();
  std::vector<PolicyRuns> all(o.policies.size());
  for (size_t p = 0; p < o.policies.size(); ++p) all[p].policy = o.labels[p];
  for (size_t k = 0; k < runs.size(); ++k) {
    if (!results[k].ok()) {
      std::cerr << "tessel-bench trace: " << o.labels[runs[k].policy] << " seed " << o.seeds[runs[k].seed] << ": "
                << results[k].status().message() << "\n";
      return 1;
    }
    all[runs[k].policy].seeds.push_back(o.seeds[runs[k].seed]);
    all[runs[k].policy].runs.push_back(*std::move(results[k]));
  }
  // Moves are reported when a run can move pods (the columns stay out of every other report).
  const bool with_moves = !o.movable.empty() || std::any_of(o.policies.begin(), o.policies.end(), [](const std::string& p) {
                            return p != BasePolicy(p);
                          });
  nlohmann::json summaries = nlohmann::json::array();
  for (const PolicyRuns& pr : all) summaries.push_back(Summarize(pr, with_moves));
  const std::filesystem::path out(o.out_dir);
  std::ofstream(out / "summary.json") << summaries.dump(2) << "\n";
  std::ofstream(out / "jobs.csv") << JobsCsv(all, with_moves);
  std::ofstream(out / "curves.csv") << CurvesCsv(all);
  const bool with_shares = !summaries.empty() && summaries.front().contains("shares");
  if (with_shares) std::ofstream(out / "shares.csv") << SharesCsv(all);
  std::ofstream(out / "report.html") << RenderTraceReport(title, note, all, summaries);
  for (const TracePlot& plot : TracePlots(all, summaries)) std::ofstream(out / (plot.file + ".svg")) << plot.svg;

  std::cout << title << ": " << note << "\n";
  std::cout << fmt::format("{:<16} {:>6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7} {:>6} {:>9} {:>9}\n", "policy", "jobs",
                           "waiting", "delay p50", "p95", "p99", "JCT p50", "alloc %", "frag %", "evict", "GPU-h lost",
                           "wall s");
  for (const nlohmann::json& s : summaries) {
    std::cout << fmt::format("{:<16} {:>6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8.1f} {:>7.1f} {:>6} {:>9.1f} {:>9.1f}\n",
                             s["policy"].get<std::string>(), s["jobs"].get<int64_t>(), s["queued_at_end"].get<int64_t>(),
                             s["delay_s"]["p50"].get<int64_t>(), s["delay_s"]["p95"].get<int64_t>(),
                             s["delay_s"]["p99"].get<int64_t>(), s["jct_s"]["p50"].get<int64_t>(),
                             s["alloc_pct"].get<double>(), s["frag_pct"].get<double>(), s["evictions"].get<int64_t>(),
                             s["lost_gpu_hours"].get<double>(), s["wall_s"].get<double>());
  }
  if (with_moves) {
    auto delay = [](const nlohmann::json& s, const std::string& size_class) {
      const nlohmann::json d = s["delay_by_class"].value(size_class, nlohmann::json::object());
      return d.empty() ? std::string("-")
                       : fmt::format("{}/{}/{}", d["p50"].get<int64_t>(), d["p95"].get<int64_t>(), d["p99"].get<int64_t>());
    };
    std::cout << fmt::format("\n{:<16} {:>20} {:>20} {:>9} {:>11} {:>11} {:>11}\n", "policy", "whole-node p50/95/99",
                             "gang p50/95/99", "moves/100", "preempt/100", "GPU-h moves", "GPU-h preempt");
    for (const nlohmann::json& s : summaries) {
      std::cout << fmt::format("{:<16} {:>20} {:>20} {:>9.2f} {:>11.2f} {:>11.1f} {:>11.1f}\n", s["policy"].get<std::string>(),
                               delay(s, "whole-node"), delay(s, "gang"), s["moves_per_100_jobs"].get<double>(),
                               s["preemptions_per_100_jobs"].get<double>(), s["lost_gpu_hours_moves"].get<double>(),
                               s["lost_gpu_hours_preemptions"].get<double>());
    }
  }
  if (with_shares) {
    std::cout << "\n";
    for (const nlohmann::json& s : summaries) {
      std::vector<std::string> reasons;
      for (const auto& [reason, n] : s["evictions_by_reason"].items()) reasons.push_back(StrCat(reason, " ", n.get<int64_t>()));
      std::cout << fmt::format("{}: evictions by reason: {}; running jobs interrupted: {}\n",
                               s["policy"].get<std::string>(), reasons.empty() ? std::string("none") : StrJoin(reasons, ", "),
                               s["interruptions"].get<int64_t>());
    }
    std::cout << fmt::format("GPUs held against entitlement while in demand (sampled every {} s):\n",
                             summaries.front()["shares"].begin()->at("step_s").get<int64_t>());
    std::cout << fmt::format("{:<20} {:<14} {:>8} {:>9} {:>10} {:>6} {:>10} {:>10} {:>10} {:>7} {:>9} {:>9} {:>6}\n", "policy",
                             "queue/cohort", "mean GPU", "entitled", "mean |dev|", "dev %", "off>10% s", "below>10% s",
                             "job fits s", "owed s", "arrive s", "to share", "evict");
    for (const nlohmann::json& s : summaries) {
      for (const char* kind : {"queue", "cohort"}) {
        for (const auto& [name, q] : s["shares"].items()) {
          if (q["kind"] != kind) continue;
          std::cout << fmt::format("{:<20} {:<14} {:>8.1f} {:>9.1f} {:>10.2f} {:>6.1f} {:>10} {:>10} {:>10} {:>7} {:>9} {:>9} {:>6}\n",
                                   s["policy"].get<std::string>(), name, q["mean_gpus"].get<double>(),
                                   q["mean_entitled_gpus"].get<double>(), q["mean_abs_dev_gpus"].get<double>(),
                                   q["mean_abs_dev_pct"].get<double>(), q["longest_off_10pct_s"].get<int64_t>(),
                                   q["longest_below_10pct_s"].get<int64_t>(), q["longest_waiting_job_fits_s"].get<int64_t>(),
                                   q["longest_room_owed_s"].get<int64_t>(), q["first_demand_s"].get<int64_t>(),
                                   q["time_to_share_s"].get<int64_t>(), q["evictions"].get<int64_t>());
        }
      }
    }
  }
  std::cout << "report: " << (std::filesystem::absolute(out) / "report.html").string() << "\n";
  return 0;
}

}  // namespace tessel::bench
