// Configured or learned target workload (see target_workload.h).
#include "plugins/fgd/target_workload.h"

#include <algorithm>
#include <vector>

#include "scheduler/framework/plugin_util.h"

namespace tessel::fgd {

absl::StatusOr<TargetWorkload> TargetWorkload::FromArgs(
    const YAML::Node& args, std::initializer_list<std::string_view> extra_keys) {
  ArgsReader reader(args);
  std::vector<std::string_view> keys = {"targetWorkload", "learnHalfLife", "coveragePercent"};
  keys.insert(keys.end(), extra_keys.begin(), extra_keys.end());
  if (absl::Status st = reader.OnlyKeys(keys); !st.ok()) return st;
  TargetWorkload w;
  auto classes = ParseTargetWorkload(reader.Child("targetWorkload"));
  if (!classes.ok()) return classes.status();
  auto half_life = reader.Int("learnHalfLife", 2000, 1, int64_t{1} << 40);
  if (!half_life.ok()) return half_life.status();
  auto coverage = reader.Int("coveragePercent", 95, 1, 100);
  if (!coverage.ok()) return coverage.status();
  w.half_life_ = *half_life;
  w.coverage_pct_ = *coverage;
  w.learning_ = classes->empty();
  w.model_ = FragModel(*std::move(classes));
  return w;
}

TargetClass TargetWorkload::ClassOf(const gpu::PodGpu& pod) {
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

bool TargetWorkload::Observe(const gpu::PodGpu& pod) {
  if (!learning_) return false;
  TargetClass c = ClassOf(pod);
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
  if (observed_ > 32 && observed_ % 32 != 0) return false;
  std::vector<TargetClass> seen;
  for (const auto& [k, v] : counts_) {
    seen.push_back(TargetClass{.cpu_milli = std::get<0>(k), .gpu_milli = std::get<1>(k),
                               .num_gpu = std::get<2>(k), .models = std::get<3>(k),
                               .weight = v.first});
  }
  model_ = FragModel(TypicalClasses(seen, coverage_pct_));
  ++version_;
  return true;
}

}  // namespace tessel::fgd
