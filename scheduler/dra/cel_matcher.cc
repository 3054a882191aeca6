// CelDeviceMatcher: compile once per expression, evaluate many times.
#include "scheduler/dra/cel_matcher.h"

namespace tessel::dra {

std::shared_ptr<const absl::StatusOr<cel::Selector>> CelDeviceMatcher::Compiled(
    std::string_view expression) const {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = compiled_.find(expression); it != compiled_.end()) return it->second;
  }
  // Compile outside the lock; a second thread compiling the same text wastes work, not results.
  auto selector = std::make_shared<const absl::StatusOr<cel::Selector>>(cel::Selector::Compile(expression));
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = compiled_.emplace(std::string(expression), std::move(selector));
  return it->second;
}

absl::StatusOr<bool> CelDeviceMatcher::Matches(std::string_view expression, const DeviceView& device) const {
  std::shared_ptr<const absl::StatusOr<cel::Selector>> selector = Compiled(expression);
  if (!selector->ok()) return selector->status();
  return (*selector)->Matches(device);
}

}  // namespace tessel::dra
