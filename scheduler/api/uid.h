// Pod identity by UID, the one rule the cache, the queue, the core and the live cluster share:
// two records are the same pod when their UIDs are equal, or when either has none (objects
// built without one: tests, hand-written snapshots). A pod recreated under its name has a new
// UID, so it is another pod.
#pragma once

#include <string_view>

namespace tessel {

inline bool SameUid(std::string_view a, std::string_view b) { return a.empty() || b.empty() || a == b; }

}  // namespace tessel
