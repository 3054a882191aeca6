// Trace loading for `tessel-bench inflate` (see trace.h).
#include "bench/inflate/trace.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_split.h"
#include "scheduler/api/quantity.h"
#include "scheduler/gpu/gpu_devices.h"
#include "scheduler/testing/builders.h"
#include "scheduler/util/file.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {

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
  for (const TraceNode& n : nodes) total += int64_t{n.gpus} * gpu::kMilliPerGpu;
  return total;
}

Node MakeNode(const TraceNode& t, const std::string& name) {
  testing::NodeBuilder n(name);
  n.Cpu(t.cpu_milli).Memory(t.memory_mib * 1024 * 1024).MaxPods(1001).CapacityIsAllocatable();
  if (t.gpus > 0) n.Gpus(t.gpus).GpuCount(t.gpus).GpuProduct(t.model);
  return n.Build();
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
    c.requests.Set(kNvidiaGpu, int64_t{t.num_gpu} * gpu::kMilliPerGpu);
    if (t.gpu_milli < gpu::kMilliPerGpu) p.meta.annotations[std::string(gpu::kGpuMilliAnnotation)] = StrCat(t.gpu_milli);
  }
  p.containers.push_back(std::move(c));
  if (!t.gpu_spec.empty()) {
    NodeSelectorTerm term;
    term.match_expressions.push_back({.key = std::string(gpu::kGpuProductLabel),
                                      .op = NodeSelectorRequirement::Operator::kIn,
                                      .values = t.gpu_spec});
    p.node_affinity.required = std::vector<NodeSelectorTerm>{std::move(term)};
  }
  p.requests = *ComputePodRequests(p);
  return p;
}

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
    if (!cpu || !mem || !num || !milli || *milli > gpu::kMilliPerGpu || *num > 1024 ||
        (*num > 1 && *milli != gpu::kMilliPerGpu) || ((*num == 0) != (*milli == 0))) {
      return absl::InvalidArgumentError(StrCat("pod ", p.name, ": bad cpu_milli, memory_mib, num_gpu or gpu_milli"));
    }
    p.cpu_milli = *cpu;
    p.memory_mib = *mem;
    p.num_gpu = static_cast<int32_t>(*num);
    p.gpu_milli = *milli;
    if (has_spec && !row[csv->column["gpu_spec"]].empty()) {
      p.gpu_spec = absl::StrSplit(row[csv->column["gpu_spec"]], '|');
    }
    for (auto [column, field] : {std::pair{"creation_time", &p.creation_time},
                                 std::pair{"deletion_time", &p.deletion_time},
                                 std::pair{"scheduled_time", &p.scheduled_time}}) {
      auto it = csv->column.find(column);
      if (it == csv->column.end() || row[it->second].empty()) continue;
      *field = ToInt(row[it->second]);
      if (!*field) return absl::InvalidArgumentError(StrCat("pod ", p.name, ": bad ", column));
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

std::vector<gpu::TargetClass> TypicalPods(const std::vector<TracePod>& pods) {
  std::vector<gpu::TargetClass> all;
  all.reserve(pods.size());
  for (const TracePod& p : pods) {
    all.push_back({.cpu_milli = p.cpu_milli, .gpu_milli = p.gpu_milli, .num_gpu = p.num_gpu,
                   .models = p.gpu_spec, .weight = 1});
  }
  return gpu::TypicalClasses(all, 95);
}

}  // namespace tessel::bench
