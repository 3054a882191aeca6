// Sums and differences of int64 quantities that stop at int64's ends instead of wrapping:
// quotas and capacities may be "unlimited" (the largest int64), and unlimited plus or minus a
// finite amount stays unlimited.
#pragma once

#include <cstdint>
#include <limits>

namespace tessel {

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return out;
}

inline int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out)) {
    return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return out;
}

}  // namespace tessel
