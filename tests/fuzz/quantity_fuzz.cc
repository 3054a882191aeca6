// libFuzzer target: the quantity parser (scheduler/api/quantity.h) on arbitrary text.
// Besides "no crash, no sanitizer report" it checks what must hold for every input:
//   - whole units and milli-units agree: Value == MilliValue / 1000 rounded away from zero;
//   - formatting a parsed milli-value and parsing it again gives the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "scheduler/api/quantity.h"

namespace {

// a / 1000 rounded away from zero, as ParseValue rounds.
int64_t MilliToValue(int64_t milli) {
  int64_t q = milli / 1000;
  if (milli % 1000 > 0) ++q;
  if (milli % 1000 < 0) --q;
  return q;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<int64_t> milli = tessel::ParseMilli(text);
  const absl::StatusOr<int64_t> value = tessel::ParseValue(text);
  // Every valid milli-value is also a valid whole value (a smaller number).
  if (milli.ok() && !value.ok()) std::abort();
  if (milli.ok() && *value != MilliToValue(*milli)) std::abort();
  if (milli.ok()) {
    const absl::StatusOr<int64_t> again = tessel::ParseMilli(tessel::FormatMilli(*milli));
    if (!again.ok() || *again != *milli) std::abort();
  }
  return 0;
}
