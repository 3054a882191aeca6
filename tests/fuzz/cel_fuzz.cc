// libFuzzer target: DRA's CEL selectors (scheduler/dra/cel/cel.h) on arbitrary expression text.
// Compile must answer with a selector or an InvalidArgument error that starts with the position
// ("line:column: "); a compiled selector must answer Matches() with true, false or an
// InvalidArgument error, on a device with attributes of every type and on an empty device,
// within the cost limit (a slow input is a libFuzzer timeout).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "scheduler/dra/cel/cel.h"

namespace {

bool StartsWithPosition(std::string_view message) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < message.size() && message[i] >= '0' && message[i] <= '9') ++i;
    return i > start;
  };
  if (!digits() || i >= message.size() || message[i++] != ':') return false;
  return digits() && message.substr(i, 2) == ": ";
}

void CheckMatch(const absl::StatusOr<bool>& match) {
  if (!match.ok() && match.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tessel::dra::cel::Selector> selector = tessel::dra::cel::Selector::Compile(text);
  if (!selector.ok()) {
    if (selector.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    if (!StartsWithPosition(std::string(selector.status().message()))) std::abort();
    return 0;
  }
  static const tessel::dra::DomainMap<tessel::dra::AttributeValue> kAttributes{
      {"gpu.example.com",
       {{"model", std::string("LATEST-GPU-MODEL")},
        {"index", int64_t{9223372036854775807}},
        {"mig", true},
        {"driverVersion", tessel::dra::SemVer{"1.2.3-rc.1+build"}}}},
      {"dra.example.com", {{"name", std::string("fish")}, {"count", int64_t{-1}}}}};
  static const tessel::dra::DomainMap<std::string> kCapacity{
      {"gpu.example.com", {{"memory", "80Gi"}, {"cores", "1500m"}, {"huge", "123456789012345678901234567890123456789e40"}}}};
  CheckMatch(selector->Matches(tessel::dra::DeviceView{
      .driver = "gpu.example.com", .attributes = &kAttributes, .capacity = &kCapacity,
      .allow_multiple_allocations = true}));
  CheckMatch(selector->Matches(tessel::dra::DeviceView{.driver = "", .attributes = nullptr, .capacity = nullptr}));
  return 0;
}
