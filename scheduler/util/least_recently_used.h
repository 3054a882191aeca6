// Bounded caches keyed by strings (the decision cache's shapes and score columns, preemption's
// dry-run tables) drop their least recently used entry when full.
//
//   if (entries_.size() >= kMax) EraseLeastRecentlyUsed(entries_, [](const Entry& e) { return e.last_used; });
#pragma once

#include <algorithm>

namespace tessel {

// Erases the entry of `map` (values: pointers) whose stamp(*value) is the smallest, the first
// of them in the map's order when several tie; nothing when `map` is empty.
template <typename Map, typename Stamp>
void EraseLeastRecentlyUsed(Map& map, Stamp stamp) {
  if (map.empty()) return;
  map.erase(std::min_element(map.begin(), map.end(), [&](const auto& a, const auto& b) {
    return stamp(*a.second) < stamp(*b.second);
  }));
}

}  // namespace tessel
