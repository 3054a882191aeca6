// Inputs of `tessel-bench trace` (see input.h).
#include "bench/trace/input.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string_view>

#include "fmt/format.h"
#include "scheduler/api/decode.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/quota/cohort.h"
#include "scheduler/quota/queue.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

// The trace's nodes, named in an order the seed shuffles ("0042-<sn>"): snapshot order, which
// breaks placement ties, differs by seed.
std::vector<Node> SeededNodes(const std::vector<TraceNode>& nodes, uint64_t seed) {
  std::vector<size_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 1);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<Node> out;
  out.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    out.push_back(MakeNode(nodes[i], fmt::format("{:04d}-{}", order[i], nodes[i].sn)));
  }
  return out;
}

int64_t LargestNodeGpus(const std::vector<Node>& nodes) {
  int64_t most = 0;
  for (const Node& n : nodes) most = std::max<int64_t>(most, gpu::ReadGpuInventory(n).count);
  return most;
}

}  // namespace

absl::StatusOr<OpenbTrace> OpenbTimeline(const std::vector<TraceNode>& nodes,
                                         const std::vector<TracePod>& pods, const OpenbOptions& o) {
  OpenbTrace out;
  out.input.nodes = SeededNodes(nodes, o.seed);
  int64_t first = INT64_MAX, last_arrival = 0, trace_end = 0;
  for (const TracePod& p : pods) {
    if (!p.creation_time) return absl::InvalidArgumentError(StrCat("pod ", p.name, ": no creation_time"));
    first = std::min(first, *p.creation_time);
    last_arrival = std::max(last_arrival, *p.creation_time);
    trace_end = std::max({trace_end, *p.creation_time, p.deletion_time.value_or(0)});
  }
  auto duration_of = [&](const TracePod& p) -> int64_t {
    const int64_t end = p.deletion_time.value_or(trace_end);
    return std::max<int64_t>(1, end - *p.scheduled_time);
  };
  const int32_t repeat = std::max(1, o.repeat);
  const double span = static_cast<double>(std::max<int64_t>(1, last_arrival - first));
  const double capacity = static_cast<double>(CapacityMilli(nodes));
  // The load a scale offers: the GPU work that falls within the arrival window (all passes) if
  // every pod ran from its arrival, over capacity x window; what a cluster without limits would
  // allocate on average while the pods arrive.
  auto offered = [&](double scale) {
    const double window = repeat * span / scale;
    double work = 0;
    for (int32_t pass = 0; pass < repeat; ++pass) {
      for (const TracePod& p : pods) {
        if (!p.scheduled_time) continue;
        const double at = (static_cast<double>(*p.creation_time - first) + pass * span) / scale;
        work += static_cast<double>(p.total_gpu_milli()) *
                std::min(static_cast<double>(duration_of(p)), window - at);
      }
    }
    return capacity > 0 ? work / (capacity * window) : 0.0;
  };
  out.time_scale = o.time_scale;
  constexpr double kMostScale = 1e7;
  if (o.load > 0 && offered(kMostScale) < o.load * 0.999) {
    return absl::InvalidArgumentError(fmt::format(
        "--load {}: out of reach with --repeat {}: compressing the arrivals offers at most {:.2f} (only the "
        "GPU work that falls within the arrival window counts); add passes with --repeat",
        o.load, repeat, offered(kMostScale)));
  }
  if (o.load > 0) {
    // offered() grows with the scale: bisect on a log scale.
    double lo = 1e-3, hi = kMostScale;
    for (int k = 0; k < 100; ++k) {
      const double mid = std::sqrt(lo * hi);
      (offered(mid) < o.load ? lo : hi) = mid;
    }
    out.time_scale = hi;
  }
  if (!(out.time_scale > 0)) return absl::InvalidArgumentError("--time-scale must be positive");
  out.offered_load = offered(out.time_scale);
  const int64_t largest = LargestNodeGpus(out.input.nodes);
  for (int32_t pass = 0; pass < repeat; ++pass) {
    for (const TracePod& p : pods) {
      if (!p.scheduled_time) {
        out.skipped += pass == 0;
        continue;
      }
      TraceJob j;
      j.id = pass == 0 ? p.name : StrCat(p.name, "-c", pass);
      const double at = (static_cast<double>(*p.creation_time - first) + pass * span) / out.time_scale;
      j.arrive = static_cast<int64_t>(std::llround(at));
      j.duration = duration_of(p);
      j.pods.push_back(MakePod(p, j.id));
      j.size_class = SizeClassOf(j, largest);
      out.input.jobs.push_back(std::move(j));
    }
  }
  std::stable_sort(out.input.jobs.begin(), out.input.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.arrive < b.arrive; });
  return out;
}

absl::StatusOr<SteadyTrace> SteadyTimeline(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                           const SteadyOptions& o) {
  if (!(o.load > 0)) return absl::InvalidArgumentError("steady state: the load must be positive");
  if (o.horizon <= 0 || o.warmup < 0 || o.warmup >= o.horizon) {
    return absl::InvalidArgumentError(fmt::format(
        "steady state: want 0 <= warm-up < horizon, got warm-up {} s and horizon {} s", o.warmup, o.horizon));
  }
  if (o.duration_cap <= 0) return absl::InvalidArgumentError("steady state: the duration cap must be positive");
  SteadyTrace out;
  out.input.nodes = SeededNodes(nodes, o.seed);
  int64_t trace_end = 0;
  for (const TracePod& p : pods) {
    trace_end = std::max({trace_end, p.creation_time.value_or(0), p.deletion_time.value_or(0)});
  }
  std::vector<const TracePod*> mix;
  std::vector<int64_t> duration;
  int64_t work = 0;  // sum of gpu_milli * capped duration over the mix (exact)
  for (const TracePod& p : pods) {
    if (!p.scheduled_time) continue;
    const int64_t d = std::max<int64_t>(1, p.deletion_time.value_or(trace_end) - *p.scheduled_time);
    out.capped += d > o.duration_cap;
    mix.push_back(&p);
    duration.push_back(std::min(d, o.duration_cap));
    work += p.total_gpu_milli() * duration.back();
  }
  const int64_t capacity = CapacityMilli(nodes);
  if (mix.empty() || work <= 0 || capacity <= 0) {
    return absl::InvalidArgumentError("steady state: the trace has no GPU work to draw from, or the cluster no GPUs");
  }
  int64_t total_duration = 0;
  for (int64_t d : duration) total_duration += d;
  out.mean_duration_s = static_cast<double>(total_duration) / static_cast<double>(mix.size());
  // rho = lambda * (work / |mix|) / capacity.
  out.rate_per_s = o.load * static_cast<double>(capacity) * static_cast<double>(mix.size()) / static_cast<double>(work);
  // A stream of its own (not the node order's), so the arrivals do not move when nodes change.
  std::mt19937_64 rng(o.seed * 0xD1B54A32D192ED03ull + 7);
  // Exponential gaps by inversion of a 53-bit uniform in (0, 1): the same on every platform with
  // IEEE doubles, unlike std::exponential_distribution whose algorithm the library chooses.
  auto uniform01 = [&rng] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };
  const int64_t largest = LargestNodeGpus(out.input.nodes);
  double t = 0;
  for (int64_t k = 0;; ++k) {
    t += -std::log(uniform01()) / out.rate_per_s;
    const int64_t at = static_cast<int64_t>(std::floor(t));
    if (at >= o.horizon) break;
    const size_t pick = static_cast<size_t>(rng() % mix.size());
    TraceJob j;
    j.id = fmt::format("{}-s{}", mix[pick]->name, k);
    j.arrive = at;
    j.duration = duration[pick];
    j.pods.push_back(MakePod(*mix[pick], j.id));
    j.size_class = SizeClassOf(j, largest);
    out.input.jobs.push_back(std::move(j));
  }
  out.input.window_from = o.warmup;
  out.input.window_to = o.horizon;
  return out;
}

namespace {

absl::StatusOr<int64_t> Seconds(const nlohmann::json& e, const char* field, const std::string& where,
                                bool required, int64_t fallback = 0) {
  if (!e.contains(field)) {
    if (required) return absl::InvalidArgumentError(StrCat(where, ": missing field \"", field, "\""));
    return fallback;
  }
  if (!e[field].is_number_integer() || e[field].get<int64_t>() < 0) {
    return absl::InvalidArgumentError(StrCat(where, ".", field, ": want a whole number of seconds >= 0, got ",
                                             e[field].dump()));
  }
  return e[field].get<int64_t>();
}

absl::StatusOr<Pod> PodOf(const nlohmann::json& object, const std::string& where) {
  absl::StatusOr<Pod> pod = DecodePod(object);
  if (!pod.ok()) return absl::InvalidArgumentError(StrCat(where, ": ", pod.status().message()));
  if (pod->scheduler_name.empty() || pod->scheduler_name == "default-scheduler") pod->scheduler_name = "tessel";
  pod->node_name.clear();
  return pod;
}

}  // namespace

absl::StatusOr<TimelineInput> ParseEventList(const nlohmann::json& doc) {
  if (!doc.is_object()) return absl::InvalidArgumentError("event list: want a JSON object");
  TimelineInput in;
  for (size_t i = 0; doc.contains("nodes") && i < doc["nodes"].size(); ++i) {
    absl::StatusOr<Node> n = DecodeNode(doc["nodes"][i]);
    if (!n.ok()) return absl::InvalidArgumentError(StrCat("nodes[", i, "]: ", n.status().message()));
    in.nodes.push_back(*std::move(n));
  }
  for (size_t i = 0; doc.contains("priorityClasses") && i < doc["priorityClasses"].size(); ++i) {
    absl::StatusOr<PriorityClass> pc = DecodePriorityClass(doc["priorityClasses"][i]);
    if (!pc.ok()) return absl::InvalidArgumentError(StrCat("priorityClasses[", i, "]: ", pc.status().message()));
    in.changes.push_back({.at = 0, .kind = ClusterChange::Kind::kPriorityClass, .priority = *std::move(pc)});
  }
  // Queues and Cohorts are decoded here, so that a bad one is refused naming it and the field
  // (the scheduler would hold its pods); later versions of a Queue do not move its namespaces.
  std::map<std::string, std::string> queue_of_namespace;
  auto quota_object = [&](const nlohmann::json& object, std::string_view kind,
                          const std::string& where) -> absl::Status {
    const bool named = object.is_object() && object.contains("kind") && object["kind"].is_string();
    if (!named || object["kind"].get<std::string>() != kind) {
      return absl::InvalidArgumentError(StrCat(where, ".kind: want ", kind, ", got ",
                                               named ? object["kind"].dump() : std::string("none")));
    }
    if (kind == kCohortKind) {
      if (absl::StatusOr<Cohort> c = DecodeCohort(object); !c.ok()) {
        return absl::InvalidArgumentError(StrCat(where, ": ", c.status().message()));
      }
    } else {
      absl::StatusOr<Queue> q = DecodeQueue(object);
      if (!q.ok()) return absl::InvalidArgumentError(StrCat(where, ": ", q.status().message()));
      for (const std::string& ns : q->namespaces) queue_of_namespace.emplace(ns, q->name());
    }
    return absl::OkStatus();
  };
  for (const char* list : {"queues", "cohorts"}) {
    const nlohmann::json objects = doc.value(list, nlohmann::json::array());
    if (!objects.is_array()) return absl::InvalidArgumentError(StrCat(list, ": want a list"));
    for (size_t i = 0; i < objects.size(); ++i) {
      const std::string_view kind = std::string_view(list) == "queues" ? kQueueKind : kCohortKind;
      if (absl::Status st = quota_object(objects[i], kind, StrCat(list, "[", i, "]")); !st.ok()) return st;
      in.changes.push_back({.at = 0, .kind = ClusterChange::Kind::kQuotaObject, .object = objects[i]});
    }
  }
  const int64_t largest = LargestNodeGpus(in.nodes);
  const nlohmann::json events = doc.value("events", nlohmann::json::array());
  if (!events.is_array()) return absl::InvalidArgumentError("events: want a list");
  for (size_t i = 0; i < events.size(); ++i) {
    const nlohmann::json& e = events[i];
    const std::string where = StrCat("events[", i, "]");
    absl::StatusOr<int64_t> at = Seconds(e, "at", where, true);
    if (!at.ok()) return at.status();
    if (e.contains("nodeAdd")) {
      absl::StatusOr<Node> n = DecodeNode(e["nodeAdd"]);
      if (!n.ok()) return absl::InvalidArgumentError(StrCat(where, ".nodeAdd: ", n.status().message()));
      in.changes.push_back({.at = *at, .kind = ClusterChange::Kind::kNodeAdd, .node = *std::move(n)});
    } else if (e.contains("nodeRemove")) {
      if (!e["nodeRemove"].is_string()) return absl::InvalidArgumentError(StrCat(where, ".nodeRemove: want a node name"));
      in.changes.push_back({.at = *at, .kind = ClusterChange::Kind::kNodeRemove, .name = e["nodeRemove"].get<std::string>()});
    } else if (e.contains("queue") || e.contains("cohort")) {
      const char* field = e.contains("queue") ? "queue" : "cohort";
      const std::string_view kind = e.contains("queue") ? kQueueKind : kCohortKind;
      if (absl::Status st = quota_object(e[field], kind, StrCat(where, ".", field)); !st.ok()) return st;
      in.changes.push_back({.at = *at, .kind = ClusterChange::Kind::kQuotaObject, .object = e[field]});
    } else if (e.contains("pod") || e.contains("podGroup")) {
      TraceJob j;
      j.arrive = *at;
      absl::StatusOr<int64_t> d = Seconds(e, "duration", where, true);
      if (!d.ok()) return d.status();
      if (*d <= 0) return absl::InvalidArgumentError(StrCat(where, ".duration: want at least 1 second"));
      j.duration = *d;
      if (e.contains("pod")) {
        absl::StatusOr<Pod> p = PodOf(e["pod"], StrCat(where, ".pod"));
        if (!p.ok()) return p.status();
        j.id = p->Key();
        j.pods.push_back(*std::move(p));
      } else {
        j.gang_object = e["podGroup"];
        j.id = StrCat(e["podGroup"].value("/metadata/namespace"_json_pointer, std::string("default")), "/",
                      e["podGroup"].value("/metadata/name"_json_pointer, std::string()));
        const nlohmann::json members = e.value("pods", nlohmann::json::array());
        if (!members.is_array() || members.empty()) {
          return absl::InvalidArgumentError(StrCat(where, ".pods: a podGroup event needs its member pods"));
        }
        for (size_t k = 0; k < members.size(); ++k) {
          absl::StatusOr<Pod> p = PodOf(members[k], StrCat(where, ".pods[", k, "]"));
          if (!p.ok()) return p.status();
          j.pods.push_back(*std::move(p));
        }
      }
      const auto queue = j.pods.front().meta.labels.find("tessel.io/queue");
      j.queue = queue != j.pods.front().meta.labels.end() ? queue->second : j.pods.front().meta.namespace_;
      j.size_class = SizeClassOf(j, largest);
      in.jobs.push_back(std::move(j));
    } else {
      return absl::InvalidArgumentError(
          StrCat(where, ": want one of pod, podGroup, nodeAdd, nodeRemove, queue, cohort"));
    }
  }
  // A job without the tessel.io/queue label charges the Queue that lists its namespace.
  for (TraceJob& j : in.jobs) {
    const bool labelled = j.pods.front().meta.labels.contains(std::string(kQueueLabel));
    if (auto it = queue_of_namespace.find(j.queue); !labelled && it != queue_of_namespace.end()) j.queue = it->second;
  }
  std::stable_sort(in.jobs.begin(), in.jobs.end(), [](const TraceJob& a, const TraceJob& b) { return a.arrive < b.arrive; });
  return in;
}

}  // namespace tessel::bench
