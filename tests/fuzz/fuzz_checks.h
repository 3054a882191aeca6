// What every decoder promises the fuzz targets (decode_fuzz.cc, custom_objects_fuzz.cc): an
// error is InvalidArgument and names the object it is about. A broken promise aborts, which
// libFuzzer reports as a crash with the input.
#pragma once

#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"

namespace tessel::fuzz {

// `object` as the decoders describe it (DescribeObject: its kind and name).
template <typename T>
void CheckNamed(const absl::StatusOr<T>& decoded, const std::string& object) {
  if (decoded.ok()) return;
  if (decoded.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
  // (Debian's Abseil has its own string_view: compare as std::string.)
  if (std::string(decoded.status().message()).find(object) == std::string::npos) std::abort();
}

}  // namespace tessel::fuzz
