#include "plugins/priority_sort/priority_sort.h"

namespace tessel::priority_sort {

absl::StatusOr<std::unique_ptr<PrioritySort>> PrioritySort::New(Handle&) {
  return std::make_unique<PrioritySort>();
}

bool PrioritySort::Less(const QueuedPodInfo& a, const QueuedPodInfo& b) const {
  const Pod& x = *a.pod;
  const Pod& y = *b.pod;
  if (x.PriorityValue() != y.PriorityValue()) return x.PriorityValue() > y.PriorityValue();
  if (x.meta.creation_timestamp != y.meta.creation_timestamp) {
    return x.meta.creation_timestamp < y.meta.creation_timestamp;
  }
  if (x.meta.namespace_ != y.meta.namespace_) return x.meta.namespace_ < y.meta.namespace_;
  return x.meta.name < y.meta.name;
}

}  // namespace tessel::priority_sort
