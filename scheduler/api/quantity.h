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
// Value() do. Results outside int64 are an error.
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

// Formats milli-units the way kubectl would show them: "1500m" -> "1500m", "2000" -> "2".
std::string FormatMilli(int64_t milli);

}  // namespace tessel
