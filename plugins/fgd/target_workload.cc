// Configured or learned target workload (see target_workload.h).
#include "plugins/fgd/target_workload.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"

namespace tessel::fgd {

namespace {

// targetWorkload: [{cpuMilli, gpuMilli, numGpu, models: [..], weight}, ...].
absl::StatusOr<std::vector<gpu::TargetClass>> ParseTargetClasses(const ArgsReader& reader) {
  constexpr std::string_view kKey = "targetWorkload";
  std::vector<gpu::TargetClass> out;
  const YAML::Node list = reader.Child(kKey);
  if (!list || list.IsNull()) return out;
  if (!list.IsSequence()) return reader.Error(kKey, "want a list");
  // The weights' sum W scales every fragmentation figure (F_n and the CPU shortfall, up to
  // 100 x W x 32,000 milli): bounded so that they stay within 64 bits.
  constexpr int64_t kMaxTotalWeight = int64_t{1} << 40;
  int64_t total_weight = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    ArgsReader item = reader.Item(kKey, i);
    RETURN_IF_ERROR(item.OnlyKeys({"cpuMilli", "gpuMilli", "numGpu", "models", "weight"}));
    ASSIGN_OR_RETURN(const int64_t cpu, item.Int("cpuMilli", 0, 0, int64_t{1} << 40));
    ASSIGN_OR_RETURN(const int64_t gpu, item.Int("gpuMilli", 0, 0, 1000));
    ASSIGN_OR_RETURN(const int64_t num, item.Int("numGpu", 0, 0, 1024));
    ASSIGN_OR_RETURN(const int64_t weight, item.Int("weight", 1, 1, kMaxTotalWeight));
    total_weight += weight;
    if (total_weight > kMaxTotalWeight) {
      return item.Error("weight", StrCat("the weights of targetWorkload[0..", i, "] sum to ", total_weight,
                                         ", more than ", kMaxTotalWeight));
    }
    if ((num == 0) != (gpu == 0) || (num > 1 && gpu != 1000)) {
      return item.Error("", "gpuMilli and numGpu disagree (want numGpu 0 with gpuMilli 0, 1 with 1..1000, "
                            "or >1 with 1000)");
    }
    gpu::TargetClass c{.cpu_milli = cpu, .gpu_milli = gpu, .num_gpu = static_cast<int32_t>(num),
                  .models = {}, .weight = weight};
    ASSIGN_OR_RETURN(c.models, item.StringList("models"));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

absl::StatusOr<TargetWorkloadArgs> ParseTargetWorkloadArgs(const ArgsReader& reader) {
  TargetWorkloadArgs args;
  ASSIGN_OR_RETURN(args.classes, ParseTargetClasses(reader));
  ASSIGN_OR_RETURN(args.learn_half_life, reader.Int("learnHalfLife", args.learn_half_life, 1, int64_t{1} << 40));
  ASSIGN_OR_RETURN(args.coverage_percent, reader.Int("coveragePercent", args.coverage_percent, 1, 100));
  ASSIGN_OR_RETURN(args.whole_node_prior, reader.Bool("wholeNodePrior", args.whole_node_prior));
  return args;
}

TargetWorkload::TargetWorkload(const TargetWorkloadArgs& args)
    : model_(args.classes),
      learning_(args.classes.empty()),
      whole_node_prior_(args.whole_node_prior),
      half_life_(args.learn_half_life),
      coverage_pct_(args.coverage_percent) {}

gpu::TargetClass TargetWorkload::ClassOf(const gpu::PodGpu& pod) { return gpu::ClassOfPod(pod); }

std::string TargetWorkload::PodId(const Pod& pod) {
  return pod.meta.uid.empty() ? pod.Key() : pod.meta.uid;
}

bool TargetWorkload::Remember(std::string_view pod_id) {
  constexpr size_t kRemembered = size_t{1} << 16;
  if (!seen_ids_.emplace(pod_id).second) return false;
  seen_order_.emplace_back(pod_id);
  if (seen_order_.size() > kRemembered) {
    seen_ids_.erase(seen_order_.front());
    seen_order_.pop_front();
  }
  return true;
}

int64_t TargetWorkload::CountOf(const gpu::TargetClass& c) const {
  auto it = counts_.find(std::make_tuple(c.cpu_milli, c.gpu_milli, c.num_gpu, c.models));
  return it == counts_.end() ? 0 : it->second.first;
}

bool TargetWorkload::SetNodeSizes(std::vector<int32_t> sizes) {
  if (!learning_) return false;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::erase_if(sizes, [](int32_t g) { return g <= 0; });
  if (sizes == node_sizes_) return false;
  node_sizes_ = std::move(sizes);
  if (!whole_node_prior_) return false;
  Rebuild();
  return true;
}

bool TargetWorkload::Observe(const gpu::PodGpu& pod, std::string_view pod_id) {
  return learning_ && ObserveClass(ClassOf(pod), pod_id);
}

bool TargetWorkload::ObserveClass(const gpu::TargetClass& c, std::string_view pod_id) {
  if (!learning_ || !Remember(pod_id)) return false;
  auto key = std::make_tuple(c.cpu_milli, c.gpu_milli, c.num_gpu, c.models);
  auto [it, inserted] = counts_.try_emplace(key, 0, observed_);
  it->second.first += 2;  // counts are kept doubled so that halving keeps a trace of single pods
  ++observed_;
  if (observed_ % half_life_ == 0) {
    for (auto i = counts_.begin(); i != counts_.end();) {
      i->second.first /= 2;
      i = i->second.first == 0 ? counts_.erase(i) : std::next(i);
    }
  }
  if (!IsLook(observed_, inserted)) return false;
  std::vector<gpu::TargetClass> learned = LearnedClasses();
  if (!MateriallyDifferent(learned, learned_)) return false;
  Adopt(std::move(learned));
  return true;
}

bool TargetWorkload::IsLook(int64_t observed, bool new_class) {
  if (observed > kEarlyLooks) return observed % kEarlyLooks == 0;
  return new_class || std::has_single_bit(static_cast<uint64_t>(observed));
}

bool TargetWorkload::MateriallyDifferent(const std::vector<gpu::TargetClass>& now,
                                         const std::vector<gpu::TargetClass>& adopted) {
  if (now.size() != adopted.size()) return true;
  auto key = [](const gpu::TargetClass& c) { return std::tie(c.cpu_milli, c.gpu_milli, c.num_gpu, c.models); };
  std::vector<const gpu::TargetClass*> a, b;
  for (const gpu::TargetClass& c : now) a.push_back(&c);
  for (const gpu::TargetClass& c : adopted) b.push_back(&c);
  auto by_key = [&](const gpu::TargetClass* x, const gpu::TargetClass* y) { return key(*x) < key(*y); };
  std::sort(a.begin(), a.end(), by_key);
  std::sort(b.begin(), b.end(), by_key);
  using i128 = __int128;
  i128 total_a = 0, total_b = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (key(*a[i]) != key(*b[i])) return true;
    total_a += a[i]->weight;
    total_b += b[i]->weight;
  }
  if (total_a <= 0 || total_b <= 0) return total_a != total_b;
  // share_a - share_b = (w_a * T_b - w_b * T_a) / (T_a * T_b), compared with 1/kMaterialShareDen.
  for (size_t i = 0; i < a.size(); ++i) {
    i128 diff = i128{a[i]->weight} * total_b - i128{b[i]->weight} * total_a;
    if (diff < 0) diff = -diff;
    if (diff * kMaterialShareDen > total_a * total_b) return true;
  }
  return false;
}

std::vector<gpu::TargetClass> TargetWorkload::LearnedClasses() const {
  // Classes in first-seen order, so that TypicalClasses breaks count ties by first sight.
  std::vector<std::pair<int64_t, gpu::TargetClass>> seen;
  for (const auto& [k, v] : counts_) {
    seen.emplace_back(v.second, gpu::TargetClass{.cpu_milli = std::get<0>(k), .gpu_milli = std::get<1>(k),
                                            .num_gpu = std::get<2>(k), .models = std::get<3>(k),
                                            .weight = v.first});
  }
  std::sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<gpu::TargetClass> classes;
  for (auto& [first, c] : seen) classes.push_back(std::move(c));
  return gpu::TypicalClasses(classes, coverage_pct_);
}

void TargetWorkload::Rebuild() { Adopt(LearnedClasses()); }

void TargetWorkload::Adopt(std::vector<gpu::TargetClass> classes) {
  learned_ = classes;
  int64_t learned = 0;
  for (const gpu::TargetClass& c : classes) learned += c.weight;
  if (whole_node_prior_) {
    for (int32_t g : node_sizes_) {
      classes.push_back(gpu::TargetClass{.cpu_milli = 0, .gpu_milli = gpu::kMilliPerGpu, .num_gpu = g,
                                    .models = {}, .weight = std::max<int64_t>(learned, 1),
                                    .node_gpus = g});
    }
  }
  model_ = gpu::FragModel(std::move(classes));
  ++version_;
}

}  // namespace tessel::fgd
