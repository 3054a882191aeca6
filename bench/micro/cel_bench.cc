// Micro-benchmarks of DRA's CEL device selectors (scheduler/dra/cel): one Matches() per device,
// as the allocator runs it for every candidate device of every request, over the public selector
// shapes (driver and attribute equality, a capacity against a quantity, a version comparison, a
// regular expression). Prints figures; asserts nothing.
//
//   build/bin/tessel-microbench --benchmark_filter=Cel
#include <benchmark/benchmark.h>

#include "scheduler/dra/cel/cel.h"

namespace tessel::bench {
namespace {

struct NvidiaGpu {
  dra::DomainMap<dra::AttributeValue> attributes{
      {"gpu.nvidia.com",
       {{"type", std::string("gpu")},
        {"productName", std::string("NVIDIA A100-SXM4-40GB")},
        {"index", int64_t{3}},
        {"driverVersion", dra::SemVer{"550.54.15"}},
        {"cudaComputeCapability", dra::SemVer{"8.0.0"}},
        {"uuid", std::string("GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c")}}}};
  dra::DomainMap<std::string> capacity{{"gpu.nvidia.com", {{"memory", "40Gi"}}}};
  dra::DeviceView view() const {
    return dra::DeviceView{.driver = "gpu.nvidia.com", .attributes = &attributes, .capacity = &capacity};
  }
};

void RunSelector(benchmark::State& state, const char* expression) {
  NvidiaGpu gpu;
  absl::StatusOr<dra::cel::Selector> selector = dra::cel::Selector::Compile(expression);
  if (!selector.ok()) {
    state.SkipWithError(std::string(selector.status().message()).c_str());
    return;
  }
  const dra::DeviceView view = gpu.view();
  for (auto _ : state) benchmark::DoNotOptimize(selector->Matches(view));
}

void BM_CelDriverAndType(benchmark::State& state) {
  RunSelector(state, "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'");
}
void BM_CelCapacity(benchmark::State& state) {
  RunSelector(state, "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0");
}
void BM_CelVersion(benchmark::State& state) {
  RunSelector(state, "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))");
}
void BM_CelRegex(benchmark::State& state) {
  RunSelector(state, "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('a100')");
}
void BM_CelCompile(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(dra::cel::Selector::Compile(
        "device.driver == 'gpu.nvidia.com' && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"));
  }
}
BENCHMARK(BM_CelDriverAndType);
BENCHMARK(BM_CelCapacity);
BENCHMARK(BM_CelVersion);
BENCHMARK(BM_CelRegex);
BENCHMARK(BM_CelCompile);

}  // namespace
}  // namespace tessel::bench
