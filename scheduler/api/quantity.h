// Exact Kubernetes resource quantities.
//
// Parses the whole quantity grammar of k8s.io/apimachinery (signed decimal numbers with an
// optional binary-SI suffix Ki..Ei, decimal-SI suffix n u m "" k M G T P E, or a decimal
// exponent e/E<int>) into int64 integers, with no floating point anywhere:
//
//   ParseMilli("100m")  -> 100        (CPU, GPU: milli-units)
//   ParseMilli("1.5")   -> 1500
//   ParseValue("1.5Gi") -> 1610612736 (memory, storage: bytes)
//   ParseValue("ten")   -> InvalidArgument: quantity "ten" ...
//
// Results that are not whole are rounded up (away from zero), as Kubernetes' MilliValue() and
// Value() do. Results outside int64 are an OutOfRange error (text that is not a quantity is
// InvalidArgument); the *Saturating parsers clamp them to int64's range instead:
//
//   ParseMilliSaturating("100E") -> INT64_MAX   (a node's capacity, a bound pod's charge)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tessel {

// The quantity in thousandths of its unit ("250m" -> 250, "2" -> 2000).
absl::StatusOr<int64_t> ParseMilli(std::string_view text);

// The quantity in whole units ("1Ki" -> 1024, "1.5" -> 2).
absl::StatusOr<int64_t> ParseValue(std::string_view text);

// As ParseMilli / ParseValue, but a well-formed quantity beyond int64 is INT64_MAX (INT64_MIN
// when negative) instead of an error. For amounts where "more than can be counted" keeps its
// meaning: what a node offers, what a bound pod holds, a limit.
absl::StatusOr<int64_t> ParseMilliSaturating(std::string_view text);
absl::StatusOr<int64_t> ParseValueSaturating(std::string_view text);

// Formats milli-units the way kubectl would show them: "1500m" -> "1500m", "2000" -> "2".
std::string FormatMilli(int64_t milli);

}  // namespace tessel
