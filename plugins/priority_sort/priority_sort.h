// PrioritySort (QueueSort): higher priority first, then older pods (creationTimestamp), then
// namespace/name, so that the order is total and repeatable.
#pragma once

#include "scheduler/framework/registry.h"

namespace tessel::priority_sort {

class PrioritySort final : public QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "PrioritySort";
  static absl::StatusOr<std::unique_ptr<PrioritySort>> New(Handle& handle);  // takes no args
  std::string_view Name() const override { return kName; }
  bool Less(const QueuedPodInfo& a, const QueuedPodInfo& b) const override;
};

}  // namespace tessel::priority_sort
