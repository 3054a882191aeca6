// `tessel-bench inflate`, aggregation: the runs of one policy averaged into curves over the
// arrived workload (0..130 %), as docs/gpu.md describes.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/inflate/run.h"

namespace tessel::bench {

// Per-policy curves at arrived = 0..130 %, averaged over runs (see docs/gpu.md).
struct Curve {
  std::vector<double> alloc_pct;        // index = arrived %, NaN where no run has data
  std::vector<double> alloc_pct_sd;
  std::vector<double> frag_amount_pct;  // of capacity
  std::vector<double> frag_rate_pct;    // of idle GPU
  int runs = 0;
};
Curve Aggregate(const std::vector<const RunResult*>& runs, int64_t capacity_milli,
                int64_t total_weight);

// Half-to-even rounding of num * 100 / den to an integer percent.
int RoundPct(int64_t num, int64_t den);

}  // namespace tessel::bench
