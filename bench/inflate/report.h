// The self-contained HTML report of `tessel-bench inflate`: a summary table and inline SVG plots
// (GPU allocation vs arrived workload, fragmentation vs arrived workload), one line per policy,
// with the published reference dashed where it exists. No scripts, no external files.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/inflate/inflate.h"

namespace tessel::bench {

struct Series {
  std::string policy;
  Curve curve;
  std::vector<std::pair<int, double>> ref_alloc;  // published (arrived %, alloc %)
  std::vector<std::pair<int, double>> ref_frag;   // published (arrived %, frag % of capacity)
};

struct ReportInput {
  std::string workload;
  std::vector<uint64_t> seeds;
  int64_t tune_milli = 0;
  double seconds = 0;
  int64_t nodes = 0;
  int64_t capacity_milli = 0;
  int64_t pods = 0;
  int64_t pods_per_run = 0;
  std::vector<Series> series;
};

std::string RenderReport(const ReportInput& input);

}  // namespace tessel::bench
