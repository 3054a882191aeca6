// How many seeds a seeded property runs. Under AddressSanitizer and UndefinedBehaviorSanitizer
// (tools/dev test's second build, at -O0) the tests run 30-70 times slower than optimised: there
// a property runs an eighth of its seeds, which still drives every path it reaches while the
// sanitizers watch. The whole family, and the figures that prove its reach, are checked in the
// optimised build.
#pragma once

#include <cstdint>

namespace tessel::testing {

#ifdef TESSEL_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

constexpr uint64_t PropertySeeds(uint64_t full) { return kSanitized ? (full + 7) / 8 : full; }

}  // namespace tessel::testing
