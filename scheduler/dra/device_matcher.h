// How the allocator asks whether a device matches a CEL selector. The product answers through
// dra/cel (cel_matcher.h, one compiled program per expression); tests answer with a small fake.
// An error (an expression outside the supported subset, a run-time failure such as a missing
// attribute) stops the allocation: the allocator adds the class or claim and the selector.
//
//   class EveryDevice : public DeviceMatcher {
//     absl::StatusOr<bool> Matches(std::string_view, const DeviceView&) const override { return true; }
//   };
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/dra/device_view.h"

namespace tessel::dra {

class DeviceMatcher {
 public:
  virtual ~DeviceMatcher() = default;
  virtual absl::StatusOr<bool> Matches(std::string_view expression, const DeviceView& device) const = 0;
};

}  // namespace tessel::dra
