// The e2e report (see e2e_report.h).
#include "bench/e2e/e2e_report.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <string_view>

#include "bench/e2e/workload.h"
#include "fmt/format.h"

namespace tessel::bench::e2e {

using json = nlohmann::json;

json ToJson(const RunResult& r) {
  json j = {{"scheduler", r.scheduler},
            {"seconds", r.seconds},
            {"binds_per_s", r.binds_per_s()},
            {"bound", r.bound},
            {"pending", r.pending},
            {"gpus_idle", r.gpus_idle},
            {"whole_nodes", r.whole_nodes},
            {"overcommitted_nodes", r.overcommitted_nodes}};
  j["all_placeable_bound_s"] = r.all_placeable_s ? json(*r.all_placeable_s) : json(nullptr);
  j["peak_rss_mib"] = r.peak_rss_kib >= 0 ? json(r.peak_rss_kib / 1024) : json(nullptr);
  j["scheduler_cpu_s"] = r.cpu_s >= 0 ? json(r.cpu_s) : json(nullptr);
  return j;
}

void PrintTable(const Options& o, int64_t gpus_asked, int64_t placeable,
                const std::vector<RunResult>& runs) {
  std::cout << fmt::format(
      "{} nodes x {} GPUs, {} pods asking {} GPUs ({}%), {} placeable; client QPS {}, burst {}, "
      "seed {}\n",
      o.nodes, kGpusPerNode, o.pods, gpus_asked,
      gpus_asked * 100 / std::max<int64_t>(1, o.nodes * kGpusPerNode), placeable, o.qps,
      o.burst, o.seed);
  auto row = [&](std::string_view label, auto cell) {
    std::cout << fmt::format("{:<28}", label);
    for (const RunResult& r : runs) std::cout << fmt::format("{:>18}", cell(r));
    std::cout << "\n";
  };
  row("", [](const RunResult& r) { return r.scheduler; });
  row("binds/s", [](const RunResult& r) { return fmt::format("{:.1f}", r.binds_per_s()); });
  row("all placeable bound after", [](const RunResult& r) {
    return r.all_placeable_s ? fmt::format("{:.1f} s", *r.all_placeable_s) : std::string("never");
  });
  row("last bind after", [](const RunResult& r) { return fmt::format("{:.1f} s", r.seconds); });
  row("bound", [](const RunResult& r) { return std::to_string(r.bound); });
  row("pending", [](const RunResult& r) { return std::to_string(r.pending); });
  row("GPUs idle", [](const RunResult& r) { return std::to_string(r.gpus_idle); });
  row("whole nodes left", [](const RunResult& r) { return std::to_string(r.whole_nodes); });
  row("overcommitted nodes", [](const RunResult& r) { return std::to_string(r.overcommitted_nodes); });
  row("scheduler peak RSS", [](const RunResult& r) {
    return r.peak_rss_kib >= 0 ? fmt::format("{} MiB", r.peak_rss_kib / 1024) : std::string("-");
  });
  row("scheduler CPU", [](const RunResult& r) {
    return r.cpu_s >= 0 ? fmt::format("{:.1f} s", r.cpu_s) : std::string("-");
  });
  if (runs.size() > 1) {
    row("binds/s, tessel / this", [&](const RunResult& r) {
      return r.binds_per_s() > 0 ? fmt::format("{:.2f}x", runs[0].binds_per_s() / r.binds_per_s())
                                 : std::string("-");
    });
  }
}

}  // namespace tessel::bench::e2e
