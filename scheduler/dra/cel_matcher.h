// The product's DeviceMatcher: CEL selectors through dra/cel, each expression compiled once and
// kept (a cluster has a handful of classes, so a handful of expressions). Safe to share between
// threads that filter nodes in parallel.
//
//   CelDeviceMatcher matcher;
//   absl::StatusOr<bool> ok = matcher.Matches("device.driver == \"gpu.example.com\"", view);
#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/dra/cel/cel.h"
#include "scheduler/dra/device_matcher.h"

namespace tessel::dra {

class CelDeviceMatcher : public DeviceMatcher {
 public:
  absl::StatusOr<bool> Matches(std::string_view expression, const DeviceView& device) const override;

 private:
  // The compiled selector for the expression, or its compile error, compiled on first use.
  std::shared_ptr<const absl::StatusOr<cel::Selector>> Compiled(std::string_view expression) const;

  mutable absl::Mutex mu_;
  mutable std::map<std::string, std::shared_ptr<const absl::StatusOr<cel::Selector>>, std::less<>>
      compiled_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel::dra
