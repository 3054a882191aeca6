// Curves from runs (see aggregate.h).
#include "bench/inflate/aggregate.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessel::bench {

int RoundPct(int64_t num, int64_t den) {
  const __int128 n = static_cast<__int128>(num) * 100;
  int64_t q = static_cast<int64_t>(n / den);
  const __int128 r2 = (n % den) * 2;
  if (r2 > den || (r2 == den && (q % 2) != 0)) ++q;
  return static_cast<int>(q);
}

Curve Aggregate(const std::vector<const RunResult*>& runs, int64_t capacity, int64_t total_weight) {
  constexpr int kMax = 130;
  Curve c;
  c.runs = static_cast<int>(runs.size());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  c.alloc_pct.assign(kMax + 1, nan);
  c.alloc_pct_sd.assign(kMax + 1, nan);
  c.frag_amount_pct.assign(kMax + 1, nan);
  c.frag_rate_pct.assign(kMax + 1, nan);
  // Per run: mean at each integer arrived %, then the mean (and SD) over runs.
  std::vector<std::vector<double>> alloc(kMax + 1), amount(kMax + 1), rate(kMax + 1);
  const double w = static_cast<double>(std::max<int64_t>(total_weight, 1));
  for (const RunResult* run : runs) {
    std::vector<double> sa(kMax + 1, 0), sf(kMax + 1, 0), sr(kMax + 1, 0);
    std::vector<int> n(kMax + 1, 0), nr(kMax + 1, 0);
    std::vector<double> exact;
    exact.reserve(run->events.size());
    for (const Event& e : run->events) {
      exact.push_back(static_cast<double>(e.arrived_milli) * 100.0 / static_cast<double>(capacity));
    }
    auto add = [&](int b, const Event& e) {
      const double a = std::round(static_cast<double>(e.allocated_milli) * 10000.0 / static_cast<double>(capacity)) / 100.0;
      const double frag = static_cast<double>(e.frag_scaled) / w;
      const double idle = static_cast<double>(capacity - e.allocated_milli);
      sa[b] += a;
      sf[b] += frag * 100.0 / static_cast<double>(capacity);
      if (idle > 0) {
        sr[b] += frag * 100.0 / idle;
        ++nr[b];
      }
      ++n[b];
    };
    for (const Event& e : run->events) {
      const int b = RoundPct(e.arrived_milli, capacity);
      if (b >= 0 && b <= kMax) add(b, e);
    }
    for (int b = 0; b <= kMax; ++b) {
      if (n[b] > 0) continue;
      for (size_t k = 0; k < run->events.size(); ++k) {
        if (std::abs(exact[k] - b) <= 1.0) add(b, run->events[k]);
      }
    }
    for (int b = 0; b <= kMax; ++b) {
      if (n[b] == 0) continue;
      alloc[b].push_back(sa[b] / n[b]);
      amount[b].push_back(sf[b] / n[b]);
      if (nr[b] > 0) rate[b].push_back(sr[b] / nr[b]);
    }
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  for (int b = 0; b <= kMax; ++b) {
    if (alloc[b].empty()) continue;
    c.alloc_pct[b] = mean(alloc[b]);
    double var = 0;
    for (double x : alloc[b]) var += (x - c.alloc_pct[b]) * (x - c.alloc_pct[b]);
    c.alloc_pct_sd[b] = std::sqrt(var / static_cast<double>(alloc[b].size()));
    c.frag_amount_pct[b] = mean(amount[b]);
    if (!rate[b].empty()) c.frag_rate_pct[b] = mean(rate[b]);
  }
  return c;
}

}  // namespace tessel::bench
