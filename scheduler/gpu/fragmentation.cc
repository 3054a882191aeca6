// Fragmentation under a target workload (see fragmentation.h).
#include "scheduler/gpu/fragmentation.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace tessel::gpu {

int64_t NodeShape::idle() const {
  int64_t sum = 0;
  for (int32_t i = 0; i < n; ++i) sum += free[i];
  return sum;
}

NodeShape NodeShape::Of(const GpuDevices& gpus, int64_t cpu_free, int32_t model) {
  NodeShape s;
  s.model = model;
  s.cpu_free = cpu_free;
  s.n = std::min(gpus.count(), kMaxDevices);
  for (int32_t i = 0; i < s.n; ++i) s.free[i] = gpus.FreeMilli(i);
  return s;
}

NodeShape NodeShape::OfFree(std::span<const int64_t> free, int64_t cpu_free, int32_t model) {
  NodeShape s;
  s.model = model;
  s.cpu_free = cpu_free;
  s.n = static_cast<int32_t>(std::min<size_t>(free.size(), kMaxDevices));
  for (int32_t i = 0; i < s.n; ++i) s.free[i] = free[i];
  return s;
}

FragModel::FragModel(std::vector<TargetClass> classes) : classes_(std::move(classes)) {
  for (const TargetClass& c : classes_) {
    for (const std::string& m : c.models) {
      if (std::find(models_.begin(), models_.end(), m) == models_.end() && models_.size() < 64) {
        models_.push_back(m);
      }
    }
  }
  for (const TargetClass& c : classes_) {
    uint64_t mask = c.models.empty() ? ~uint64_t{0} : 0;
    for (const std::string& m : c.models) {
      int32_t id = ModelId(m);
      if (id >= 0) mask |= uint64_t{1} << id;
    }
    compiled_.push_back({c.cpu_milli, c.gpu_milli, c.num_gpu, mask, c.weight, c.node_gpus});
    total_weight_ += c.weight;
    if (c.num_gpu > 0 && c.node_gpus == 0) {
      ratio_cpu_ += static_cast<__int128>(c.weight) * c.cpu_milli;
      ratio_gpu_ += static_cast<__int128>(c.weight) * c.gpu_milli * c.num_gpu;
    }
  }
}

int32_t FragModel::ModelId(std::string_view product) const {
  for (size_t i = 0; i < models_.size(); ++i) {
    if (models_[i] == product) return static_cast<int32_t>(i);
  }
  return -1;
}

namespace {

// The idle milli of `node` that class `c` cannot use (`idle` is node.idle(), passed in so a
// caller looping over classes computes it once).
template <typename CompiledClass>
int64_t FragOfClass(const CompiledClass& c, const NodeShape& node, int64_t idle) {
  if (c.num_gpu == 0 || node.cpu_free < c.cpu) return idle;
  if (c.node_gpus > 0 && node.n != c.node_gpus) return idle;
  const bool allowed = c.model_mask == ~uint64_t{0} ||
                       (node.model >= 0 && (c.model_mask >> node.model & 1) != 0);
  if (!allowed) return idle;
  int32_t fitting = 0;
  int64_t stranded = 0;
  for (int32_t i = 0; i < node.n; ++i) {
    if (node.free[i] >= c.threshold) {
      ++fitting;
    } else {
      stranded += node.free[i];
    }
  }
  return fitting >= c.num_gpu ? stranded : idle;
}

}  // namespace

int64_t FragModel::ClassFrag(const NodeShape& node, size_t m) const {
  return FragOfClass(compiled_[m], node, node.idle());
}

int64_t FragModel::NodeFrag(const NodeShape& node) const {
  const int64_t idle = node.idle();
  if (idle == 0) return 0;
  int64_t total = 0;
  for (const Compiled& c : compiled_) total += c.weight * FragOfClass(c, node, idle);
  return total;
}

int64_t FragModel::CpuShortfall(const NodeShape& node) const {
  if (ratio_cpu_ <= 0 || ratio_gpu_ <= 0) return 0;
  const int64_t idle = node.idle();
  // The milli the free CPU pairs with: cpu_free / r = cpu_free * ratio_gpu_ / ratio_cpu_.
  // Free CPU beyond 2^40 milli (a billion cores) pairs with anything; the clamp keeps the
  // product within 128 bits.
  const int64_t cpu_free = std::clamp<int64_t>(node.cpu_free, 0, int64_t{1} << 40);
  const __int128 paired = static_cast<__int128>(cpu_free) * ratio_gpu_ / ratio_cpu_;
  return paired >= idle ? 0 : idle - static_cast<int64_t>(paired);
}

TargetClass ClassOfPod(const gpu::PodGpu& pod) {
  TargetClass c;
  c.cpu_milli = pod.cpu_milli;
  const GpuRequest& r = pod.request;
  if (r.kind == GpuRequest::Kind::kFraction) {
    c.num_gpu = 1;
    c.gpu_milli = r.milli;
  } else if (r.needs_devices()) {
    c.num_gpu = r.count;
    c.gpu_milli = kMilliPerGpu;
  }
  c.models = pod.models;
  return c;
}

FragModel WorkloadOfPods(const std::vector<const Pod*>& pods) {
  std::vector<TargetClass> classes;
  classes.reserve(pods.size());
  for (const Pod* pod : pods) classes.push_back(ClassOfPod(gpu::MakePodGpu(*pod)));
  return FragModel(TypicalClasses(classes, 100));
}

ClusterFragmentation MeasureFragmentation(const std::vector<GpuNode>& nodes, const FragModel& model) {
  ClusterFragmentation out;
  int64_t scaled = 0;
  for (const GpuNode& node : nodes) {
    const GpuDevices& gpus = *node.gpus;
    out.idle_milli += gpus.total_free_milli();
    scaled +=
        model.NodeFrag(NodeShape::Of(gpus, node.cpu_free, model.ModelId(gpus.inventory().product)));
  }
  out.fragmented_milli = model.total_weight() > 0 ? scaled / model.total_weight() : 0;
  return out;
}

GpuEquivalents SumGpuEquivalents(const std::vector<GpuNode>& nodes) {
  GpuEquivalents out;
  int64_t mig_capacity = 0, mig_allocated = 0;  // sevenths
  for (const GpuNode& node : nodes) {
    const GpuDevices& gpus = *node.gpus;
    out.devices += gpus.count();
    out.capacity_milli += gpus.inventory().capacity_milli();
    out.allocated_milli += gpus.total_allocated_milli();
    mig_capacity += gpus.inventory().mig_sevenths;
    mig_allocated += gpus.mig_allocated_sevenths();
  }
  out.capacity_milli += mig_capacity * kMilliPerGpu / kMigSlicesPerGpu;
  out.allocated_milli += mig_allocated * kMilliPerGpu / kMigSlicesPerGpu;
  return out;
}

std::vector<TargetClass> TypicalClasses(const std::vector<TargetClass>& pods, int64_t coverage_pct) {
  struct Entry {
    TargetClass cls;
    size_t first;
  };
  std::map<std::tuple<int64_t, int64_t, int32_t, std::vector<std::string>>, Entry> by_key;
  for (size_t i = 0; i < pods.size(); ++i) {
    const TargetClass& p = pods[i];
    auto key = std::make_tuple(p.cpu_milli, p.gpu_milli, p.num_gpu, p.models);
    auto [it, inserted] = by_key.try_emplace(key, Entry{p, i});
    if (inserted) {
      it->second.cls.weight = p.weight;
    } else {
      it->second.cls.weight += p.weight;
    }
  }
  std::vector<Entry> entries;
  int64_t total = 0;
  for (auto& [k, e] : by_key) {
    entries.push_back(e);
    total += e.cls.weight;
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.cls.weight != b.cls.weight) return a.cls.weight > b.cls.weight;
    return a.first < b.first;
  });
  std::vector<TargetClass> out;
  int64_t covered = 0;
  for (const Entry& e : entries) {
    if (covered * 100 >= coverage_pct * total) break;
    out.push_back(e.cls);
    covered += e.cls.weight;
  }
  return out;
}

}  // namespace tessel::gpu
