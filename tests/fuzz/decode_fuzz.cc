// libFuzzer target: the object decoders (scheduler/api/decode.h) on arbitrary JSON text, as the
// API server or a snapshot file could send it. The text goes to DecodeList, and, when it parses
// as JSON, to DecodePod, DecodeNode and DecodePriorityClass (each must answer with a value or an
// error, never throw). An error message must name the object it is about.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"
#include "scheduler/api/decode.h"

namespace {

template <typename T>
void CheckNamed(const absl::StatusOr<T>& decoded, std::string_view kind) {
  if (decoded.ok()) return;
  if (decoded.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
  // (Debian's Abseil has its own string_view: compare as std::string.)
  if (std::string(decoded.status().message()).find(kind) == std::string::npos) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)tessel::DecodeList(text);
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  CheckNamed(tessel::DecodePod(object), "Pod");
  CheckNamed(tessel::DecodeNode(object), "Node");
  CheckNamed(tessel::DecodePriorityClass(object), "PriorityClass");
  (void)tessel::DescribeObject(object);
  return 0;
}
