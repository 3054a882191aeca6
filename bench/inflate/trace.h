// `tessel-bench inflate`, trace loading: the openb CSV files (nodes and pods), the Node and Pod
// objects made from them, the paper's inflation of the pod list, and FGD's typical pods.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/api/objects.h"
#include "scheduler/gpu/fragmentation.h"

namespace tessel::bench {

struct TraceNode {
  std::string sn;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpus = 0;
  std::string model;
};

struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpu = 0;
  int64_t gpu_milli = 0;  // per GPU
  std::vector<std::string> gpu_spec;  // allowed models; empty = any
  // Seconds, where the file has the columns and the row a value (`tessel-bench trace`).
  std::optional<int64_t> creation_time, deletion_time, scheduled_time;
  int64_t total_gpu_milli() const { return num_gpu * gpu_milli; }
};

absl::StatusOr<std::vector<TraceNode>> LoadTraceNodes(const std::string& path);
absl::StatusOr<std::vector<TracePod>> LoadTracePods(const std::string& path);
// Same, from CSV text (tests).
absl::StatusOr<std::vector<TraceNode>> ParseTraceNodes(std::string_view csv);
absl::StatusOr<std::vector<TracePod>> ParseTracePods(std::string_view csv);

// The pod order of one run: sorted by name, shuffled with `seed`, then clones appended until
// the next clone's per-GPU milli would pass tune_milli/1000 x capacity (the paper's stop rule;
// clones add their full num_gpu x gpu_milli to the running total).
std::vector<TracePod> InflatePods(const std::vector<TracePod>& pods, int64_t capacity_milli,
                                  int64_t tune_milli, uint64_t seed);

// The trace's pod classes covering 95% of pods (FGD's "typical pods").
std::vector<gpu::TargetClass> TypicalPods(const std::vector<TracePod>& pods);

// The cluster's GPU capacity in milli.
int64_t CapacityMilli(const std::vector<TraceNode>& nodes);
// The Node and Pod a trace row becomes (GFD labels; a fraction's tessel.io/gpu-milli; gpu_spec
// as a required nodeAffinity on the GPU product).
Node MakeNode(const TraceNode& t, const std::string& name);
Pod MakePod(const TracePod& t, const std::string& name);

// A CSV without quoting (the openb files have none), as rows of fields, with a header index.
struct Csv {
  std::map<std::string, size_t, std::less<>> column;
  std::vector<std::vector<std::string>> rows;
};
absl::StatusOr<Csv> ParseCsv(std::string_view text, std::initializer_list<std::string_view> required);
// A non-negative decimal integer (up to 2^50); nullopt otherwise.
std::optional<int64_t> ToInt(std::string_view s);

}  // namespace tessel::bench
